"""Measurement (issue 11): the COO tail of long rows against none, side by side.

For each matrix and each format with a tail (:data:`clspmv.model.features.SPLIT_FORMATS`, or
those named), uploads the matrix twice (``long_rows=0`` and the default ``"auto"``) and times
their forward products alternately on the same device vectors (kernel time from profiling
events, median of the repeats), then prints the limit used, the tail's entries and the ratio
auto / off. Usage::

    python tools/long_rows_ab.py DEVICE_SPEC [--formats F,F] [--dtype float64] [--repeat 25]
        MATRIX_SPEC ...

e.g. ``python tools/long_rows_ab.py cpu gen:arrow:n=200000
gen:denserows:n=200000,w=3,count=16,long=40000``. On the 2-core CPU (PoCL 3.1, float64,
2026-11-23, shared machine): arrow with its row of 200 000 entries in the tail, auto / off 1.00
(csr-scalar), 0.48 (csr-vector), 0.98 (csr-aligned), 0.77 (sell), 0.50 (pjds); csr-blocks was
1.27 before its CPU limit became nnz / cores (``lockstep=False``) and keeps the row now; the
dense-row matrix keeps its rows of 40 000 entries (limit 127 000): 0.94-1.04, noise.
"""

from __future__ import annotations

import argparse

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import summarize
from clspmv.device import events_ns
from clspmv.model.features import SPLIT_FORMATS


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device")
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--formats", default=",".join(SPLIT_FORMATS))
    parser.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    dtype = np.dtype(args.dtype)
    print(f"{dev.name}, {dtype}: kernel ms, median of {args.repeat}")
    for spec in args.matrices:
        A = resolve(spec).load().tocsr().astype(dtype)
        x = cl_array.to_device(dev.queue, np.random.default_rng(0).uniform(-1, 1, A.shape[1])
                               .astype(dtype))
        y = cl_array.zeros(dev.queue, A.shape[0], dtype)
        one, zero = dtype.type(1), dtype.type(0)
        for fmt in args.formats.split(","):
            pair = {lr: clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, long_rows=lr)
                    ._fmt for lr in (0, "auto")}
            samples: dict[object, list[int]] = {lr: [] for lr in pair}
            for i in range(args.repeat + 2):  # two warm-up rounds
                for lr, f in pair.items():
                    ns = events_ns(f.launch(dev.queue, x.data, y.data, one, zero))
                    if i >= 2:
                        samples[lr].append(ns)
            off, auto = (summarize(samples[lr]).median_ms for lr in (0, "auto"))
            tail = pair["auto"]
            print(f"{spec} {fmt}: limit {tail.params['long_rows']}, tail {tail.tail_nnz} "
                  f"entries; off {off:.4g} ms, auto {auto:.4g} ms, auto / off {auto / off:.2f}")


if __name__ == "__main__":
    main()
