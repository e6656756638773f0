"""DIA's forward kernel on CPUs with and without ``row_chunks`` (a work-item per run of rows,
sums kept for chunks of rows, each diagonal walked as a vectorisable loop; without: a work-item
per row walking every diagonal), side by side with ellr, csr-blocks and ell; kernel us, median
of the rounds (clspmv.bench.timing.time_side_by_side); the largest error against scipy.
Usage: python dia_cpu_ab.py DEVICE [--dtype float64] [--repeat 9] SPEC ..."""

from __future__ import annotations

import argparse
import time

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side

OTHERS = ("ellr", "csr-blocks", "ell")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"# {dev.name}: kernel us, median of {args.repeat} side-by-side rounds")
    for spec in args.specs:
        base = resolve(spec).load().tocsr()
        for dtype in args.dtype.split(","):
            t0 = time.time()
            A = base.astype(dtype)
            x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = A @ x
            matrices = {name: clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev,
                                                              row_chunks=chunks)
                        for name, chunks in (("dia-rows", False), ("dia-chunks", True))}
            for fmt in OTHERS:
                matrices[fmt] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
            err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max())
                      for M in matrices.values())
            times = time_side_by_side(matrices, x, warmup=3, repeat=args.repeat)
            cells = " ".join(f"{k}={v.median_ms * 1e3:.0f}" for k, v in times.items())
            best = min(times[k].median_ms for k in OTHERS)
            print(f"{dtype} {spec} nnz={A.nnz} {cells} rows/chunks="
                  f"{times['dia-rows'].median_ms / times['dia-chunks'].median_ms:.2f} "
                  f"best-other/chunks={best / times['dia-chunks'].median_ms:.2f} "
                  f"maxerr={err:.1e} [{time.time() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    main()
