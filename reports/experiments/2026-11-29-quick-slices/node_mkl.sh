#!/bin/bash
# On the GPU node's CPU (PoCL 5.0): tools/cpu_vs_mkl.py with an empty cache (auto on the quick
# calibration measured at first use), MKL on 16 threads. Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
mkdir -p /tmp/mkl && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=$OUT/node-16cores-pocl50; mkdir -p $R; uptime > $R/uptime.txt
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 540 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
  --device cpu --threads 16 --rounds 15 --note "node, commit $1, empty cache: auto on the quick calibration measured at first use" \
  --out $R/mkl > $R/log.txt 2>&1
echo "rc=$?" >> $R/log.txt; uptime >> $R/uptime.txt
cd $OUT && tar -czf node-mkl.tgz node-16cores-pocl50 && rm -rf node-16cores-pocl50
