"""coo against csr-blocks, csr-scalar and hyb side by side on a CPU device (kernel ms, median of
5 rounds after 2 warm-ups). Usage: python coo_ab.py DEVICE SPEC ..."""

import sys

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side

dev = clspmv.select_device(sys.argv[1])
for spec in sys.argv[2:]:
    A = resolve(spec, progress=False).load().tocsr()
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    mats = {f: clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
            for f in ("coo", "csr-blocks", "csr-scalar", "hyb")}
    t = time_side_by_side(mats, x, warmup=2, repeat=5)
    best = min(t["csr-blocks"].median_ms, t["csr-scalar"].median_ms)
    cells = " ".join(f"{k}={v.median_ms:.2f}" for k, v in t.items())
    print(spec, A.nnz, cells, f"coo/csr={t['coo'].median_ms / best:.2f}", flush=True)
