#!/bin/bash
# The cpu suite against MKL (2 threads) from numpy to numpy with both PoCL builds on the 2-core Zen 5, library of d9121d9
# (csr-adaptive's four running sums per lane), each run under flock /tmp/clspmv-measure.lock:
#   bash run.sh WORKTREE OUT [ROUNDS]   (WORKTREE: a git worktree of the commit; PoCL 3.0 through the patched copy of
#                                        ../2026-11-27-cpu-2core-zen5-pocl30, python pocl30_znver3.py /tmp/pocl30p,
#                                        first; ROUNDS, default 3: the two builds in turn, OUT/bench-cpu-BUILD-ROUND)
set -x
W=$1; O=$2; ROUNDS=${3:-3}; PY=/work/main/.venv/bin/python; mkdir -p "$O"
export PYTHONPATH=$W
cd "$W" || exit 1
P30="env OCL_ICD_VENDORS=/tmp/pocl30p/vendors CLSPMV_CALIBRATE=0"
P31="env CLSPMV_CALIBRATE=0"
for round in $(seq "$ROUNDS"); do
  for build in pocl30 pocl31; do
    if [ $build = pocl30 ]; then P=$P30; else P=$P31; fi
    run=$build-$round
    flock /tmp/clspmv-measure.lock $P $PY -m clspmv bench --suite cpu --device 1:0 --formats all --dtype float64 \
      --baselines mkl --repeat 5 --no-selection --max-seconds 900 --quiet --out "$O/bench-cpu-$run" > "$O/bench-cpu-$run.log" 2>&1
    $PY tools/wall_ratio.py "$O/bench-cpu-$run" > "$O/wall-ratio-$run.txt" 2>&1
  done
done
echo done
