#!/bin/bash
# On the GPU node's CPU (PoCL 5.0): quick calibrations with sell/pjds in the in-cache probes
# (new) and without (old), judged in kernel times of every format measured on offsuite and cpu.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/quick; mkdir -p $R; uptime > $R/uptime.txt
export CLSPMV_CACHE_DIR=$(mktemp -d)
timeout 120 python3 .whl/twocals.py cpu $R/node 2 > $R/cals.txt 2>&1
for s in offsuite cpu; do
  timeout 200 python3 tools/model_eval.py --suite $s --device cpu --measure-only --out $R/node-$s.json > $R/measure-$s.log 2>&1
  python3 tools/model_eval.py --suite $s --device cpu --measured $R/node-$s.json --calibration $R/node-old-0.json $R/node-old-1.json $R/node-new-0.json $R/node-new-1.json > $R/eval-$s.txt 2>&1
done
uptime >> $R/uptime.txt
