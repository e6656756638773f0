#!/bin/bash
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/long; mkdir -p $R
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 280 python3 .whl/long_rows_probe.py cpu gen:rmat:scale=15,edges=16,seed=3 gen:powerlaw:n=65536,k=8,local=0.9,seed=24 gen:rmat:scale=18,edges=24,seed=3 gen:rmat:scale=19,edges=16 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:stacked:k=50,scale=18,edges=8,seed=1 gen:chunglu:n=600000,k=8,seed=6 > $R/node-long.txt 2> $R/node-long.err
echo "rc=$?" >> $R/node-long.txt
