#!/usr/bin/env bash
# On the device tool's nvidia-h200 (from the project root, .whl/ carried; see summary.txt):
#   bash reports/experiments/2026-11-27-h200-adaptive-one-kernel/node.sh OUT PART...
# check: the PTX of csr-adaptive's fences and atomic (Oclgrind is not on the node: run here);
# ab: ab.py of the .oldtree checkout (8e0e60f) and of this one, alternated, on four matrices
#     ($AB_RUNS: the labels in order, default "old new old new"; new:chunk_blocks=2 and the like);
# calibrate: a fresh calibration (MEASUREMENT 12), timed;
# SUITE-DTYPE (irregular-float64, ...): clspmv bench --formats all --baselines cusparse, OUT/SUITE-DTYPE.json
set -uo pipefail
out=$1; shift
source .whl/gpu-env.sh
source reports/bench_part.sh
mkdir -p "$out" /tmp/h200cal
export CLSPMV_CACHE_DIR=/tmp/h200cal  # kept while the machine stays warm; copied into OUT
for part in "$@"; do
    case $part in
        check)
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
        ab)
            specs="gen:powerlaw:n=2000000,k=21,local=0.7,seed=1 gen:rmat:scale=22,edges=8
                   gen:chunglu:n=4000000,k=10,seed=4 gen:denserows:n=4000000,w=3,count=64,long=200000"
            for tree in ${AB_RUNS:-old new old new}; do
                path=$PWD; [ $tree = old ] && path=$PWD/.oldtree
                [ "${tree%%:*}" = mid ] && path=$PWD/.midtree  # an earlier commit, carried
                PYTHONPATH=$path:$PYTHONPATH python3 reports/experiments/2026-11-27-h200-adaptive-one-kernel/ab.py \
                    $tree nvidia /tmp/abcache $specs >> "$out/ab.jsonl"
            done ;;
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
cp -r /tmp/h200cal "$out/cal"
