#!/usr/bin/env bash
# On the device tool's nvidia-h200 (from the project root, .whl/ carried; see summary.txt):
#   bash reports/2026-11-27-h200-adaptive-one-kernel/node.sh OUT PART...
# check: Oclgrind over every kernel (the node's CPU), the PTX of csr-adaptive's fence and atomic;
# calibrate: a fresh calibration (MEASUREMENT 12) into OUT/cal, timed;
# SUITE-DTYPE (irregular-float64, ...): clspmv bench --formats all --baselines cusparse, OUT/SUITE-DTYPE.json
set -uo pipefail
out=$1; shift
source .whl/gpu-env.sh
source reports/bench_part.sh
mkdir -p "$out/cal"
export CLSPMV_CACHE_DIR=$out/cal
for part in "$@"; do
    case $part in
        check)
            CLSPMV_TEST_DEVICES=cpu CLSPMV_REQUIRE_OCLGRIND=1 timeout 250 python3 -m pytest -q \
                tests/test_oclgrind.py -k every_kernel_clean > "$out/oclgrind.txt" 2>&1
            tail -2 "$out/oclgrind.txt"
            python3 - > "$out/ptx-fence.txt" 2>&1 <<'PY'
import numpy as np, scipy.sparse as sp
import clspmv
from clspmv import build
A = sp.random(4, 200_000, density=0.5, format="csr", random_state=0)
for dt in (np.float64, np.float32):
    M = clspmv.DeviceMatrix.from_scipy(A.astype(dt), format="csr-adaptive", device="nvidia")
    M @ np.ones(A.shape[1], dt)
for (_, file, opts), prg in build._cache.items():
    if file == "csr_adaptive.cl":
        ptx = prg.binaries[0].decode(errors="replace")
        print(" ".join(opts))
        print("\n".join("   " + l.strip() for l in ptx.splitlines()
                        if "membar" in l or "fence" in l or "atom" in l))
PY
            cat "$out/ptx-fence.txt" ;;
        calibrate)
            /usr/bin/time -f "%e s wall" python3 -m clspmv calibrate --device nvidia --force \
                > "$out/calibrate-time.txt" 2>&1; tail -3 "$out/calibrate-time.txt" ;;
        *-float64|*-float32)
            suite=${part%-*}; dtype=${part##*-}
            secs=230; [ "$suite" = anchors ] && secs=300
            bench_part "$out" "$part" --device nvidia --formats all --baselines cusparse \
                --repeat 5 --suite "$suite" --dtype "$dtype" --max-seconds $secs --no-trial ;;
        *) echo "unknown part $part" >&2; exit 2 ;;
    esac
done
