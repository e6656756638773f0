#!/bin/bash
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/skew; mkdir -p $R
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 250 python3 .whl/skew_probe.py cpu > $R/node-skew.txt 2> $R/node-skew.err
echo "rc=$?" >> $R/node-skew.txt
