#!/bin/bash
# A kernel switch of kernels_cl/dia.cl (DEFINE, a temporary -D switch in the source of the day)
# against the code without it on the node's CPU devices (PoCL 5.0 and PyPI's PoCL 3.0), kernel
# time A/B by tools/define_ab.py. Args: DEFINE, then the matrices. Run from the project root:
#   bash node_ab.sh HALF_VW gen:banded:n=2000000,diags=3,spread=200,seed=9 \
#     gen:banded:n=1000000,diags=5,spread=800,seed=4 gen:poisson2d:k=1200 gen:stencil27:k=80 \
#     gen:constrows:n=400000,k=30,spread=800,seed=3 gen:banded:n=600000,diags=16,spread=500,seed=1
#   bash node_ab.sh ARRAY_STORE gen:banded:n=2000000,diags=3,spread=200,seed=9 \
#     gen:banded:n=1000000,diags=5,spread=800,seed=4 gen:poisson2d:k=1200 \
#     gen:banded:n=1500000,diags=9,spread=3000,seed=5 gen:stencil27:k=80 \
#     gen:banded:n=600000,diags=16,spread=500,seed=1
source .whl/gpu-env.sh || exit 1
DEFINE=$1; shift
mkdir -p $OUT
python3 -c "
import clspmv
for d in clspmv.devices(): print(d.index, d.name, '|', d.cl_device.platform.version)" > $OUT/devices.txt 2>&1
cat $OUT/devices.txt
for idx in $(grep -i "pocl" $OUT/devices.txt | awk '{print $1 $2}' | tr -d '()' | sed 's/,/:/'); do
  f=$OUT/$(echo $DEFINE | tr A-Z a-z)-$(echo $idx | tr : _).txt
  timeout 250 python3 tools/define_ab.py --device $idx --define $DEFINE --formats dia --control dia \
    --dtypes float64,float32 --repeat 41 "$@" > $f 2>&1
  echo "rc=$?" >> $f
  tail -14 $f
done
