#!/bin/bash
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/height; mkdir -p $R; uptime > $R/uptime.txt
M="gen:rmat:scale=18,edges=24,seed=3 gen:rmat:scale=19,edges=16 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:chunglu:n=600000,k=8,seed=6 gen:stacked:k=50,scale=18,edges=8,seed=1 gen:random:n=400000,k=10 gen:denserows:n=800000,w=6,count=40,long=20000,seed=2"
timeout 300 python3 .whl/slice_height.py cpu float64 $M > $R/node-slice-height.txt 2>&1
echo "rc=$? commit $1" >> $R/node-slice-height.txt; uptime >> $R/uptime.txt
