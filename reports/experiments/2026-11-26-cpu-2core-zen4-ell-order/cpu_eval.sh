#!/bin/bash
# usage: cpu_eval.sh DEVICE TAG OUTDIR — fresh calibration, then model_eval --trial per suite
dev=$1; tag=$2; out=$3; mkdir -p $out/cache
export CLSPMV_CACHE_DIR=$out/cache
cd /work/main
{ /usr/bin/time -f "%e s wall" .venv/bin/python -m clspmv calibrate --device $dev --force 2>&1 | grep -v "it/s\|run/s" | tail -2; } > $out/calibrate-time-$tag.txt 2>&1
for s in cpu demo offsuite real heldout; do
  { echo "# CLSPMV_CACHE_DIR=<the calibration of this folder> python tools/model_eval.py --suite $s --device $dev --trial --out measured-$s-$tag.json (float64, commit $(git rev-parse --short HEAD), flock /tmp/clspmv-measure.lock)";
    .venv/bin/python tools/model_eval.py --suite $s --device $dev --trial --out $out/measured-$s-$tag.json 2>&1 | grep -v "it/s"; } > $out/eval-$s-$tag.txt
  echo "done $s $(date +%T)" >> $out/progress.txt
done
