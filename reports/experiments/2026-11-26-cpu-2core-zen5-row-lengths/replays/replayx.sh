#!/bin/bash
# replayx.sh TREE OUT CALIBRATION: the fresh Xeon run's measurements (xeon-77c487f), model alone, CALIBRATION refitted in TREE's form
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; CALD=$3
cd $TREE; : > $OUT
for S in heldout offsuite demo cpu anchors; do
  CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured /work/main/reports/experiments/2026-11-26-cpu-2core-zen5-row-lengths/xeon-77c487f/measured-xeon-$S.json --calibration $CALD 2>/dev/null | grep -v "^calibration" | sed "s|^|$S xeonnew-measured-xeon-$S.json |" >> $OUT
done
