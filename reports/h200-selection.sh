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
#   irregular64, irregular32   suite irregular, every format and auto's selection, float64 or
#               float32, against cuSPARSE (without auto's trial, --no-trial: it converts several
#               formats of these 10-60 M-entry matrices again, device time the budget lacks)
#   anchors64, anchors32       the same on suite anchors
#   unseen      suites demo, offsuite and real (evaluation only: no default was tuned on them),
#               float64, every format and auto's selection, against cuSPARSE; demo, offsuite,
#               real: one of them
#   cpu64       suite cpu (1-30 M entries) on the H200 the same way, float64
#   heldout     suite heldout (evaluation only, fixed before any run measured it), float64, every
#               format and auto's selection, against cuSPARSE
#   strips      tools/strips_eval.py on matrices that stack differently structured row blocks
# Each bench part writes OUTDIR/<part>.json (complete even when --max-seconds stops it early)
# and ends within about 5 minutes on the H200; merge with
#   clspmv report OUTDIR/irregular.json ... --out OUTDIR
set -euo pipefail
out=${1:?usage: bash reports/h200-selection.sh OUTDIR PART...}
shift
source .whl/gpu-env.sh
mkdir -p "$out"
source "$(dirname "$0")/bench_part.sh"
bench() {  # PART ARGS...: every format against cuSPARSE, kept as OUTDIR/PART.json
    bench_part "$out" "$1" --device nvidia --formats all --baselines cusparse --repeat 5 "${@:2}"
}
for part in "$@"; do
    case $part in
        calibrate)
            python3 -m clspmv calibrate --device nvidia --force
            cp "${CLSPMV_CACHE_DIR:-$HOME/.cache/clspmv}"/calibration-*.json "$out/" ;;
        irregular64) bench irregular64 --suite irregular --dtype float64 --max-seconds 280 \
                         --no-trial ;;
        irregular32) bench irregular32 --suite irregular --dtype float32 --max-seconds 280 \
                         --no-trial ;;
        anchors64) bench anchors64 --suite anchors --dtype float64 --max-seconds 280 --no-trial ;;
        anchors32) bench anchors32 --suite anchors --dtype float32 --max-seconds 280 --no-trial ;;
        unseen)
            for suite in demo offsuite real; do
                bench "unseen-$suite" --suite "$suite" --dtype float64 --max-seconds 170
            done ;;
        demo|offsuite|real) bench "unseen-$part" --suite "$part" --dtype float64 --max-seconds 170 ;;
        cpu64) bench cpu64 --suite cpu --dtype float64 --max-seconds 250 ;;
        heldout) bench heldout --suite heldout --dtype float64 --max-seconds 250 ;;
        strips)
            python3 tools/strips_eval.py nvidia gen:stacked:k=120,scale=21 \
                gen:stacked:k=60,scale=20,count=16,long=100000 \
                gen:stacked:k=150,scale=20 | tee "$out/strips.jsonl" ;;
        *) echo "unknown part $part (calibrate, irregular64, irregular32, anchors64, anchors32," \
                "unseen, demo, offsuite, real, cpu64, heldout, strips)" >&2; exit 2 ;;
    esac
done
