"""dia's CPU kernels side by side: a work-item per row (rows), row chunks with sums in an array
(chunks), row chunks with sums in vector registers (vectors); kernel us, median of 11 rounds."""
import sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
dev = clspmv.select_device(sys.argv[1])
dtypes = sys.argv[2].split(",")
print("#", dev.name)
for spec in sys.argv[3:]:
    base = resolve(spec).load().tocsr()
    for dtype in dtypes:
        A = base.astype(np.float32 if dtype == "mixed" else dtype)
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(A.dtype)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        kw = {"dtype": "mixed"} if dtype == "mixed" else {}
        ms = {"rows": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=False, **kw),
              "chunks": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True, **kw),
              "vectors": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True, chunk_vectors=True, **kw)}
        err = " ".join(f"{float(np.abs(M @ x - ref).max() / np.abs(ref).max()):.0e}" for M in ms.values())
        t = time_side_by_side(ms, x, warmup=3, repeat=11)
        print(f"{spec} {dtype} nnz={A.nnz} " + " ".join(f"{k}={v.median_ms*1e3:.0f}" for k, v in t.items()),
              f"chunks/vectors={t['chunks'].median_ms/t['vectors'].median_ms:.2f}",
              f"rows/vectors={t['rows'].median_ms/t['vectors'].median_ms:.2f} err={err}", flush=True)
