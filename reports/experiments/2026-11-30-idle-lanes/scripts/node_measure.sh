#!/bin/bash
# every format's kernel time in rounds on the offsuite and cpu suites (tools/model_eval.py --measure-only)
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/measured-node-$(nproc)cores; mkdir -p $R; uptime > $R/uptime.txt
for s in offsuite cpu; do
  CLSPMV_CALIBRATE=0 timeout 280 python3 tools/model_eval.py --suite $s --device cpu --measure-only --out $R/$s.json > $R/$s.log 2>&1
  echo "rc=$?" >> $R/$s.log
done
uptime >> $R/uptime.txt; tail -2 $R/*.log
