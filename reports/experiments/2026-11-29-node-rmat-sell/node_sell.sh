#!/bin/bash
# On the GPU node's CPU (PoCL 5.0): sell/pjds variants against the CSR kernels on R-MAT and
# other irregular matrices. Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/sell; mkdir -p $R; uptime > $R/uptime.txt
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 420 python3 .whl/sell_node.py cpu gen:rmat:scale=18,edges=24,seed=3 gen:rmat:scale=19,edges=16 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:chunglu:n=600000,k=8,seed=6 gen:random:n=400000,k=10 > $R/node-sell.txt 2> $R/node-sell.err
echo "rc=$? commit $1" >> $R/node-sell.txt; uptime >> $R/uptime.txt
