#!/bin/bash
# The H200 node's 16-core Xeon (PoCL 5.0, device "cpu"): a fresh calibration, then format="auto" (model alone and with the
# trial) against every format measured, per suite. Run on the node: bash reports/experiments/2026-11-26-auto-targets/xeon.sh SUITE ...
# (the calibration goes to $OUT/cal; with CAL=dir an earlier one is copied in first and used).
source .whl/gpu-env.sh
export POCL_MEMORY_LIMIT=100  # GB: PoCL 5.0's default allows 1 GiB per buffer, less than the anchors' CSR arrays
export CLSPMV_CACHE_DIR=$OUT/cal; mkdir -p $CLSPMV_CACHE_DIR
if [ -n "$CAL" ]; then cp "$CAL"/*.json $CLSPMV_CACHE_DIR/; else
  /usr/bin/time -f "calibrate wall %e s" python3 -m clspmv calibrate --device cpu 2>&1 | tr '\r' '\n' | tail -3 > $OUT/calibrate-xeon.txt
fi
for S in "$@"; do
  timeout ${LIMIT:-400} python3 tools/model_eval.py --suite $S --device cpu --trial --out $OUT/measured-xeon-$S.json > $OUT/eval-xeon-$S.txt 2>&1
done
tail -n 2 $OUT/eval-xeon-*.txt
