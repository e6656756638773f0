#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried; this checkout first on PYTHONPATH):
#   [XL_FORMATS=F1,F2] [XL_OUT=NAME] bash reports/experiments/2026-11-27-h200-x-loads/node.sh OUT SPEC...
set -uo pipefail
out=$1; shift
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p "$out"
python3 reports/experiments/2026-11-27-h200-x-loads/xload.py nvidia /tmp/xlcache "$@" 2>&1 | tee -a "$out/${XL_OUT:-xload}.jsonl"
