#!/bin/bash
# On the nvidia-h200 node: POCL_AFFINITY A/B on its 16-core CPU (PoCL 5.0). Usage: bash .whl/node.sh RUN
source .whl/gpu-env.sh && rm -rf clspmv
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p /tmp/mkl /tmp/res && tar -xJf .whl/mkl-libs.tar.xz -C /tmp/mkl
export LD_LIBRARY_PATH=/tmp/mkl:$LD_LIBRARY_PATH MKL_RT=/tmp/mkl/libmkl_rt.so.3
R=/tmp/res
if [ "$1" = 1 ]; then
  python3 -c "import clspmv; print(clspmv.devices())" > $R/devices.txt 2>&1
  lscpu > $R/lscpu.txt
  for m in never always around-platforms; do python3 afftest.py $m; done > $R/afftest.txt 2>&1
  python3 -m pytest -q -p no:cacheprovider tests/test_pocl_affinity.py >> $R/afftest.txt 2>&1
fi
uptime >> $R/uptime-$1.txt
T0=$SECONDS
for aff in ${ORDER:-0 1}; do
  POCL_AFFINITY=$aff CLSPMV_CACHE_DIR=$(mktemp -d) timeout 262 python3 tools/cpu_vs_mkl.py --suite offsuite --suite cpu \
    --device cpu --threads 16 --rounds 9 --note "node POCL_AFFINITY=$aff run $1" --out $R/node-aff$aff-$1 > $R/log-$aff-$1.txt 2>&1
  echo "aff=$aff run=$1 rc=$? done at $((SECONDS-T0)) s" >> $R/progress.txt
done
uptime >> $R/uptime-$1.txt
tar -czf $OUT/node-$1.tgz -C $R .
cat $R/progress.txt $R/afftest.txt 2>/dev/null | tail -20
