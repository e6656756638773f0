#!/usr/bin/env bash
# The H200 reports of the selection and irregular-matrix issues: on the GPU node, from a checkout
# with .whl/ beside it (bash ../shared/gpu-node/fetch-wheels.sh tqdm), see reports/README.md.
#
#   bash reports/h200-selection.sh OUTDIR PART...
#
# PART is one of
#   calibrate   clspmv calibrate --force on the H200; the calibration file is copied to OUTDIR
#               (start later commands with CLSPMV_CACHE_DIR pointing at a folder holding it to
#               reuse it: the parts below calibrate first when there is none)
#   irregular   suite irregular, every format and auto's selection, float64 and float32,
#               against cuSPARSE
#   anchors     the same on suite anchors
#   unseen      suites demo, offsuite and real (evaluation only: no default was tuned on them),
#               float64, every format and auto's selection, against cuSPARSE
#   strips      tools/strips_eval.py on matrices that stack differently structured row blocks
# Each bench part writes OUTDIR/<part>.json (complete even when --max-seconds stops it early)
# and ends within about 9 minutes on the H200; merge with
#   clspmv report OUTDIR/irregular.json ... --out OUTDIR
set -euo pipefail
out=${1:?usage: bash reports/h200-selection.sh OUTDIR PART...}
shift
source .whl/gpu-env.sh
mkdir -p "$out"
bench() {  # PART ARGS...: one clspmv bench run, its results.json kept as OUTDIR/PART.json
    local part=$1 tmp
    shift
    tmp=$(mktemp -d)
    python3 -m clspmv bench --device nvidia --formats all --baselines cusparse --repeat 5 \
        --quiet --out "$tmp" "$@"
    cp "$tmp/results.json" "$out/$part.json"
}
for part in "$@"; do
    case $part in
        calibrate)
            python3 -m clspmv calibrate --device nvidia --force
            cp "${CLSPMV_CACHE_DIR:-$HOME/.cache/clspmv}"/calibration-*.json "$out/" ;;
        irregular) bench irregular --suite irregular --dtype both --max-seconds 500 ;;
        anchors) bench anchors --suite anchors --dtype both --max-seconds 500 ;;
        unseen)
            for suite in demo offsuite real; do
                bench "unseen-$suite" --suite "$suite" --dtype float64 --max-seconds 170
            done ;;
        strips)
            python3 tools/strips_eval.py nvidia gen:stacked:k=120,scale=21 \
                gen:stacked:k=60,scale=20,count=16,long=100000 \
                gen:stacked:k=150,scale=20 | tee "$out/strips.jsonl" ;;
        *) echo "unknown part $part (calibrate, irregular, anchors, unseen, strips)" >&2; exit 2 ;;
    esac
done
