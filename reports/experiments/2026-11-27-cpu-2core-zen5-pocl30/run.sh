#!/bin/bash
# PoCL 3.0 (patched CPU name) and PoCL 3.1 on the Zen 5: calibrations, cpu suite vs MKL, auto evaluation (PoCL 3.0)
set -x
W=/tmp/wt-8e0e60f; PY=/work/main/.venv/bin/python; O=/tmp/p30/out; mkdir -p $O
export PYTHONPATH=$W
cd $W
P30="env OCL_ICD_VENDORS=/tmp/pocl30p/vendors CLSPMV_CACHE_DIR=/tmp/p30/cal"
P31="env CLSPMV_CACHE_DIR=/tmp/p31/cal"
rm -rf /tmp/p30/cal /tmp/p31/cal
( /usr/bin/time -f "%e s wall" $P30 $PY -m clspmv calibrate --device 1:0 --force ) > $O/calibrate-pocl30.txt 2>&1
$P30 CLSPMV_CALIBRATE=0 $PY -m clspmv bench --suite cpu --device 1:0 --formats all --dtype float64 --baselines mkl --repeat 5 --no-selection --max-seconds 900 --quiet --out $O/bench-cpu-pocl30 > $O/bench-cpu-pocl30.log 2>&1
$PY tools/wall_ratio.py $O/bench-cpu-pocl30 > $O/wall-ratio-pocl30.txt 2>&1
( /usr/bin/time -f "%e s wall" $P31 $PY -m clspmv calibrate --device 1:0 --force ) > $O/calibrate-pocl31.txt 2>&1
$P31 CLSPMV_CALIBRATE=0 $PY -m clspmv bench --suite cpu --device 1:0 --formats all --dtype float64 --baselines mkl --repeat 5 --no-selection --max-seconds 900 --quiet --out $O/bench-cpu-pocl31 > $O/bench-cpu-pocl31.log 2>&1
$PY tools/wall_ratio.py $O/bench-cpu-pocl31 > $O/wall-ratio-pocl31.txt 2>&1
for S in demo cpu offsuite real heldout; do
  $P30 CLSPMV_CALIBRATE=0 $PY tools/model_eval.py --suite $S --device 1:0 --trial --out $O/measured-pocl30-$S.json > $O/eval-pocl30-$S.txt 2>&1
done
$P30 CLSPMV_CALIBRATE=0 $PY tools/model_eval.py --suite anchors --device 1:0 --trial --separately --out $O/measured-pocl30-anchors.json > $O/eval-pocl30-anchors.txt 2>&1
echo done
