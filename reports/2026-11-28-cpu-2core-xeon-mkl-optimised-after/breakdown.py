"""The timeline of one product ``M.matvec(x)`` (numpy x in, new y out) on a CPU device, from the
host's clock and the kernel events' profiling times (the same CLOCK_MONOTONIC under PoCL; checked
by a marker's queued time), medians of ``--rounds`` products, in three settings: products in a
row; each right after a product of MKL's optimised handle (whose OpenMP worker then spins a core
for KMP_BLOCKTIME); each after a pause of 250 ms (both cores idle, MKL's worker asleep)::

    python breakdown.py --device 1:0 --rounds 41 gen:poisson2d:k=450 --formats dia,ellr,csr-blocks
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyopencl as cl

import clspmv
from clspmv.bench import baselines
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr

PHASES = ("host to queued", "queued to submit", "submit to start", "kernels", "end to return",
          "whole")


def timeline(M: clspmv.DeviceMatrix, x: np.ndarray, before, rounds: int) -> dict[str, float]:
    """Median microseconds of each phase of ``rounds`` products (after 3 untimed), ``before``
    called ahead of each."""
    rows = []
    for r in range(-3, rounds):
        before()
        t0 = time.perf_counter_ns()
        M.matvec(x)
        t1 = time.perf_counter_ns()
        evs = M.last_events
        cl.wait_for_events(evs)
        queued = min(e.profile.queued for e in evs)
        submit = min(e.profile.submit for e in evs)
        start = min(e.profile.start for e in evs)
        end = max(e.profile.end for e in evs)
        if r >= 0:
            rows.append((queued - t0, submit - queued, start - submit, end - start, t1 - end,
                         t1 - t0))
    med = np.median(np.array(rows, dtype=np.float64), axis=0) / 1e3
    return dict(zip(PHASES, med.tolist(), strict=True))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--rounds", type=int, default=41)
    parser.add_argument("--formats", default="dia,ellr,csr-blocks")
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    baselines.mkl_threads_set(2)
    t0 = time.perf_counter_ns()
    marker = cl.enqueue_marker(dev.queue)
    marker.wait()
    print(f"{dev.name} ({dev.platform}); a marker queued {(marker.profile.queued - t0) / 1e3:.1f}"
          f" us after the host's clock read (same clock if small); load {os.getloadavg()[0]:.2f}")
    for source in resolve_all(args.matrices, progress=False):
        A = canonical_csr(source.load(), np.dtype(np.float64))
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        mkl = OptimisedMkl(A, expected_calls=100000)
        out = np.empty(A.shape[0])
        settings = {"in a row": lambda: None,
                    "after MKL": lambda mkl=mkl, x=x, out=out: mkl.matvec(x, out),
                    "after 250 ms idle": lambda: time.sleep(0.25)}
        print(f"\n{source.name} ({A.nnz / 1e6:.2f} M entries), microseconds (medians): "
              + " | ".join(PHASES))
        mkl_row = []
        for name, before in settings.items():
            ts = []
            for r in range(-3, args.rounds):
                before()
                s = time.perf_counter_ns()
                mkl.matvec(x, out)
                if r >= 0:
                    ts.append((time.perf_counter_ns() - s) / 1e3)
            mkl_row.append(f"{name} {np.median(ts):.0f}")
        print("  MKL optimised alone: " + ", ".join(mkl_row))
        for f in args.formats.split(","):
            M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
            for name, before in settings.items():
                t = timeline(M, x, before, args.rounds)
                print(f"  {f:11s} {name:18s} " + " | ".join(f"{t[p]:7.1f}" for p in PHASES))
            del M
        mkl.close()
        print(f"  load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
