"""A product with its data in the caches against one after reading ``--flush-mb`` of other memory
(the caches then hold someone else's data, as in the alternating rounds of cpu_vs_mkl.py, where
six contestants' copies of the matrix take turns): medians over ``--rounds``, microseconds, for
clspmv formats (wall and kernel events) and MKL's optimised handle::

    python cold_cache.py --device 1:0 gen:poisson2d:k=450 --formats dia,ellr,csr-blocks
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import clspmv
from clspmv.bench import baselines
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--flush-mb", type=int, default=256)
    parser.add_argument("--formats", default="dia,ellr,csr-blocks")
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    baselines.mkl_threads_set(2)
    other = np.ones(args.flush_mb << 17)  # float64: MB * 2**20 / 8
    print(f"{dev.name} ({dev.platform}); flush: a sum over {args.flush_mb} MB; load "
          f"{os.getloadavg()[0]:.2f}")
    for source in resolve_all(args.matrices, progress=False):
        A = canonical_csr(source.load(), np.dtype(np.float64))
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        mkl = OptimisedMkl(A, expected_calls=100000)
        out = np.empty(A.shape[0])
        contestants = {"mkl-optimised": (lambda mkl=mkl, x=x, out=out: mkl.matvec(x, out), None)}
        for f in args.formats.split(","):
            M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
            contestants[f] = (lambda M=M, x=x: M.matvec(x),
                              lambda M=M: events_ns(M.last_events) / 1e3)
        print(f"{source.name} ({A.nnz / 1e6:.2f} M entries): warm (in a row) | cold (after the "
              "flush), microseconds")
        for name, (call, kernel) in contestants.items():
            res = {}
            for mode in ("warm", "cold"):
                wall, kern = [], []
                for r in range(-3, args.rounds):
                    if mode == "cold":
                        other.sum()
                    t0 = time.perf_counter_ns()
                    call()
                    t = (time.perf_counter_ns() - t0) / 1e3
                    if r >= 0:
                        wall.append(t)
                        if kernel is not None:
                            kern.append(kernel())
                res[mode] = f"{np.median(wall):7.0f}" + (
                    f" (kernel {np.median(kern):6.0f})" if kern else "")
            print(f"  {name:14s} {res['warm']} | {res['cold']}")
        mkl.close()
        print(f"  load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
