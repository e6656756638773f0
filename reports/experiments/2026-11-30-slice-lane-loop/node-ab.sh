#!/bin/bash
# define_ab on the node's CPU (PoCL 5.0): sell/pjds lane loop, csr-blocks lane loop
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/ab-$(nproc)cores; mkdir -p $R; uptime > $R/uptime.txt
python3 -c "import pyopencl as cl; [print(p.name, p.version, d.name) for p in cl.get_platforms() for d in p.get_devices()]" > $R/devices.txt 2>&1
M="gen:random:n=600000,k=8,seed=21 gen:rmat:scale=18,edges=16,seed=22 gen:powerlaw:n=400000,k=10,local=0.2,seed=23 gen:chunglu:n=500000,k=10,seed=24 gen:emptyrows:n=600000,k=12,empty=0.3,seed=25 gen:denserows:n=600000,w=5,count=30,long=10000,seed=26 gen:random:n=3000000,k=8,seed=27 gen:rmat:scale=21,edges=8,seed=28"
timeout 250 python3 tools/define_ab.py --device cpu --define SLICE_LANE_LOOP --formats sell:slice_items=1,pjds:slice_items=1 --control sell:slice_items=0 --dtypes float64,float32 $M > $R/sell.txt 2>&1
echo "rc=$?" >> $R/sell.txt
timeout 200 python3 tools/define_ab.py --device cpu --define CSR_LANE_LOOP --formats csr-blocks:unroll=4,csr-blocks:unroll=8 --control csr-blocks:unroll=1 $M gen:poisson2d:k=700 > $R/csr.txt 2>&1
echo "rc=$?" >> $R/csr.txt
uptime >> $R/uptime.txt
