#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried; this checkout first on PYTHONPATH):
#   bash reports/experiments/2026-11-27-h200-calibration-time/node.sh OUT
# upload rates by method, then fresh calibrations under the profiler: the library's rounds, 30 rounds, the library's again
set -uo pipefail
out=$1
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
mkdir -p "$out"
d=reports/experiments/2026-11-27-h200-calibration-time
python3 $d/upload_rate.py nvidia 4 16 64 256 > "$out/upload-rate-after.txt" 2>&1
for run in "a" "b 30" "c"; do
    set -- $run
    CLSPMV_CACHE_DIR=/tmp/cal-$1 python3 $d/profile_calibration.py nvidia "$out/profile-$1" ${2:-} | head -1
done
