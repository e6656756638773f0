#!/bin/bash
# usage: ab_wall.sh DEVICE — before (658f155) and after (HEAD) alternately, twice
specs="gen:poisson2d:k=450@ellr gen:poisson2d:k=450@csr-blocks gen:banded:n=400000,diags=5,spread=1000@ellr gen:random:n=400000,k=10@csr-blocks"
for round in 1 2; do
  for v in before after; do
    if [ $v = before ]; then root=/tmp/before; else root=/work/main; fi
    echo "== $v round $round device $1"
    CLSPMV_CALIBRATE=0 PYTHONPATH=$root flock /tmp/clspmv-measure.lock /work/main/.venv/bin/python $root/tools/wall_breakdown.py --device $1 $specs 2>&1 | grep -E "^gen:" 
  done
done
