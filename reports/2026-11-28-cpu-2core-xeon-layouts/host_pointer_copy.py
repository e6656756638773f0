"""What Intel's runtime does with a numpy x not aligned to 128 bytes (issue 44, H44).

Part 1: seconds to make a CL_MEM_USE_HOST_PTR buffer on an array of the matrix's column count
at several alignments (a copy shows as milliseconds). Part 2: alternating rounds of format=auto's
product from the numpy x as numpy allocates it, from the same x copied to a page-aligned array
(once, and before every product into the same array), and MKL's optimised handle; medians and
minima::

    python host_pointer_copy.py --device 1:0 --rounds 21 gen:poisson2d:k=1000 \\
        gen:random:n=400000,k=10
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pyopencl as cl

import clspmv
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr


def aligned_copy(a: np.ndarray, align: int, past: int = 0) -> np.ndarray:
    """A copy of ``a`` starting ``past`` bytes after a multiple of ``align``."""
    raw = np.empty(a.nbytes + align + past, np.uint8)
    off = (-raw.ctypes.data) % align + past
    out = raw[off:off + a.nbytes].view(a.dtype)
    out[:] = a
    return out


def ms(call, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def side_by_side(A, x: np.ndarray, dev: clspmv.Device, rounds: int) -> None:
    """Alternating rounds of auto's product from numpy's x and from a page-aligned copy, and
    MKL's optimised handle; prints the table."""
    M = clspmv.DeviceMatrix.from_scipy(A, device=dev)
    xa = aligned_copy(x, 4096)
    mkl = OptimisedMkl(A, expected_calls=rounds + 3)
    out = np.empty(A.shape[0])
    staged = aligned_copy(x, 4096)

    def stage_then_multiply():
        np.copyto(staged, x)
        return M.matvec(staged)
    calls = {"auto, numpy's x": lambda: M.matvec(x),
             "auto, x page-aligned": lambda: M.matvec(xa),
             "auto, x copied into a reused aligned array first": stage_then_multiply,
             "MKL optimised": lambda: mkl.matvec(x, out)}
    samples = {n: [] for n in calls}
    names = list(calls)
    for r in range(-3, rounds):
        for n in names[r % len(names):] + names[:r % len(names)]:
            t = ms(calls[n], 1)[0]
            if r >= 0:
                samples[n].append(t)
    mkl.close()
    print(f"\nauto = {M.format}; load {os.getloadavg()[0]:.2f}\n"
          "| product | median ms | min ms | MKL ÷ it (median) |\n|---|---|---|---|")
    base = np.median(samples["MKL optimised"])
    for n, s in samples.items():
        print(f"| {n} | {np.median(s):.3f} | {min(s):.3f} | {base / np.median(s):.2f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("matrix", nargs="+")
    ap.add_argument("--device", default="1:0")
    ap.add_argument("--rounds", type=int, default=21)
    args = ap.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"{dev} {dev.driver_version}; load {os.getloadavg()[0]:.2f}")
    flags = cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR
    for source in resolve_all(args.matrix, progress=False):
        A = canonical_csr(source.load()).astype(np.float64)
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        print(f"\n{source.name}: {A.nnz / 1e6:.2f} M entries, x {x.nbytes / 2**20:.1f} MiB at "
              f"{x.ctypes.data % 4096} bytes past a page")
        print("| x starts | buffer creation median ms |\n|---|---|")
        for align, past in ((4096, 16), (4096, 32), (4096, 64), (4096, 128), (4096, 0)):
            xa = aligned_copy(x, align, past)
            made = ms(lambda xa=xa: cl.Buffer(dev.context, flags, hostbuf=xa), args.rounds)
            print(f"| {past} bytes past a page | {np.median(made):.3f} |")
        side_by_side(A, x, dev, args.rounds)

if __name__ == "__main__":
    main()
