"""csr-adaptive with each row block and chunk loaded from a multiple of 32 entries (aligned, the
partition of this commit on a GPU) against the unaligned greedy partition (align 1, the layout
of 6432295), two conversions of each matrix timed in alternating rounds (fastest of 30), and
cuSPARSE beside.

    python align_ab.py DEVICE CACHE SPEC ...   (SPEC: gen:... or a path to a .mtx under CACHE)
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.baselines import cusparse_product
from clspmv.bench.sources import resolve
from clspmv.cover import matrix_ns
from clspmv.formats import csr_adaptive

ALIGNED = csr_adaptive.align_of


def convert(A, dev, dtype, aligned: bool):
    csr_adaptive.align_of = ALIGNED if aligned else (lambda layout, cap: 1)
    try:
        return clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=dev, dtype=dtype)
    finally:
        csr_adaptive.align_of = ALIGNED


def main() -> None:
    device, specs = sys.argv[1], sys.argv[2:]
    dev = clspmv.select_device(device)
    for spec in specs:
        A = resolve(spec, progress=False).load().tocsr()
        for dtype in ("float64", "float32"):
            Ad = A.astype(dtype)
            xh = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = Ad @ xh
            x = cl_array.to_device(dev.queue, xh)
            y = cl_array.zeros(dev.queue, A.shape[0], dtype)
            mats = {"aligned": convert(Ad, dev, dtype, True), "plain": convert(Ad, dev, dtype, False)}
            rec = {"spec": spec, "dtype": dtype, "nnz": int(A.nnz),
                   "align": [M.params["align"] for M in mats.values()]}
            for k, M in mats.items():
                rec[k + "_err"] = float(np.max(np.abs(M @ xh - ref)) / max(np.max(np.abs(ref)), 1e-300))
            best = {k: np.inf for k in mats}
            for _ in range(30):
                for k, M in mats.items():
                    M.matvec(x, y)
                    ns, _ = matrix_ns(M, lambda: M.matvec(x, y))
                    best[k] = min(best[k], ns / 1e6)
            rec.update({k: round(v, 4) for k, v in best.items()})
            rec["ratio"] = round(best["aligned"] / best["plain"], 4)
            cus = cusparse_product(Ad, xh)
            rec["cusparse"] = round(cus.timing.min_ms, 4) if cus.timing else None
            print(json.dumps(rec), flush=True)
            del mats


if __name__ == "__main__":
    main()
