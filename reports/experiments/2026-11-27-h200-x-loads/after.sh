#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried; this checkout first on PYTHONPATH), after the
# float32 stream hint (Format.stream_float32):
#   bash reports/experiments/2026-11-27-h200-x-loads/after.sh OUT
# the GPU's product tests, then clspmv bench --formats all --baselines cusparse on the irregular and anchors suites
# in float32 (OUT/irregular-float32.json, OUT/anchors-float32.json)
set -uo pipefail
out=$1
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
source reports/bench_part.sh
mkdir -p "$out"
CLSPMV_TEST_DEVICES=gpu python3 -m pytest -q -x tests/test_product.py tests/test_csr_merge.py tests/test_mixed.py \
    tests/test_matmat.py > "$out/gpu-tests.txt" 2>&1; tail -2 "$out/gpu-tests.txt"
for suite in irregular anchors; do
    bench_part "$out" "$suite-float32" --device nvidia --formats all --baselines cusparse --repeat 5 \
        --suite "$suite" --dtype float32 --max-seconds 200 --no-trial
done
