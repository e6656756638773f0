#!/bin/bash
# replay_zen4.sh TREE OUT FOLDER: the Zen 4's stored measurements of FOLDER, each PoCL with its own calibration
export CLSPMV_MATRICES=/work/shared/matrices; TREE=$1; OUT=$2; F=/work/main/reports/$3
cd $TREE; : > $OUT
for v in 31 30; do
  case $v in 31) CAL=$F/calibration-pthread-skylake-avx512-AMD_EPYC-3.1_debian-0.1.0.json;; 30) CAL=$F/calibration-pthread-AMD_EPYC-3.0-rc2-0.1.0.json;; esac
  for M in $F/measured-*-pocl$v.json; do S=$(basename $M | sed 's/measured-\(.*\)-pocl.*/\1/')
    CLSPMV_CALIBRATE=0 PYTHONPATH=$TREE /work/main/.venv/bin/python tools/model_eval.py --suite $S --device facts --refit --measured $M --calibration $CAL 2>/dev/null | grep -v "^calibration" | sed "s|^|$S zen4-pocl$v-$(basename $M) |" >> $OUT
  done
done
