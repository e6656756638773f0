#!/bin/bash
# replay4.sh TREE OUT: zen5-run4's measurements, model alone, its calibration (CAL=file overrides) refitted in TREE's form
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; R=/work/main/reports/experiments/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run4
cd $TREE; : > $OUT
CAL=${CAL:-$R/calibration-zen5-run4.json}
for S in cpu demo offsuite real heldout; do
  CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $R/measured-zen5-$S-run4.json --calibration $CAL 2>/dev/null | grep -v "^calibration" | sed "s|^|$S measured-zen5-$S-run4.json |" >> $OUT
done
