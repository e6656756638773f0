#!/bin/bash
# Node CPU (PoCL 5.0): tools/define_ab.py for LOAD_INDICES (NO_UNALIGNED_INDICES = the vload path).
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/defab; mkdir -p $R; uptime > $R/uptime.txt
M="gen:chunglu:n=600000,k=8,seed=6 gen:random:n=1000000,k=6,seed=7 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:stacked:k=50,scale=18,edges=8,seed=1 gen:rmat:scale=18,edges=24,seed=3 gen:emptyrows:n=1000000,k=16,empty=0.5,seed=8 gen:denserows:n=800000,w=6,count=40,long=20000,seed=2 gen:random:n=400000,k=10 gen:rmat:scale=19,edges=16 gen:stacked:k=60,scale=20,count=16,long=100000 gen:denserows:n=1500000,w=4,count=16,long=100000 gen:block:k=48,b=5"
timeout 300 python3 tools/define_ab.py --device cpu --define NO_UNALIGNED_INDICES --formats sell:slice_items=1,pjds:slice_items=1 --dtypes float64,float32 $M > $R/node-pocl50-slices.txt 2>&1
echo "rc=$? commit $1" >> $R/node-pocl50-slices.txt
B="gen:block:k=48,b=5 gen:stencil27:k=70 gen:denserows:n=800000,w=6,count=40,long=20000,seed=2 gen:constrows:n=200000,k=60,spread=500,seed=9 gen:random:n=400000,k=10"
timeout 200 python3 tools/define_ab.py --device cpu --define NO_UNALIGNED_INDICES --formats csr-blocks:unroll=4,csr-blocks:unroll=8 --dtypes float64,float32 $B > $R/node-pocl50-blocks.txt 2>&1
echo "rc=$? commit $1" >> $R/node-pocl50-blocks.txt; uptime >> $R/uptime.txt
