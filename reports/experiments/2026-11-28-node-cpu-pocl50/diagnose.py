"""Where a CPU product's time goes under one OpenCL implementation: per matrix and format the
product from device arrays and from numpy arrays (the fastest and the median of --repeats), the
device's host-pointer facts, and the same products with the work of one format split over more
work-items. Run on the GPU node's Xeon under Debian's PoCL 5.0 (see summary.txt)."""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyopencl.array as cla

import clspmv
from clspmv.bench.sources import resolve_all


def timed(call, queue, repeats: int) -> tuple[float, float]:
    """Fastest and median milliseconds of ``call`` followed by a finish, after two warm-ups."""
    for _ in range(2):
        call()
        queue.finish()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        queue.finish()
        out.append((time.perf_counter() - t0) * 1e3)
    return min(out), float(np.median(out))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("matrices", nargs="+")
    p.add_argument("--formats", default="dia,ellr,csr-blocks,csr-scalar,csr-merge")
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=15)
    args = p.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"device {dev.name} driver {dev.driver_version} CUs {dev.compute_units} "
          f"host_memory {dev.host_memory} shares_host_pointer {dev.shares_host_pointer} "
          f"POCL env {[(k, v) for k, v in os.environ.items() if k.startswith('POCL')]}",
          flush=True)
    for source in resolve_all(args.matrices, progress=False):
        A = source.load().tocsr()
        x = np.random.default_rng(0).random(A.shape[1])
        xd = cla.to_device(dev.queue, x)
        yd = cla.zeros(dev.queue, A.shape[0], np.float64)
        for f in args.formats.split(","):
            try:
                M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
            except Exception as e:  # noqa: BLE001 - a format that refuses is reported
                print(f"{source.name} {f}: {type(e).__name__}", flush=True)
                continue
            d = timed(lambda M=M, xd=xd, yd=yd: M.matvec(xd, yd), dev.queue, args.repeats)
            n = timed(lambda M=M, x=x: M.matvec(x), dev.queue, args.repeats)
            assert np.allclose(M.matvec(x), A @ x)
            print(f"{source.name} nnz {A.nnz} {f:11s} device arrays min {d[0]:8.3f} med "
                  f"{d[1]:8.3f} ms | numpy min {n[0]:8.3f} med {n[1]:8.3f} ms", flush=True)
            del M


if __name__ == "__main__":
    main()
