#!/bin/bash
# A/B of POCL_AFFINITY on Debian's PoCL 3.1 (device 1:0), cpu_vs_mkl over offsuite + cpu, alternating processes.
cd "$(dirname "$0")/../../../.."
for i in 1 2; do
  for aff in 0 1; do
    uptime > reports/experiments/2026-11-29-pocl-affinity/xeon-2core/uptime-$aff-$i.txt
    flock /tmp/clspmv-measure.lock env POCL_AFFINITY=$aff CLSPMV_CACHE_DIR=$(mktemp -d) .venv/bin/python tools/cpu_vs_mkl.py \
      --suite offsuite --suite cpu --device 1:0 --threads 2 --rounds 11 --note "POCL_AFFINITY=$aff run $i" \
      --out reports/experiments/2026-11-29-pocl-affinity/xeon-2core/aff$aff-$i > reports/experiments/2026-11-29-pocl-affinity/xeon-2core/log-$aff-$i.txt 2>&1
  done
done
