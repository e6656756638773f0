#!/bin/bash
# On the nvidia-h200 node's 16-core CPU (PoCL 5.0): the quick calibration with its large probes,
# first use, and tools/cpu_vs_mkl.py with an empty cache (auto on that quick calibration).
source .whl/gpu-env.sh && rm -rf clspmv
mkdir -p /tmp/mkl && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=$OUT/node-16cores-pocl50; mkdir -p $R
lscpu > $R/lscpu.txt; uptime > $R/uptime.txt
C=/tmp/cq; mkdir -p $C
CLSPMV_CACHE_DIR=$C timeout 60 python3 -m clspmv calibrate --quick --force --device cpu > $R/calibrate.txt 2>&1
CLSPMV_CACHE_DIR=$C python3 -m clspmv calibrate --show --device cpu >> $R/calibrate.txt 2>&1
cp $C/calibration-*.json $R/ 2>/dev/null
timeout 90 python3 tools/first_use.py --runs 2 --device cpu > $R/first_use.txt 2>&1
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 400 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
  --device cpu --threads 16 --rounds 15 --note "node, commit $1, empty cache: auto on the quick calibration (with its large probes) measured at first use" \
  --out $R/mkl > $R/log.txt 2>&1
echo "rc=$?" >> $R/log.txt; uptime >> $R/uptime.txt
cd $OUT && tar -czf node.tgz node-16cores-pocl50 && rm -rf node-16cores-pocl50
