"""Wall time of products from numpy against their kernel time, per matrix (issue 11's CPU
target: ``M @ x`` from a numpy x to a numpy y within 10 % of the kernel time).

For each ``SPEC@FORMAT`` (a generator spec of ``clspmv bench`` and a format) it times, in
interleaved rounds so that machine noise falls on every column alike (medians, ms):

* ``kernel``: profiling events of ``M.matvec(x_dev, y_dev)`` on device-resident arrays, queued
  behind :mod:`clspmv.cover`'s spin (what the benchmarks call the kernel time);
* ``dev wall``: the same product from the host's clock, enqueue to completion;
* ``M @ x``: numpy x to a new numpy y (what ``clspmv bench`` reports as ``wall ms``);
* ``matvec(x, y)``: numpy x into a given numpy y;
* with ``--k K``: ``M @ X`` for a numpy X of K columns, against its own kernel time.

Run it under the measurement lock on a shared machine::

    flock /tmp/clspmv-measure.lock python tools/wall_breakdown.py \\
        gen:poisson2d:k=450@ellr gen:random:n=400000,k=10@csr-scalar
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from tabulate import tabulate

import clspmv
from clspmv.bench.generators import generate
from clspmv.cover import matrix_ns


def _covered_ms(M: clspmv.DeviceMatrix, product) -> float:
    """The benchmarks' kernel time of ``product()``, a product of ``M`` (:mod:`clspmv.cover`),
    in ms."""
    return matrix_ns(M, product)[0] / 1e6


def _wall_ms(product) -> float:
    t0 = time.perf_counter()
    product()
    return (time.perf_counter() - t0) * 1e3


def measure(spec: str, fmt: str, device: clspmv.Device, rounds: int, k: int) -> dict:
    """Median ms of each timing (see the module docstring) for one matrix and format."""
    A = generate(spec)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
    queue = device.queue
    rng = np.random.default_rng(0)
    x = rng.random(A.shape[1])
    y = np.empty(A.shape[0])
    x_dev = cl_array.to_device(queue, x)
    y_dev = cl_array.empty(queue, A.shape[0], M.dtype)
    X = rng.random((A.shape[1], k)) if k else None
    X_dev = cl_array.to_device(queue, X) if k else None
    Y_dev = cl_array.empty(queue, (A.shape[0], k), M.dtype) if k else None

    def device_product() -> None:
        M.matvec(x_dev, y_dev)
        cl.wait_for_events(M.last_events)

    def device_matmat() -> None:
        M.matmat(X_dev, Y_dev)
        cl.wait_for_events(M.last_events)

    samples: dict[str, list[float]] = {}
    for r in range(rounds + 2):  # two warm-up rounds
        row = {"dev wall": _wall_ms(device_product)}
        row["kernel"] = _covered_ms(M, lambda: M.matvec(x_dev, y_dev))
        row["M @ x"] = _wall_ms(lambda: M @ x)
        row["matvec(x, y)"] = _wall_ms(lambda: M.matvec(x, y))
        if k:
            row["X dev wall"] = _wall_ms(device_matmat)
            row["X kernel"] = _covered_ms(M, lambda: M.matmat(X_dev, Y_dev))
            row["M @ X"] = _wall_ms(lambda: M @ X)
        if r >= 2:
            for key, value in row.items():
                samples.setdefault(key, []).append(value)
    med = {key: float(np.median(v)) for key, v in samples.items()}
    out = {"matrix": spec, "format": fmt, "nnz M": round(A.nnz / 1e6, 2)}
    out.update({f"{key} ms": round(v, 3) for key, v in med.items()})
    out["M @ x / kernel"] = round(med["M @ x"] / med["kernel"], 3)
    out["matvec(x,y) / kernel"] = round(med["matvec(x, y)"] / med["kernel"], 3)
    out["dev wall / kernel"] = round(med["dev wall"] / med["kernel"], 3)
    if k:
        out["M @ X / X kernel"] = round(med["M @ X"] / med["X kernel"], 3)
    out["transfers"] = M.last_transfers
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="+", metavar="SPEC@FORMAT")
    parser.add_argument("--device", default=None, help="device spec (default: clspmv's)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--k", type=int, default=0, help="also M @ X with K columns")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    print(device)
    rows = []
    for case in args.cases:
        spec, _, fmt = case.rpartition("@")
        rows.append(measure(spec, fmt, device, args.rounds, args.k))
        print(tabulate([rows[-1]], headers="keys"), flush=True)
    print()
    print(tabulate(rows, headers="keys"))


if __name__ == "__main__":
    main()
