"""How the host waits for a product's kernels on a CPU device, side by side (issue 44, H44):
``M.matvec(x)`` (numpy x in, new y out) with clspmv's wait (``clWaitForEvents``: the host
thread sleeps until the device signals) against polling the last event's status, with and
without ``sched_yield`` between polls; one product of each per round, the order rotating,
medians (and the kernel events' time) over ``--rounds``::

    python sync_wait.py --device 1:0 --rounds 101 gen:poisson2d:k=450:dia gen:stencil27:k=70:dia
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyopencl as cl

import clspmv
from clspmv import host_buffers
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns

WAITS = {
    "wait_for_events": None,  # clspmv's own sync_back
    "poll": lambda ev: ev.command_execution_status,
    "poll+yield": lambda ev: (os.sched_yield(), ev.command_execution_status)[1],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("cases", nargs="+", help="MATRIX:FORMAT")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--rounds", type=int, default=101)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    own = host_buffers.sync_back
    print(f"{dev.name} ({dev.platform}); shares host pointer: {dev.shares_host_pointer}; load "
          f"{os.getloadavg()[0]:.2f}")

    def polling(status):
        def sync(device, y_dev, events):
            while status(events[-1]) != cl.command_execution_status.COMPLETE:
                pass
        return sync

    for case in args.cases:
        spec, fmt = case.rsplit(":", 1)
        A = canonical_csr(resolve_all([spec], progress=False)[0].load(), np.dtype(np.float64))
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
        ref = A @ x
        names = list(WAITS)
        wall = {n: [] for n in names}
        kern = {n: [] for n in names}
        for r in range(-3, args.rounds):
            shift = r % len(names)
            for name in names[shift:] + names[:shift]:
                host_buffers.sync_back = own if WAITS[name] is None else polling(WAITS[name])
                t0 = time.perf_counter_ns()
                y = M.matvec(x)
                t = (time.perf_counter_ns() - t0) / 1e3
                host_buffers.sync_back = own
                if r >= 0:
                    wall[name].append(t)
                    kern[name].append(events_ns(M.last_events) / 1e3)
                elif not np.allclose(y, ref):
                    raise SystemExit(f"{name}: wrong product")
        print(f"{spec} {fmt} ({A.nnz / 1e6:.2f} M entries), microseconds, medians of "
              f"{args.rounds}: " + " | ".join(
                  f"{n} {np.median(wall[n]):.0f} (kernel {np.median(kern[n]):.0f})"
                  for n in names) + f"; load {os.getloadavg()[0]:.2f}")
        del M


if __name__ == "__main__":
    main()
