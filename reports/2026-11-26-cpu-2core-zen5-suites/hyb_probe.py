"""hyb with its default width and layout against widths 4, 9, 16 in both layouts (row_major),
ellr and ell in both layouts (where they accept the matrix), csr-blocks and coo, side by side on
a CPU device (kernel ms, median of 5 rounds after 2 warm-ups). Usage: python hyb_probe.py
DEVICE SPEC ..."""

import sys

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.errors import UnsuitableFormatError

dev = clspmv.select_device(sys.argv[1])
for spec in sys.argv[2:]:
    A = resolve(spec, progress=False).load().tocsr()
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    mats = {"hyb": clspmv.DeviceMatrix.from_scipy(A, format="hyb", device=dev)}
    print(spec, A.nnz, mats["hyb"].params)
    for w in (4, 9, 16):
        for rm in (False, True):
            mats[f"hyb w={w} rm={int(rm)}"] = clspmv.DeviceMatrix.from_scipy(
                A, format="hyb", device=dev, width=w, row_major=rm)
    for f in ("ellr", "ell"):
        for rm in (False, True):
            try:
                mats[f"{f} rm={int(rm)}"] = clspmv.DeviceMatrix.from_scipy(
                    A, format=f, device=dev, row_major=rm)
            except UnsuitableFormatError as err:
                print("   ", f, type(err).__name__)
    for f in ("csr-blocks", "coo"):
        mats[f] = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
    t = time_side_by_side(mats, x, warmup=2, repeat=5)
    print("   ", " ".join(f"{k}={v.median_ms:.2f}" for k, v in t.items()), flush=True)
