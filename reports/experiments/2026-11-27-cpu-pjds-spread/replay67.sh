#!/bin/bash
# replay67.sh TREE OUT (TREE: a git worktree of the form to judge): run6 and run7 measurements (dealt pjds), model alone, run6's calibration refitted in TREE's form
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; R=/work/main/reports/experiments/2026-11-27-cpu-pjds-spread
cd $TREE; : > $OUT
for n in 6 7; do for S in cpu demo offsuite real heldout anchors; do
  CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $R/zen5-run$n/measured-zen5-$S-run$n.json --calibration $R/zen5-run6/calibration-zen5-run6.json 2>/dev/null | grep -v "^calibration" | sed "s|^|$S measured-zen5-$S-run$n.json |" >> $OUT
done; done
