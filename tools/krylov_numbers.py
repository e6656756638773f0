#!/usr/bin/env python3
"""The numbers for the transpose / several-right-hand-sides / solvers issue, on one device.

    python tools/krylov_numbers.py [--device SPEC] [--size N | --matrix FILE] [--dtype float64]

Prints three tables (needs only clspmv installed):

1. transpose vs direct, per format: median kernel time (profiling events of ``M.last_events``) of
   A x, of A^T x by the atomic kernels and by the transposed copy, their ratios to A x, the wall
   time of building the copy once, and after how many products the copy pays for itself;
2. several right-hand sides: median kernel time of ``matmat`` for k = 1, 2, 4, ..., 64 per format,
   GFLOP/s (2 nnz k / time) and the speed-up over k separate products;
3. CG: wall time per iteration of ``clspmv.solvers.cg`` (device-resident) against
   ``scipy.sparse.linalg.cg`` on the host, both running the same fixed number of iterations.

This is a maintainer's measurement script, not the benchmark suite; ``--json FILE`` writes the
rows as records.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from tabulate import tabulate

import clspmv
from clspmv.bench.generators import poisson2d
from clspmv.bench.timing import kernel_ns
from clspmv.formats.base import atomic_add_kind

TRANSPOSE_FORMATS = ("csr-scalar", "csr-vector", "coo", "ell", "ellr", "sell", "hyb")
MATMAT_FORMATS = ("csr-vector", "sell", "ellr")
KS = (1, 2, 4, 8, 16, 32, 64)


def median_ns(run, repeats: int, M: clspmv.DeviceMatrix) -> float:
    """Median kernel time of ``run()`` (after one warm-up), from M.last_events."""
    run()
    times = []
    for _ in range(repeats):
        run()
        times.append(kernel_ns(M.last_events))
    return float(np.median(times))


def transpose_rows(A: sp.csr_matrix, device, dtype, repeats: int) -> list[dict]:
    rows = []
    q = device.queue
    x = cl_array.to_device(q, np.random.default_rng(0).standard_normal(A.shape[1]).astype(dtype))
    xt = cl_array.to_device(q, np.random.default_rng(1).standard_normal(A.shape[0]).astype(dtype))
    y = cl_array.empty(q, A.shape[0], dtype)
    yt = cl_array.empty(q, A.shape[1], dtype)
    for fmt in TRANSPOSE_FORMATS:
        try:
            M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
        except clspmv.UnsuitableFormatError:
            rows.append({"format": fmt, "note": "refused"})
            continue
        direct = median_ns(lambda M=M: M.matvec(x, y), repeats, M)
        atomic = median_ns(lambda M=M: M.rmatvec(xt, yt, method="atomic"), repeats, M)
        start = time.perf_counter()
        copy_bytes = M.prepare_transpose()
        build_s = time.perf_counter() - start
        copy = median_ns(lambda M=M: M.rmatvec(xt, yt, method="transpose"), repeats, M)
        saving = atomic - copy
        rows.append({
            "format": fmt,
            "A x ms": direct / 1e6,
            "A^T x atomic ms": atomic / 1e6,
            "A^T x copy ms": copy / 1e6,
            "atomic / direct": atomic / direct,
            "copy / direct": copy / direct,
            "copy build s": build_s,
            "copy MiB": copy_bytes / 2**20,
            "copy pays after": (build_s * 1e9 / saving) if saving > 0 else None,
        })
    return rows


def matmat_rows(A: sp.csr_matrix, device, dtype, repeats: int) -> list[dict]:
    rows = []
    q = device.queue
    rng = np.random.default_rng(2)
    for fmt in MATMAT_FORMATS:
        try:
            M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
        except clspmv.UnsuitableFormatError:
            continue
        x = cl_array.to_device(q, rng.standard_normal(A.shape[1]).astype(dtype))
        y = cl_array.empty(q, A.shape[0], dtype)
        single = median_ns(lambda M=M, x=x, y=y: M.matvec(x, y), repeats, M)
        for order in ("C", "F"):
            for k in KS:
                X = cl_array.to_device(q, np.asarray(rng.standard_normal((A.shape[1], k)),
                                                     dtype=dtype, order=order))
                Y = cl_array.empty(q, (A.shape[0], k), dtype, order=order)
                t = median_ns(lambda M=M, X=X, Y=Y: M.matmat(X, Y), repeats, M)
                rows.append({"format": fmt, "order": order, "k": k, "ms": t / 1e6,
                             "ms per column": t / 1e6 / k, "GFLOP/s": 2 * A.nnz * k / t,
                             "speed-up vs k products": single * k / t})
    return rows


def cg_rows(A: sp.csr_matrix, device, dtype, iterations: int) -> list[dict]:
    b = A @ np.random.default_rng(3).standard_normal(A.shape[0])
    rows = []
    for fmt in ("csr-vector", "sell"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
        clspmv.solvers.cg(M, b, rtol=0.0, maxiter=3)  # builds the kernels
        history: list[float] = []
        start = time.perf_counter()
        clspmv.solvers.cg(M, b, rtol=0.0, maxiter=iterations, history=history)
        device_s = time.perf_counter() - start
        rows.append({"solver": f"clspmv cg ({fmt}, {device.name})",
                     "iterations": len(history) - 1,
                     "ms per iteration": device_s * 1e3 / (len(history) - 1)})
    count = [0]

    def callback(_xk) -> None:
        count[0] += 1

    A_host = sp.csr_matrix(A, dtype=dtype)
    start = time.perf_counter()
    sla.cg(A_host, b.astype(dtype), rtol=0.0, atol=0.0, maxiter=iterations, callback=callback)
    host_s = time.perf_counter() - start
    rows.append({"solver": "scipy cg (host)", "iterations": count[0],
                 "ms per iteration": host_s * 1e3 / max(count[0], 1)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="clspmv.select_device spec")
    parser.add_argument("--size", type=int, default=1000,
                        help="Poisson grid side (N*N rows; default 1000)")
    parser.add_argument("--matrix", default=None, help="a Matrix Market file instead of Poisson")
    parser.add_argument("--dtype", choices=("float32", "float64"), default="float64")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--cg-iterations", type=int, default=200)
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    args = parser.parse_args(argv)

    device = clspmv.select_device(args.device)
    dtype = np.dtype(args.dtype)
    if args.matrix:
        A = clspmv.io.read(args.matrix).tocsr()
        what = args.matrix
    else:
        A = poisson2d(args.size)
        what = f"2-D Poisson {args.size}x{args.size}"
    std = device.float_atomics_std
    print(f"device: {device}; atomic add in {dtype}: {atomic_add_kind(device, dtype)} "
          f"(cl_ext_float_atomics: {'with -cl-std=' + std if std else 'no'})")
    print(f"matrix: {what}, {A.shape[0]} x {A.shape[1]}, {A.nnz} entries, {dtype}\n")
    tables = {
        "transpose": transpose_rows(A, device, dtype, args.repeats),
        "matmat": matmat_rows(A, device, dtype, args.repeats),
        "cg": cg_rows(A, device, dtype, args.cg_iterations),
    }
    for name, rows in tables.items():
        print(f"== {name}")
        print(tabulate(rows, headers="keys", floatfmt=".4g", missingval=""))
        print()
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"device": str(device), "matrix": what, "dtype": str(dtype),
                       "nnz": int(A.nnz), **tables}, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
