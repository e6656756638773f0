#!/bin/bash
# tools/cpu_vs_mkl.py on the 2-core Zen 4 with the three CPU implementations, empty caches, one
# after the other under the measurement lock. Args: commit (the report folders are named by it),
# the report's folder (default this one), and the runs to make (default all three:
# "zen4-debian-pocl zen4-pypi-pocl zen4-intel").
# Logs in /tmp/lr/ells/; the calibration, ELL order and load averages land beside each report.
cd "$(git rev-parse --show-toplevel)"
C=$1
R=${2:-reports/2026-11-30-cpu-mkl-optimised-ell-scattered}
ONLY=" ${3:-zen4-debian-pocl zen4-pypi-pocl zen4-intel} "
O=/tmp/lr/ells; mkdir -p $O
run() {  # name device what env...
  local name=$1 dev=$2 what=$3; shift 3
  [[ $ONLY == *" $name "* ]] || return 0
  local out=$R/$name-$C cache=$(mktemp -d)
  uptime > $O/$name-$C-uptime.txt
  env "$@" CLSPMV_CACHE_DIR=$cache POCL_CACHE_DIR=$(mktemp -d) flock /tmp/clspmv-measure.lock \
    timeout 1500 $PY tools/cpu_vs_mkl.py --suite offsuite --suite cpu --device $dev --threads 2 --rounds 15 \
    --note "2-core Zen 4 (AMD EPYC, family 25 model 17), $what, commit $C, empty cache: auto on the quick calibration measured at first use" \
    --out $out > $O/$name.log 2>&1
  echo "rc=$?" >> $O/$name.log
  uptime >> $O/$name-$C-uptime.txt
  cp $O/$name-$C-uptime.txt $out/uptime.txt; cp $cache/calibration-*.json $cache/ell-order-*.json $out/
}
PY=.venv/bin/python run zen4-debian-pocl 1:0 "Debian PoCL 3.1" OCL_ICD_VENDORS=/tmp/pocl-only
PY=.tox/pypi-pocl/bin/python run zen4-pypi-pocl 0:0 "PyPI PoCL 3.0-rc2" OCL_ICD_VENDORS=$PWD/.tox/pypi-pocl/clspmv-icd LD_LIBRARY_PATH=.venv/lib MKL_RT=.venv/lib/libmkl_rt.so.3 PYTHONPATH=.
PY=.venv/bin/python run zen4-intel 1:0 "Intel's CPU runtime 2026.22" OCL_ICD_VENDORS=$PWD/.tox/intel/clspmv-icd LD_LIBRARY_PATH=$PWD/.tox/intel/lib:.venv/lib
