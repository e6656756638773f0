#!/bin/bash
# Counts the gather instructions in sell_spmv_slices as each PoCL on this machine compiles it,
# vectors (sell_ab.diff's file without SLICE_LANE_LOOP) against the loop over lanes (with it);
# float64, C = 16. Run from the project root with kernels_cl/sell.cl as the README's A/B says.
# Args: the Python that runs each PoCL, and its device, as pairs, e.g.
#   bash gathers.sh ".venv/bin/python 1:0" ".tox/pypi-pocl/bin/python 0:0"
set -e
for pair in "$@"; do
  set -- $pair
  for define in "" SLICE_LANE_LOOP; do
    cache=$(mktemp -d)
    POCL_CACHE_DIR=$cache XDG_CACHE_HOME=$cache/x PYTHONPATH=. $1 - "$2" "$define" <<'PY'
import sys
import numpy as np
sys.path.insert(0, "tools")
import clspmv
from define_ab import convert
from clspmv.bench.sources import resolve
A = resolve("gen:rmat:scale=16,edges=16,seed=77").load().tocsr()
M = convert(A, clspmv.select_device(sys.argv[1]), "sell:slice_items=1", sys.argv[2] or None)
x = np.ones(A.shape[1])
assert np.allclose(M @ x, A @ x)
PY
    so=$(find $cache -name sell_spmv_slices.so | head -1)
    echo "$1 $2 ${define:-vectors}: $(objdump -d $so | grep -c gather) gathers, $(objdump -d $so | grep -c 'vpinsr\|vmovhpd\|vinsertf') inserts, $(objdump -d $so | wc -l) lines"
    rm -rf $cache
  done
done
