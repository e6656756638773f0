"""dia's CPU kernels side by side: a work-item per row (rows), row chunks without CHUNK_VW (the
array of sums: old, through the kernel's temporary NO_CHUNK_VW switch), row chunks as committed
(vectors); kernel us, medians of 11 rounds (clspmv.bench.timing.time_side_by_side).
Usage: python kernel_ab.py DEVICE DTYPES MATRIX..."""
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
        ms = {"rows": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=False),
              "old": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True),
              "vectors": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True)}
        defines = ms["old"]._fmt.defines
        ms["old"]._fmt.defines = lambda d=defines: {**d(), "NO_CHUNK_VW": 1}
        ms["old"]._fmt.prepare_kernels()
        err = " ".join(f"{float(np.abs(M @ x - ref).max() / np.abs(ref).max()):.0e}" for M in ms.values())
        t = time_side_by_side(ms, x, warmup=3, repeat=11)
        print(f"{spec} {dtype} nnz={A.nnz} " + " ".join(f"{k}={v.median_ms*1e3:.0f}" for k, v in t.items()),
              f"old/vectors={t['old'].median_ms/t['vectors'].median_ms:.2f}",
              f"rows/vectors={t['rows'].median_ms/t['vectors'].median_ms:.2f} err={err}", flush=True)
