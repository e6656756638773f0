"""dia, csr-blocks and ellr kernel times (side by side) on 2-D Poisson matrices of 0.1-10 M entries: entries per second."""
import sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
dev = clspmv.select_device(sys.argv[1]); print("#", dev.name)
for k in (150, 250, 450, 700, 1000, 1400):
    A = resolve(f"gen:poisson2d:k={k}").load().tocsr(); x = np.random.default_rng(0).random(A.shape[1])
    ms = {f: clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev) for f in ("dia", "csr-blocks", "ellr")}
    t = {f: v.median_ms * 1e3 for f, v in time_side_by_side(ms, x, warmup=3, repeat=11).items()}
    mb = (A.nnz * 8 + 2 * A.shape[0] * 8) / 1e6
    print(f"k={k} nnz={A.nnz/1e6:.2f}M dia-bytes={mb:.1f}MB", " ".join(f"{f}={v:.0f}us ({A.nnz/v/1e3:.2f} Gent/s)" for f, v in t.items()), flush=True)
