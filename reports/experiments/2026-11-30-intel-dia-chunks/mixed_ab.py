"""dia in dtype="mixed" (float32 values, float64 sums): M @ x wall time, a work-item per row
against the row chunks (the fastest of 7 alternating products), and the error against float64.

    python mixed_ab.py DEVICE MATRIX..."""
import sys, time, numpy as np, clspmv
from clspmv.bench.sources import resolve
dev = clspmv.select_device(sys.argv[1])
for n in sys.argv[2:]:
    A = resolve(n).load().tocsr().astype(np.float32)
    x = np.random.default_rng(0).random(A.shape[1]).astype(np.float32)
    Ms = {rc: clspmv.DeviceMatrix.from_scipy(A, device=dev, format="dia", dtype="mixed", row_chunks=rc) for rc in (False, True)}
    xd = {rc: M.to_device(x) if hasattr(M, "to_device") else x for rc, M in Ms.items()}
    best = {}
    for rep in range(7):
        for rc, M in Ms.items():
            t = time.perf_counter(); M @ x; best[rc] = min(best.get(rc, 9), time.perf_counter() - t)
    ref = A.astype(np.float64) @ x.astype(np.float64)
    err = [float(np.max(np.abs(Ms[rc] @ x - ref)) / np.max(np.abs(ref))) for rc in (False, True)]
    print(n[:40], f"mixed rows={best[False]*1e3:.3f} chunks={best[True]*1e3:.3f} rows/chunks={best[False]/best[True]:.2f} err={err}")
