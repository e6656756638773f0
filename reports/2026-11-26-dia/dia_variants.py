"""Throwaway probe (not kept as code: the kernel variants were probe options in dia.cl on the
working tree of 83f0115): DIA's forward kernel built with each set of probe options, side by
side with ellr and ell; kernel us, median of the rounds; the largest error against scipy.
  base: every work-item walks every diagonal with a bounds test and a branch on zero values
  runs: GROUP_RUNS (the work-group's run of diagonals only)
  bl:   PROBE_BRANCHLESS (x index clamped, padding read as the zeros it holds, a select)
  u4/u8: PROBE_UNROLL (#pragma unroll)
Usage: python dia_variants.py DEVICE SPEC ..."""

from __future__ import annotations

import sys
import time

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side

VARIANTS = {"base": {}, "runs": {"GROUP_RUNS": 1}, "bl": {"PROBE_BRANCHLESS": 1},
            "bl-u4": {"PROBE_BRANCHLESS": 1, "PROBE_UNROLL": 4},
            "bl-u8": {"PROBE_BRANCHLESS": 1, "PROBE_UNROLL": 8},
            "u4": {"PROBE_UNROLL": 4},
            "bl-u4-runs": {"PROBE_BRANCHLESS": 1, "PROBE_UNROLL": 4, "GROUP_RUNS": 1}}


def main() -> None:
    dev = clspmv.select_device(sys.argv[1])
    print(f"# {dev.name}: kernel us, median of 15 side-by-side rounds")
    for spec in sys.argv[2:]:
        base = resolve(spec).load().tocsr()
        for dtype in ("float32", "float64"):
            t0 = time.time()
            A = base.astype(dtype)
            x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = A @ x
            matrices = {}
            for name, defines in VARIANTS.items():
                M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, group_runs=False)
                M._fmt._kernel = M._fmt.kernel(M._fmt.kernel_file, "dia_spmv", **defines)
                matrices[name] = M
            for fmt in ("ellr", "ell"):
                matrices[fmt] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
            err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max())
                      for M in matrices.values())
            times = time_side_by_side(matrices, x, warmup=3, repeat=15)
            cells = " ".join(f"{k}={v.median_ms * 1e3:.1f}" for k, v in times.items())
            print(f"{dtype} {spec} {cells} maxerr={err:.1e} [{time.time() - t0:.0f}s]",
                  flush=True)


if __name__ == "__main__":
    main()
