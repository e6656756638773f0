"""Where a small product's time goes next to MKL (issue 44, H44): each format's wall time
(numpy x in, new numpy y out) and kernel time (its events) run alone, in a row, and right after
one product of a neighbour (MKL's optimised handle, or scipy), plus the MKL handle alone and
right after a clspmv product, a product from device arrays, and an empty command::

    python neighbours.py --device 1:0 --rounds 41 gen:poisson2d:k=450 --formats dia,ellr,csr-scalar

``KMP_BLOCKTIME=0`` in the environment makes MKL's OpenMP threads sleep at once after each call
instead of spinning (200 ms by default), to tell their spinning from the cache's part.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clspmv
from clspmv.bench import baselines
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns


def ms(t0: int) -> float:
    return (time.perf_counter_ns() - t0) / 1e6


def rounds_of(target, before, rounds: int, kernel=None) -> tuple[list[float], list[float]]:
    """Wall ms of ``target`` right after ``before`` (or in a row: None), ``rounds`` times after
    3 untimed; with ``kernel``, its event time of each product too."""
    wall, kern = [], []
    for r in range(-3, rounds):
        if before is not None:
            before()
        t0 = time.perf_counter_ns()
        target()
        t = ms(t0)
        if r >= 0:
            wall.append(t)
            if kernel is not None:
                kern.append(kernel())
    return wall, kern


def med(v: list[float]) -> float:
    return float(np.median(v)) if v else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--formats", default="dia,ellr,ell,csr-blocks,csr-scalar")
    parser.add_argument("--work-groups", default="", help="extra work-group sizes, e.g. 64,1024")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    baselines.mkl_threads_set(2)
    q = dev.queue
    print(f"{dev.name} ({dev.platform}); KMP_BLOCKTIME={os.environ.get('KMP_BLOCKTIME', '-')}; "
          f"load {os.getloadavg()[0]:.2f}")
    results = []
    for source in resolve_all(args.matrices, progress=False):
        A = canonical_csr(source.load(), np.dtype(np.float64))
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        mkl = OptimisedMkl(A, expected_calls=100000)
        out = np.empty(A.shape[0])
        neighbours = {"mkl-opt": lambda mkl=mkl, x=x, out=out: mkl.matvec(x, out),
                      "scipy": lambda A=A, x=x: A @ x}
        print(f"\n{source.name}: {A.shape[0]} rows, {A.nnz / 1e6:.2f} M entries; load "
              f"{os.getloadavg()[0]:.2f}")
        for name, call in neighbours.items():
            alone, _ = rounds_of(call, None, args.rounds)
            print(f"  {name:28s} alone {med(alone):7.3f} ms")
        variants = [(f, {}) for f in args.formats.split(",")]
        variants += [(f, {"work_group_size": int(w)}) for f in args.formats.split(",")
                     for w in args.work_groups.split(",") if w]
        for f, kw in variants:
            M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev, **kw)
            assert np.allclose(M.matvec(x), A @ x)
            label = f + (f" wg={kw['work_group_size']}" if kw else "")
            kernel = lambda M=M: events_ns(M.last_events) / 1e6  # noqa: E731
            rec = {"matrix": source.name, "variant": label}
            product = lambda M=M, x=x: M.matvec(x)  # noqa: E731
            rec["alone"], rec["alone_kernel"] = rounds_of(product, None, args.rounds, kernel)
            for name, call in neighbours.items():
                rec[f"after_{name}"], rec[f"after_{name}_kernel"] = rounds_of(
                    product, call, args.rounds, kernel)
            xd, yd = cla.to_device(q, x), cla.zeros(q, A.shape[0], np.float64)
            on_device = lambda M=M, xd=xd, yd=yd: (M.matvec(xd, yd), q.finish())  # noqa: E731
            rec["device_arrays"], _ = rounds_of(on_device, None, args.rounds)
            rec["mkl_after_this"], _ = rounds_of(neighbours["mkl-opt"], product, args.rounds)
            results.append(rec)
            print(f"  {label:28s} alone {med(rec['alone']):7.3f} (kernel "
                  f"{med(rec['alone_kernel']):.3f}) | after MKL {med(rec['after_mkl-opt']):7.3f} "
                  f"(kernel {med(rec['after_mkl-opt_kernel']):.3f}) | after scipy "
                  f"{med(rec['after_scipy']):7.3f} (kernel {med(rec['after_scipy_kernel']):.3f})"
                  f" | device arrays {med(rec['device_arrays']):.3f} | MKL after it "
                  f"{med(rec['mkl_after_this']):.3f}")
            del M
        yd = cla.zeros(q, 8, np.float64)
        empty, _ = rounds_of(lambda yd=yd: (cl.enqueue_fill_buffer(q, yd.data, np.float64(0), 0, 8),
                                      q.finish()), None, args.rounds)
        print(f"  empty command + finish {med(empty):.3f} ms; load {os.getloadavg()[0]:.2f}")
        mkl.close()
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(results, fh)


if __name__ == "__main__":
    main()
