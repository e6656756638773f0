#!/bin/bash
# Node CPU (PoCL 5.0): csr-blocks' unroll 1/2/4/8 (tools/param_sweep.py). Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/unroll; mkdir -p $R; uptime > $R/uptime.txt
B="gen:block:k=48,b=5 gen:stencil27:k=70 gen:denserows:n=800000,w=6,count=40,long=20000,seed=2 gen:constrows:n=200000,k=60,spread=500,seed=9 gen:random:n=400000,k=10 gen:rmat:scale=18,edges=24,seed=3 gen:poisson2d:k=1000 gen:chunglu:n=600000,k=8,seed=6 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:stacked:k=50,scale=18,edges=8,seed=1 gen:rmat:scale=19,edges=16 gen:stacked:k=60,scale=20,count=16,long=100000 gen:denserows:n=1500000,w=4,count=16,long=100000"
(cd tools && timeout 400 python3 param_sweep.py cpu --grid "csr-blocks:unroll=1|2|4|8" $B) > $R/unroll-node-pocl50.txt 2>&1
echo "rc=$? commit $1" >> $R/unroll-node-pocl50.txt; uptime >> $R/uptime.txt
