#!/bin/bash
cd "$(dirname "$0")/../../../.."
for i in 1 2; do for aff in 0 1; do
  flock /tmp/clspmv-measure.lock env POCL_AFFINITY=$aff CLSPMV_CACHE_DIR=$(mktemp -d) .venv/bin/python reports/experiments/2026-11-29-pocl-affinity/inarow.py 1:0 2 $(cat reports/experiments/2026-11-29-pocl-affinity/xeon-2core/cases.txt) > reports/experiments/2026-11-29-pocl-affinity/xeon-2core/inarow-$aff-$i.jsonl 2>reports/experiments/2026-11-29-pocl-affinity/xeon-2core/inarow-$aff-$i.err
done; done
