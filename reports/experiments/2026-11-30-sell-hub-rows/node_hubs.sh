#!/bin/bash
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/hubs; mkdir -p $R
CLSPMV_CALIBRATE=0 timeout 400 python3 .whl/lr/hubs.py cpu "gen:rmat:scale=18,edges=24,seed=3" "gen:rmat:scale=19,edges=16" "gen:chunglu:n=600000,k=8,seed=6" "gen:random:n=400000,k=10" > $R/node-$(nproc)cores.txt 2>&1
cat $R/node-*.txt
