#!/bin/bash
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/ab-node-$(nproc)cores; mkdir -p $R; uptime > $R/uptime.txt
for m in gen:random:n=400000,k=10 gen:random:n=1000000,k=6,seed=7 gen:chunglu:n=600000,k=8,seed=6 gen:stencil27:k=70 gen:rmat:scale=18,edges=24,seed=3 gen:powerlaw:n=500000,k=12,local=0.3,seed=11 gen:poisson2d:k=1000; do
  timeout 100 python3 .whl/lr/ab_kernels.py cpu "$m" exp_cb_orig.cl exp_cb_xfirst.cl exp_cb_acc4.cl 2>&1 | tail -1 | tee -a $R/ab.txt
done
uptime >> $R/uptime.txt
