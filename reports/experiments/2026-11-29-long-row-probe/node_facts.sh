#!/bin/bash
# On a GPU node's CPU (PoCL 5.0): dump_facts.py with an empty cache. Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/facts-$(nproc)cores; mkdir -p $R; uptime > $R/uptime.txt
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 200 python3 .whl/lr/dump_facts.py cpu $R > $R/log.txt 2>&1
echo "rc=$? commit $1" >> $R/log.txt; uptime >> $R/uptime.txt
