"""DIA's kernels without and with DIAGONAL_RUNS (``diagonal_runs=False``: every work-item walks all
diagonals, the kernel before this change; ``True``: each work-group walks the run of diagonals
crossing its rows), side by side, with ellr, ell and hyb beside them; kernel times from
profiling events, median of the rounds (clspmv.bench.timing.time_side_by_side); the largest
error against scipy, forward and transposed; the time of the exact diagonal count
(clspmv.model.sampling.exact_diagonals). Usage:
python dia_ab.py DEVICE [--dtype float32,float64] [--repeat 15] SPEC ...
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.model.sampling import exact_diagonals

OTHERS = ("ellr", "ell", "hyb")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--dtype", default="float32,float64")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"# {dev.name}: kernel us, median of {args.repeat} side-by-side rounds")
    for spec in args.specs:
        base = resolve(spec).load().tocsr()
        for dtype in args.dtype.split(","):
            t0 = time.time()
            A = base.astype(dtype)
            t = time.perf_counter()
            diags = exact_diagonals(A)
            count_ms = (time.perf_counter() - t) * 1e3
            matrices = {name: clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev,
                                                              diagonal_runs=runs)
                        for name, runs in (("dia-all", False), ("dia-runs", True))}
            for fmt in OTHERS:
                try:
                    matrices[fmt] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
                except ValueError:
                    pass
            rng = np.random.default_rng(0)
            x, xt = rng.uniform(-1, 1, A.shape[1]), rng.uniform(-1, 1, A.shape[0])
            x, xt = x.astype(dtype), xt.astype(dtype)
            ref, ref_t = A @ x, A.T @ xt
            err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max())
                      for M in matrices.values())
            err_t = max(float(np.abs(matrices[k].rmatvec(xt) - ref_t).max() / np.abs(ref_t).max())
                        for k in ("dia-all", "dia-runs"))
            times = time_side_by_side(matrices, x, warmup=3, repeat=args.repeat)
            cells = " ".join(f"{k}={v.median_ms * 1e3:.1f}" for k, v in times.items())
            gain = times["dia-all"].median_ms / times["dia-runs"].median_ms
            print(f"{dtype} {spec} nnz={A.nnz} diagonals={diags[0]} count={count_ms:.0f}ms "
                  f"{cells} all/runs={gain:.3f} maxerr={err:.1e} maxerr_t={err_t:.1e} "
                  f"[{time.time() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    main()
