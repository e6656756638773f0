#!/usr/bin/env bash
# On the device tool's nvidia-h200 (project root, .whl/ carried; this checkout first on PYTHONPATH), after the
# aligned csr-adaptive blocks (commit a2edc30):
#   bash reports/experiments/2026-11-27-h200-long-short/after.sh OUT SUITE... [-- tests]
# clspmv bench --formats all --baselines cusparse per suite in float64 and float32 (OUT/SUITE-DTYPE.json; DTYPES and
# MAX_SECONDS, each run's --max-seconds, default 130, from the environment); with an argument "tests" first the
# GPU's product and csr-adaptive tests (OUT/gpu-tests.txt)
set -uo pipefail
out=$1; shift
source .whl/gpu-env.sh
export PYTHONPATH=$PWD:$PYTHONPATH
source reports/bench_part.sh
mkdir -p "$out"
suites=()
for a in "$@"; do
    if [ "$a" = tests ]; then
        CLSPMV_TEST_DEVICES=gpu python3 -m pytest -q -x tests/test_product.py tests/test_csr_adaptive.py \
            tests/test_adaptive_split.py tests/test_matmat.py tests/test_mixed.py > "$out/gpu-tests.txt" 2>&1
        tail -2 "$out/gpu-tests.txt"
    else
        suites+=("$a")
    fi
done
for suite in "${suites[@]}"; do
    for dtype in ${DTYPES:-float64 float32}; do
        bench_part "$out" "$suite-$dtype" --device nvidia --formats all --baselines cusparse --repeat 5 \
            --suite "$suite" --dtype "$dtype" --max-seconds "${MAX_SECONDS:-130}" --no-trial
    done
done
