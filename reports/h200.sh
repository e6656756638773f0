#!/usr/bin/env bash
# The H200 reference report (issue 5): on the GPU node, from a checkout with .whl/ beside it
# (bash ../shared/gpu-node/fetch-wheels.sh tqdm), see reports/README.md.
#
#   bash reports/h200.sh OUTDIR [anchors] [mixed] [sweep]
#
# Each part writes OUTDIR/<part>.json (a complete results.json even when --max-seconds stops
# it early; what was left is listed in the report). With no part named, all three run and
# OUTDIR gets the merged report. Each part ends within about 9 minutes on the H200, so a
# machine that limits commands to 10 minutes can run them one at a time and merge with
#   clspmv report OUTDIR/anchors.json OUTDIR/mixed.json OUTDIR/sweep.json --out OUTDIR
set -euo pipefail
out=${1:?usage: bash reports/h200.sh OUTDIR [anchors] [mixed] [sweep]}
shift
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(anchors mixed sweep)
source .whl/gpu-env.sh
mkdir -p "$out"
source "$(dirname "$0")/bench_part.sh"
bench() {  # PART ARGS...: one clspmv bench run on the anchors suite, kept as OUTDIR/PART.json
    bench_part "$out" "$1" --suite anchors --device nvidia "${@:2}"
}
for part in "${parts[@]}"; do
    case $part in
        anchors) bench anchors --dtype both --repeat 5 --max-seconds 480 ;;
        mixed) bench mixed --dtype mixed --repeat 5 --max-seconds 210 ;;
        sweep) bench sweep --dtype float64 --sweep --formats csr-scalar --baselines none --max-seconds 270 ;;
        *) echo "unknown part $part (anchors, mixed, sweep)" >&2; exit 2 ;;
    esac
done
if [ ${#parts[@]} -eq 3 ]; then
    python3 -m clspmv report "$out/anchors.json" "$out/mixed.json" "$out/sweep.json" --out "$out"
fi
