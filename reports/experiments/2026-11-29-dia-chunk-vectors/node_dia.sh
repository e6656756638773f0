#!/bin/bash
# On a GPU node: tests/test_dia.py and the bsr selection test on every device, then dia's CPU
# kernels side by side on the node's PoCL (old row chunks through a NO_CHUNK_VW switch added to
# the installed kernel). Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/dia; mkdir -p $R
nvidia-smi -L > $R/gpu.txt 2>&1; lscpu > $R/lscpu.txt; uptime > $R/uptime.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/test_dia.py tests/test_bsr.py -k "not every_block_size" > $R/tests.txt 2>&1
echo "rc=$? commit $1" >> $R/tests.txt
KD=$(python3 -c "import clspmv.build as b; print(b.kernel_dir())")
sed -i 's/^#if !defined(COLMAP) \&\& (defined(VALUE_IS_DOUBLE)/#if !defined(NO_CHUNK_VW) \&\& !defined(COLMAP) \&\& (defined(VALUE_IS_DOUBLE)/' $KD/dia.cl
grep -n NO_CHUNK_VW $KD/dia.cl > $R/switch.txt
M="gen:poisson2d:k=450 gen:banded:n=400000,diags=5,spread=1000 gen:stencil27:k=104 gen:constrows:n=300000,k=39,spread=2000 gen:poisson2d:k=1000 gen:banded:n=1500000,diags=3,spread=50000,seed=2 gen:stencil27:k=70 gen:constrows:n=200000,k=60,spread=500,seed=9"
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 330 python3 .whl/kernel_ab.py cpu float64,float32 $M > $R/node-cpu.txt 2> $R/node-cpu.err
echo "rc=$? commit $1" >> $R/node-cpu.txt; uptime >> $R/uptime.txt
