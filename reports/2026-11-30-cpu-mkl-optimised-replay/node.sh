#!/bin/bash
# On a GPU node's CPU (PoCL 5.0): ../2026-11-30-cpu-mkl-optimised-slice-lanes/node.sh (tools/
# cpu_vs_mkl.py with an empty cache, MKL on every core, the quick calibration kept), then the
# replay against the general path (../experiments/2026-11-30-product-replay/ab_replay.py). Arg:
# commit. Run from the project root with .whl/ as there and the two scripts copied into .whl/lr/
# (the device tool does not carry reports/): slice-lanes-node.sh, ab_replay.py.
source .whl/lr/slice-lanes-node.sh "$1"
timeout 100 python3 .whl/lr/ab_replay.py 'poisson2d:k=600;banded:n=600000,diags=7,spread=3000,seed=4;random:n=300000,k=12,seed=3;stencil27:k=60;rmat:scale=17,edges=20,seed=5;block:k=30,b=3,seed=2' cpu 20 > $R/ab-replay.txt 2>&1
echo "rc=$?" >> $R/ab-replay.txt
