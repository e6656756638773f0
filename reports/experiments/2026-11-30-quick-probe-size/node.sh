#!/bin/bash
# On a GPU node's CPU (PoCL 5.0): tools/cpu_vs_mkl.py (an empty cache, MKL on all cores), then
# probe_size.py on its results. Arg: commit. As ../../2026-11-30-cpu-mkl-optimised-slice-lanes/node.sh.
source .whl/gpu-env.sh && rm -rf clspmv
mkdir -p /tmp/mkl && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=$OUT/node-$(nproc)cores-pocl50-$1; mkdir -p $R/calibrations; uptime > $R/uptime.txt
C=$(mktemp -d)
CLSPMV_CACHE_DIR=$C timeout 330 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
  --device cpu --threads $(nproc) --rounds 15 --note "node, commit $1, empty cache" \
  --out $R/mkl > $R/log.txt 2>&1
echo "rc=$?" >> $R/log.txt; uptime >> $R/uptime.txt
cp $C/calibration*.json $R/ 2>/dev/null
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 200 python3 reports/experiments/2026-11-30-quick-probe-size/probe_size.py \
  cpu $R/mkl/results.json --repeat 3 --out $R/calibrations > $R/probe-size.txt 2>&1
echo "rc=$?" >> $R/probe-size.txt; uptime >> $R/uptime.txt
