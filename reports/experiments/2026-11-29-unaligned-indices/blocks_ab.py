"""csr-blocks unrolled (UNROLL 4, 8) with LOAD_INDICES new vs old (NO_UNALIGNED_INDICES), side by side."""
import sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
dev = clspmv.select_device(sys.argv[1]); print("#", dev.name)
for spec in sys.argv[3:]:
    base = resolve(spec).load().tocsr()
    for dtype in sys.argv[2].split(","):
        A = base.astype(dtype); x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        ms = {}
        for u in (4, 8):
            ms[f"u{u}-new"] = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev, unroll=u)
            old = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev, unroll=u)
            d = old._fmt.defines
            old._fmt.defines = lambda d=d: {**d(), "NO_UNALIGNED_INDICES": 1}
            old._fmt.prepare_kernels(); ms[f"u{u}-old"] = old
        err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max()) for M in ms.values())
        t = {k: v.median_ms * 1e3 for k, v in time_side_by_side(ms, x, warmup=3, repeat=11).items()}
        print(f"{spec} {dtype} " + " ".join(f"{k}={v:.0f}" for k, v in t.items()),
              f"u4 old/new={t['u4-old']/t['u4-new']:.3f} u8 old/new={t['u8-old']/t['u8-new']:.3f} err={err:.0e}", flush=True)
