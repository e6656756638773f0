#!/bin/bash
# replay.sh TREE OUT: model alone, every stored Zen 5 / Xeon / H200 measurement with its own calibration refitted in TREE's form
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; R=/work/main/reports/experiments/2026-11-26-auto-targets
cd $TREE
: > $OUT
run() { S=$1; M=$2; shift 2
  CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $M --calibration "$@" 2>/dev/null | grep -v "^calibration" | sed "s|^|$S $(basename $M) |" >> $OUT; }
for n in 1 2 3; do for S in cpu demo offsuite real heldout anchors; do run $S $R/measured-zen5-$S-run$n.json $R/zen5-run$n.json & done; wait; done
for S in anchors heldout offsuite demo cpu; do run $S $R/xeon-410e675/measured-xeon-$S.json $R/xeon-410e675/cal/calibration-*.json & done; wait
for S in cpu anchors; do run $S $R/h200-2bd93ea/h200-measured-$S.json $R/h200-2bd93ea/cal/calibration-*.json & done
for S in demo heldout offsuite; do run $S $R/h200-4c6cb4a/h200-measured-$S.json $R/h200-4c6cb4a/cal/calibration-*.json & done; wait
