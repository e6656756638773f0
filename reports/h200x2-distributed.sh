#!/usr/bin/env bash
# Issue 12 on the machine with two H200s (device tool kind nvidia-h200-x2): the distributed
# product on 2 ranks, one GPU each, against the same code on 1 rank (measured in the same run),
# one `reports/scaling.sh gpu` run per matrix so that the matrices finished before a time limit
# keep their results; then one report of them all.
#
#   bash reports/h200x2-distributed.sh OUTDIR SECONDS MATRIX... [-- BENCH ARGS...]
#
#   SECONDS      no new matrix starts once this much time has passed, and a running one is
#                stopped there (the device tool gives a command 600 s)
#   BENCH ARGS   passed to every run (default: --dtype float64 --repeat 20 --warmup 3)
#
# On the node, first: source .whl/gpu-env.sh; copy the H200 calibration into $CLSPMV_CACHE_DIR
# (format="auto" per part and partition="time" read it; see reports/README.md).
# Writes OUTDIR/m<i>/n2/ per matrix and the merged OUTDIR/report.md (+ results.json, PNGs).
set -uo pipefail
out=${1:?usage: bash reports/h200x2-distributed.sh OUTDIR SECONDS MATRIX... [-- BENCH ARGS...]}
budget=${2:?usage: bash reports/h200x2-distributed.sh OUTDIR SECONDS MATRIX... [-- BENCH ARGS...]}
shift 2
matrices=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    matrices+=("$1")
    shift
done
[ $# -gt 0 ] && shift
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--dtype float64 --repeat 20 --warmup 3)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1  # Open MPI as root
deadline=$((SECONDS + budget))
files=()
i=0
for m in "${matrices[@]}"; do
    i=$((i + 1))
    left=$((deadline - SECONDS))
    if [ "$left" -lt 30 ]; then
        echo "h200x2-distributed.sh: time is up, $m not run" >&2
        continue
    fi
    echo "h200x2-distributed.sh: $m ($left s left)" >&2
    timeout "$left" bash "$(dirname "$0")/scaling.sh" gpu "$out/m$i" 2 -- "$m" "${args[@]}" \
        || echo "h200x2-distributed.sh: $m ended with status $?" >&2
    [ -f "$out/m$i/n2/results.json" ] && files+=("$out/m$i/n2/results.json")
done
[ ${#files[@]} -gt 0 ] && "${PYTHON:-python3}" -m clspmv report "${files[@]}" --out "$out"
