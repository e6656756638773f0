#!/bin/bash
# tools/cpu_vs_mkl.py on the 2-core Zen 4 with the three CPU implementations, empty caches, one after the other
# arg: commit (819f245); out: /tmp/lr/zen4b/<impl>; the report folders <impl>-after
cd /work/main
C=$1
O=/tmp/lr/zen4b; mkdir -p $O
run() {  # name device note-prefix env...
  local name=$1 dev=$2 what=$3; shift 3
  uptime > $O/$name-uptime.txt
  env "$@" CLSPMV_CACHE_DIR=$(mktemp -d) POCL_CACHE_DIR=$(mktemp -d) flock /tmp/clspmv-measure.lock \
    timeout 1500 $PY tools/cpu_vs_mkl.py --suite offsuite --suite cpu --device $dev --threads 2 --rounds 15 \
    --note "2-core Zen 4 (AMD EPYC, family 25 model 17), $what, commit $C, empty cache: auto on the quick calibration measured at first use" \
    --out reports/2026-11-30-cpu-mkl-optimised-zen4/$name-after > $O/$name.log 2>&1
  echo "rc=$?" >> $O/$name.log
  uptime >> $O/$name-uptime.txt
}
PY=.venv/bin/python run zen4-debian-pocl 1:0 "Debian PoCL 3.1" OCL_ICD_VENDORS=/tmp/pocl-only
PY=.tox/pypi-pocl/bin/python run zen4-pypi-pocl 0:0 "PyPI PoCL 3.0-rc2" OCL_ICD_VENDORS=$PWD/.tox/pypi-pocl/clspmv-icd LD_LIBRARY_PATH=.venv/lib MKL_RT=.venv/lib/libmkl_rt.so.3 PYTHONPATH=.
PY=.venv/bin/python run zen4-intel 1:0 "Intel's CPU runtime 2026.22" OCL_ICD_VENDORS=$PWD/.tox/intel/clspmv-icd LD_LIBRARY_PATH=$PWD/.tox/intel/lib:.venv/lib
