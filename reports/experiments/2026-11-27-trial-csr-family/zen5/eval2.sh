#!/bin/bash
# auto with the trial at 5b2d157 (the CSR family's two best tried): PoCL 3.1 then PoCL 3.0, the calibrations of run.sh
set -x
W=/tmp/wt-5b2d157; PY=/work/main/.venv/bin/python; O=/tmp/p30/out2; mkdir -p $O
export PYTHONPATH=$W CLSPMV_CALIBRATE=0
cd $W
for V in 31 30; do
  if [ $V = 30 ]; then E="env OCL_ICD_VENDORS=/tmp/pocl30p/vendors CLSPMV_CACHE_DIR=/tmp/p30/cal"; else E="env CLSPMV_CACHE_DIR=/tmp/p31/cal"; fi
  for S in demo cpu offsuite real heldout; do
    $E $PY tools/model_eval.py --suite $S --device 1:0 --trial --out $O/measured-pocl$V-$S.json > $O/eval-pocl$V-$S.txt 2>&1
  done
  $E $PY tools/model_eval.py --suite anchors --device 1:0 --trial --separately --out $O/measured-pocl$V-anchors.json > $O/eval-pocl$V-anchors.txt 2>&1
done
echo done
