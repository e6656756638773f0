"""The host's share of a small product ``M.matvec(x)`` (numpy x in, new y out) on a CPU device:
medians over ``--rounds`` calls in a row of each piece, microseconds, and a cProfile of the
numpy path's Python functions (cumulative time per product)::

    python host_overhead.py --device 1:0 gen:poisson2d:k=450 dia
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns


def us(call, rounds: int) -> float:
    for _ in range(3):
        call()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1e3)
    return float(np.median(out))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("matrix")
    parser.add_argument("format")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--rounds", type=int, default=201)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    A = canonical_csr(resolve_all([args.matrix], progress=False)[0].load(), np.dtype(np.float64))
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, format=args.format, device=dev)
    q = dev.queue
    xd, yd = cla.to_device(q, x), cla.zeros(q, A.shape[0], np.float64)
    given = np.empty(A.shape[0])
    rw = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
    kernels = []
    for _ in range(args.rounds):
        M.matvec(xd, yd)
        kernels.append(events_ns(M.last_events) / 1e3)
    small = cla.zeros(q, 8, np.float64)
    rows = {
        "kernel events (end - start)": float(np.median(kernels)),
        "M.matvec(x), new y": us(lambda: M.matvec(x), args.rounds),
        "M.matvec(x, y given)": us(lambda: M.matvec(x, given), args.rounds),
        "M.matvec(x_dev, y_dev) + finish": us(lambda: (M.matvec(xd, yd), q.finish()),
                                              args.rounds),
        "matvec_checked(x_dev, y_dev) + wait": us(
            lambda: cl.wait_for_events(M.matvec_checked(xd, yd, np.float64(1), np.float64(0))),
            args.rounds),
        "empty command (fill 8 bytes) + finish": us(
            lambda: (cl.enqueue_fill_buffer(q, small.data, np.float64(0), 0, 8), q.finish()),
            args.rounds),
        "USE_HOST_PTR buffer on x, made and freed": us(
            lambda: cl.Buffer(dev.context, rw, hostbuf=x).release(), args.rounds),
    }
    print(f"{dev.name} ({dev.platform}); {args.matrix} ({A.nnz / 1e6:.2f} M entries), "
          f"{args.format}; medians of {args.rounds}, microseconds")
    for name, value in rows.items():
        print(f"  {name:42s} {value:8.1f}")
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(args.rounds):
        M.matvec(x)
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(14)
    print(f"cProfile of {args.rounds} numpy products (tottime: the function's own time):")
    print("\n".join(text.getvalue().splitlines()[4:]))


if __name__ == "__main__":
    main()
