"""Where a product's time goes on one device (issue 44, H44): numpy x in and a new y, numpy x
and a given y, device arrays (then finish), the kernels' event times, making a USE_HOST_PTR
buffer on numpy's x, and an empty command::

    python product_overhead.py gen:poisson2d:k=700 dia
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns


def timed(call, count: int = 30) -> str:
    for _ in range(3):
        call()
    out = []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return f"{np.median(out):.3f} (min {min(out):.3f})"


def main() -> None:
    dev = clspmv.select_device("1:0")
    A = canonical_csr(resolve_all([sys.argv[1]], progress=False)[0].load()).astype(np.float64)
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[2], device=dev)
    q = dev.queue
    xd, yd = cla.to_device(q, x), cla.zeros(q, A.shape[0], np.float64)
    given = np.empty(A.shape[0])
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
    print(dev.name, dev.platform, f"x at {x.ctypes.data % 4096} bytes past a page")
    print("numpy x, new y        ", timed(lambda: M.matvec(x)))
    print("numpy x, given y      ", timed(lambda: M.matvec(x, given)))
    print("device x, y + finish  ", timed(lambda: (M.matvec(xd, yd), q.finish())))
    kernels = []
    for _ in range(20):
        M.matvec(xd, yd)
        q.finish()
        kernels.append(events_ns(M.last_events) / 1e6)
    print(f"kernels (events)       {np.median(kernels):.3f} (min {min(kernels):.3f})")
    print("USE_HOST_PTR buffer, x", timed(lambda: cl.Buffer(dev.context, flags, hostbuf=x)))
    print("empty command + finish", timed(
        lambda: (cl.enqueue_fill_buffer(q, yd.data, np.float64(0), 0, 8), q.finish())))


if __name__ == "__main__":
    main()
