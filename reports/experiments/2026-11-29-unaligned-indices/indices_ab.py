"""sell's and pjds's slice kernel (a work-item per slice) with the column indices loaded as one
unaligned vector (LOAD_INDICES, kernels_cl/vectors.h: "new") and through vloadC ("old", the
kernel built with -DNO_UNALIGNED_INDICES), side by side; kernel us, medians of 11 rounds
(clspmv.bench.timing.time_side_by_side). A third matrix, csr-blocks (unroll 1: no vector loads,
code unchanged), is the control: its ratio to itself run twice shows the noise.
Usage: python indices_ab.py DEVICE DTYPES MATRIX..."""
import sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side

dev = clspmv.select_device(sys.argv[1])
print("#", dev.name)
for spec in sys.argv[3:]:
    base = resolve(spec).load().tocsr()
    for dtype in sys.argv[2].split(","):
        A = base.astype(dtype)
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        ms = {}
        for fmt in ("sell", "pjds"):
            ms[f"{fmt}-new"] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, slice_items=True)
            old = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, slice_items=True)
            defines = old._fmt.defines
            old._fmt.defines = lambda d=defines: {**d(), "NO_UNALIGNED_INDICES": 1}
            old._fmt.prepare_kernels()
            ms[f"{fmt}-old"] = old
        ms["control-a"] = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev, unroll=1)
        ms["control-b"] = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev, unroll=1)
        err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max()) for M in ms.values())
        t = {k: v.median_ms * 1e3 for k, v in time_side_by_side(ms, x, warmup=3, repeat=11).items()}
        print(f"{spec} {dtype} nnz={A.nnz} " + " ".join(f"{k}={v:.0f}" for k, v in t.items()),
              f"sell old/new={t['sell-old'] / t['sell-new']:.3f}",
              f"pjds old/new={t['pjds-old'] / t['pjds-new']:.3f}",
              f"control a/b={t['control-a'] / t['control-b']:.3f} err={err:.0e}", flush=True)
