#!/bin/bash
# On a GPU node's CPU (PoCL 5.0): the ELL order of regular and scattered rows, column- against
# row-major ellr/hyb on a few matrices, then tools/cpu_vs_mkl.py with an empty cache. Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
mkdir -p /tmp/mkl && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=$OUT/node-$(nproc)cores-pocl50-$1; mkdir -p $R; uptime > $R/uptime.txt
export CLSPMV_CACHE_DIR=$(mktemp -d)
timeout 60 python3 .whl/lr/order_time.py cpu > $R/ell-order.txt 2>&1
timeout 60 python3 .whl/lr/large_probe.py cpu ellr:col,ellr:row,hyb:col,hyb:row,csr-blocks 1 gen:random:n=400000,k=10 gen:random:n=1000000,k=6,seed=7 gen:chunglu:n=600000,k=8,seed=6 gen:banded:n=400000,diags=5,spread=1000 > $R/col-row.txt 2>&1
C=$(mktemp -d)
CLSPMV_CACHE_DIR=$C timeout 440 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
  --device cpu --threads $(nproc) --rounds 15 --note "node, commit $1, empty cache: auto on the quick calibration measured at first use" \
  --out $R/mkl > $R/log.txt 2>&1
echo "rc=$?" >> $R/log.txt; uptime >> $R/uptime.txt
ls -R $C > $R/cache-files.txt
cp $C/calibration*.json $C/ell-order*.json $R/ 2>/dev/null
