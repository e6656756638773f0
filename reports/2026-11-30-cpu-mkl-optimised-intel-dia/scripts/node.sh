#!/bin/bash
# On a GPU node's CPU (PoCL 5.0): tools/cpu_vs_mkl.py with an empty cache. Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
mkdir -p /tmp/mkl && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=$OUT/node-$(nproc)cores-pocl50-$1; mkdir -p $R; uptime > $R/uptime.txt
C=$(mktemp -d)
CLSPMV_CACHE_DIR=$C timeout 500 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
  --device cpu --threads $(nproc) --rounds 15 --note "node, commit $1, empty cache: auto on the quick calibration measured at first use" \
  --out $R/mkl > $R/log.txt 2>&1
echo "rc=$?" >> $R/log.txt; uptime >> $R/uptime.txt
ls -R $C > $R/cache-files.txt
cp $C/calibration*.json $C/ell-order*.json $R/ 2>/dev/null
