#!/bin/bash
# usage: variant.sh 'python replacement code operating on s'
cd /work/main
cp kernels_cl/dia.cl /tmp/dia_keep.cl
python3 -c "
s=open('kernels_cl/dia.cl').read()
$1
open('kernels_cl/dia.cl','w').write(s)"
POCL_CACHE_DIR=$(mktemp -d) OCL_ICD_VENDORS=$PWD/.tox/pypi-pocl/clspmv-icd timeout 600 .tox/pypi-pocl/bin/python /tmp/lr/each_format.py dia 2>&1 | grep -v warn
cp /tmp/dia_keep.cl kernels_cl/dia.cl
