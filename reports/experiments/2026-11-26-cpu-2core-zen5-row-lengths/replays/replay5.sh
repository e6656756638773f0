#!/bin/bash
# replay5.sh TREE OUT: zen5-run5's measurements, model alone, its calibration (CAL=file overrides) refitted in TREE's form
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; R=/work/main/reports/experiments/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run5
cd $TREE; : > $OUT
CAL=${CAL:-$R/calibration-zen5-run5.json}
for S in cpu demo offsuite real heldout anchors; do
  CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $R/measured-zen5-$S-run5.json --calibration $CAL 2>/dev/null | grep -v "^calibration" | sed "s|^|$S measured-zen5-$S-run5.json |" >> $OUT
done
