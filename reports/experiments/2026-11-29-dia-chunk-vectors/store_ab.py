"""dia's row chunks with the sums written through the array (committed) or stored as vectors
with alpha and beta applied (VECTOR_STORE); kernel us, medians of 11 rounds."""
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
        ms = {"array": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True),
              "vstore": clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev, row_chunks=True)}
        defines = ms["vstore"]._fmt.defines
        ms["vstore"]._fmt.defines = lambda d=defines: {**d(), "VECTOR_STORE": 1}
        ms["vstore"]._fmt.prepare_kernels()
        y0 = np.random.default_rng(1).uniform(-1, 1, A.shape[0]).astype(dtype)
        err = []
        for M in ms.values():
            y = M.matvec(x, y0.copy(), alpha=1.5, beta=-0.5)
            err.append(float(np.abs(y - (1.5 * ref - 0.5 * y0)).max() / np.abs(ref).max()))
            err.append(float(np.abs(M @ x - ref).max() / np.abs(ref).max()))
        t = time_side_by_side(ms, x, warmup=3, repeat=11)
        print(f"{spec} {dtype} " + " ".join(f"{k}={v.median_ms*1e3:.0f}" for k, v in t.items()),
              f"array/vstore={t['array'].median_ms/t['vstore'].median_ms:.2f} err={' '.join(f'{e:.0e}' for e in err)}", flush=True)
