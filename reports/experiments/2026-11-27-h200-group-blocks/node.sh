#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried; this checkout first on PYTHONPATH):
#   bash reports/experiments/2026-11-27-h200-group-blocks/node.sh OUT PARAM G1,G2,... SPEC...
# PARAM: group_blocks (group-blocks.patch here) or sm_queues (../2026-11-27-h200-sm-queues/experiment.patch)
set -uo pipefail
out=$1; param=$2; runs=$3; shift 3
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p "$out"
python3 reports/experiments/2026-11-27-h200-group-blocks/sweep.py nvidia /tmp/sweepcache "$param" "$runs" "$@" | tee -a "$out/sweep.jsonl"
