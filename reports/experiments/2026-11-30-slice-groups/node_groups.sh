#!/bin/bash
# (the experiment's groups.py, copied to .whl/lr/hubs_variants.py beside the wheels of ../shared/gpu-node/fetch-wheels.sh)
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/variants; mkdir -p $R
CLSPMV_CALIBRATE=0 timeout 500 python3 .whl/lr/hubs_variants.py cpu "gen:rmat:scale=18,edges=24,seed=3" "gen:rmat:scale=19,edges=16" "gen:chunglu:n=600000,k=8,seed=6" "gen:stacked:k=60,scale=20,count=16,long=100000" "gen:stacked:k=50,scale=18,edges=8,seed=1" "gen:powerlaw:n=500000,k=12,local=0.3,seed=11" "gen:random:n=400000,k=10" > $R/node-$(nproc)cores.txt 2>&1
cat $R/node-*.txt
