#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried):
#   bash reports/2026-11-27-h200-group-blocks/node.sh OUT G1,G2,... SPEC...
set -uo pipefail
out=$1; runs=$2; shift 2
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p "$out"
python3 reports/2026-11-27-h200-group-blocks/sweep.py nvidia /tmp/gbcache group_blocks "$runs" "$@" | tee -a "$out/sweep.jsonl"
