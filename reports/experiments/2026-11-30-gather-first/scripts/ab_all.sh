#!/bin/bash
# usage: ab_all.sh IMPL "matrices" variants...
cd /work/main
impl=$1; mats=$2; shift 2
for m in $mats; do
case $impl in
deb) flock /tmp/clspmv-measure.lock env OCL_ICD_VENDORS=/tmp/pocl-only .venv/bin/python /tmp/s23/ab_kernels.py 1:0 "$m" "$@" 2>&1 | tail -1;;
pypi) flock /tmp/clspmv-measure.lock env OCL_ICD_VENDORS=$PWD/.tox/pypi-pocl/clspmv-icd LD_LIBRARY_PATH=.venv/lib PYTHONPATH=. .tox/pypi-pocl/bin/python /tmp/s23/ab_kernels.py 0:0 "$m" "$@" 2>&1 | tail -1;;
intel) flock /tmp/clspmv-measure.lock env OCL_ICD_VENDORS=$PWD/.tox/intel/clspmv-icd LD_LIBRARY_PATH=$PWD/.tox/intel/lib:.venv/lib .venv/bin/python /tmp/s23/ab_kernels.py 1:0 "$m" "$@" 2>&1 | tail -1;;
esac
done
