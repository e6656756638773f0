#!/bin/bash
# dia's row-chunk vectors at half width (HALF_VW) against full width on the node's CPU: PoCL 5.0
# and PyPI's PoCL 3.0 (LLVM 14), kernel time A/B by tools/define_ab.py
source .whl/gpu-env.sh || exit 1
mkdir -p $OUT
python3 -c "
import clspmv
for d in clspmv.devices(): print(d.index, d.name, '|', d.cl_device.platform.version)" > $OUT/devices.txt 2>&1
cat $OUT/devices.txt
M="gen:banded:n=2000000,diags=3,spread=200,seed=9 gen:banded:n=1000000,diags=5,spread=800,seed=4 gen:poisson2d:k=1200 gen:stencil27:k=80 gen:constrows:n=400000,k=30,spread=800,seed=3 gen:banded:n=600000,diags=16,spread=500,seed=1"
for idx in $(grep -i "pocl" $OUT/devices.txt | awk '{print $1 $2}' | tr -d '()' | sed 's/,/:/'); do
  echo "== device $idx"
  timeout 250 python3 tools/define_ab.py --device $idx --define HALF_VW --formats dia --control dia --dtypes float64,float32 --repeat 41 $M > $OUT/halfvw-$(echo $idx | tr : _).txt 2>&1
  echo "rc=$?" >> $OUT/halfvw-$(echo $idx | tr : _).txt
  tail -14 $OUT/halfvw-$(echo $idx | tr : _).txt
done
