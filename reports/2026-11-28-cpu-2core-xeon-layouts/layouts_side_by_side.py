"""Layouts of one format side by side on one device (issue 44, H44): alternating rounds, medians.

A variant is ``NAME=FORMAT[,key=value...]``: ``simd=N`` gives the format the layout of a device
reporting SIMD width N (``dataclasses.replace`` of the Device), ``wg=N`` its work-group size,
any other key is a format parameter (``row_chunks=0``, ``row_major=1``, ``sigma=1``...). Every
variant is checked against scipy's product first; each round then runs one product of every
variant of a matrix (numpy x in, page-aligned, numpy y out), the order rotating. Prints one
markdown table per matrix (median ms, and each variant's median over the first variant's: above
1 faster; the same of the kernels' event times) and writes every sample as JSON::

    python layouts_side_by_side.py --device 1:0 --rounds 15 --out intel.json \
        --matrix gen:poisson2d:k=700 --variant pocl=dia --variant perrow=dia,row_chunks=0
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import time

import numpy as np

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import events_ns

WARMUP = 3


def page_aligned(a: np.ndarray) -> np.ndarray:
    """A copy of ``a`` starting on a 4096-byte boundary: Intel's runtime copies the memory of a
    CL_MEM_USE_HOST_PTR buffer not aligned to 128 bytes at every product (numpy's large arrays
    start 16 bytes past a page), which would bury the kernels' differences under that copy."""
    raw = np.empty(a.nbytes + 4096, np.uint8)
    off = (-raw.ctypes.data) % 4096
    out = raw[off:off + a.nbytes].view(a.dtype)
    out[:] = a
    return out


def parse_variant(text: str) -> tuple[str, str, dict[str, int]]:
    name, spec = text.split("=", 1)
    fmt, *pairs = spec.split(",")
    return name, fmt, {k: int(v) for k, v in (p.split("=") for p in pairs)}


def build(A, fmt: str, options: dict[str, int], device: clspmv.Device):
    options = dict(options)
    simd = options.pop("simd", None)
    wg = options.pop("wg", None)
    dev = device if simd is None else dataclasses.replace(device, simd_width=simd)
    flags = {k: bool(v) if k in ("row_chunks", "row_major", "diagonal_runs", "spread",
                                 "staged") else v for k, v in options.items()}
    return clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, work_group_size=wg,
                                          **flags)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="1:0")
    ap.add_argument("--matrix", action="append", required=True)
    ap.add_argument("--variant", action="append", required=True)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    device = clspmv.select_device(args.device)
    variants = [parse_variant(v) for v in args.variant]
    print(f"device {device} driver {device.driver_version} simd_width {device.simd_width}; "
          f"load {os.getloadavg()[0]:.2f}")
    records = []
    for source in resolve_all(args.matrix, progress=False):
        A = canonical_csr(source.load()).astype(np.float64)
        x = page_aligned(np.random.default_rng(1).uniform(-1, 1, A.shape[1]))
        ref = A @ x
        scale = abs(A) @ np.abs(x)
        calls, skipped, layouts = {}, {}, {}
        for name, fmt, options in variants:
            try:
                M = build(A, fmt, options, device)
            except Exception as err:  # a format refusing the matrix: say so, go on
                skipped[name] = f"{type(err).__name__}: {str(err)[:120]}"
                continue
            y = M.matvec(x)
            if not np.all(np.abs(y - ref) <= 1e-12 * (scale + 1e-300) * 64):
                raise SystemExit(f"{name} on {source.name}: wrong product")
            calls[name] = M
            layouts[name] = {"simd_width": M._fmt.layout.simd_width,
                             "work_group_size": M.work_group_size,
                             "params": {k: v for k, v in M.params.items()
                                        if isinstance(v, (int, float, str))}}
        load0 = os.getloadavg()[0]
        names = list(calls)
        samples = {n: [] for n in names}
        kernel = {n: [] for n in names}
        for r in range(-WARMUP, args.rounds):
            shift = r % len(names)
            for n in names[shift:] + names[:shift]:
                t0 = time.perf_counter_ns()
                calls[n].matvec(x)
                if r >= 0:
                    samples[n].append((time.perf_counter_ns() - t0) / 1e6)
                    kernel[n].append(events_ns(calls[n].last_events) / 1e6)
        med = {n: float(np.median(s)) for n, s in samples.items()}
        kmed = {n: float(np.median(s)) for n, s in kernel.items()}
        base = med[names[0]]
        load = (load0, os.getloadavg()[0])
        print(f"\n{source.name} ({A.nnz / 1e6:.2f} M entries), load {load[0]:.2f}-{load[1]:.2f}")
        print("| variant | median ms | min ms | × first (above 1: faster) | kernel median ms | "
              "kernel × first |\n|---|---|---|---|---|---|")
        for n in names:
            print(f"| {n} | {med[n]:.3f} | {min(samples[n]):.3f} | {base / med[n]:.2f} | "
                  f"{kmed[n]:.3f} | {kmed[names[0]] / kmed[n]:.2f} |")
        for n, why in skipped.items():
            print(f"| {n} | refused: {why[:60]} | | | | |")
        records.append({"matrix": source.name, "nnz": int(A.nnz), "load": load,
                        "median_ms": med, "samples_ms": samples,
                        "kernel_median_ms": kmed, "kernel_ms": kernel, "skipped": skipped,
                        "layouts": layouts})
        del calls
    with open(args.out, "w") as fh:
        json.dump({"device": str(device), "driver": device.driver_version,
                   "simd_width": device.simd_width, "variants": args.variant,
                   "records": records}, fh, indent=1)


if __name__ == "__main__":
    main()
