#!/bin/bash
# usage: cpu_eval.sh DEVICE TAG OUTDIR CACHE — model_eval --trial per suite with the calibration in CACHE
# (clspmv calibrate --device DEVICE --force, run before into CACHE: calibrate-*.txt)
dev=$1; tag=$2; out=$3
export CLSPMV_CACHE_DIR=$4 CLSPMV_CALIBRATE=0
cd /work/main
for s in cpu demo offsuite real heldout; do
  { echo "# CLSPMV_CACHE_DIR=<the calibration of this folder> python tools/model_eval.py --suite $s --device $dev --trial --out measured-$s-$tag.json (float64, commit $(git rev-parse --short HEAD), flock /tmp/clspmv-measure.lock)";
    flock /tmp/clspmv-measure.lock .venv/bin/python tools/model_eval.py --suite $s --device $dev --trial --out $out/measured-$s-$tag.json 2>&1 | grep -v "it/s"; } > $out/eval-$s-$tag.txt
  echo "done $s $tag $(date +%T)" >> /tmp/s30/eval-progress.txt
done
