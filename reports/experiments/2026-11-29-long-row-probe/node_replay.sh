#!/bin/bash
# On the GPU node's CPU (PoCL 5.0): replay.py on a quick calibration measured there (empty cache),
# judged in the node's three earlier cpu_vs_mkl runs (copied into .whl/lr/). Arg: commit.
source .whl/gpu-env.sh && rm -rf clspmv
R=$OUT/replay; mkdir -p $R; uptime > $R/uptime.txt
mkdir -p reports/experiments/x && cp .whl/lr/replay.py .whl/lr/replay_common.py .whl/lr/prior-before.json reports/experiments/x/
CLSPMV_CACHE_DIR=$(mktemp -d) timeout 500 python3 reports/experiments/x/replay.py cpu \
  --save $R/node-quick-calibration.json .whl/lr/run1.json .whl/lr/run2.json .whl/lr/run3.json \
  > $R/replay.txt 2> $R/replay.err
echo "rc=$? commit $1" >> $R/replay.txt; uptime >> $R/uptime.txt
