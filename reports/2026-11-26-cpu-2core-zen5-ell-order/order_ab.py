"""hyb, ell and ellr in the ELL order the device's calibration measured (``new``: the layout's
row_major_width) against the order of ROW_MAJOR_WIDTH (``old``: row-major from 10 slots), with
HYB's counterparts (tools/irregular_targets.py's HYB_COUNTERPARTS: ell, ellr, csr-scalar,
csr-vector, csr-adaptive) and csr-blocks, side by side (clspmv.bench.timing.time_side_by_side,
median of 5 rounds after 2 warm-ups, kernel ms). Prints per matrix the times, HYB over its better
counterpart in each order, and each format's old/new ratio.

    python order_ab.py DEVICE SPEC ...
"""

import sys

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.ell_order import ROW_MAJOR_WIDTH
from clspmv.errors import UnsuitableFormatError

ORDERED = ("hyb", "ell", "ellr")
OTHERS = ("csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks")
dev = clspmv.select_device(sys.argv[1])
width = clspmv.formats.FORMAT_CLASSES["ellr"].layout_for(dev).row_major_width
print(f"# {dev}: row-major from {width} slots (new) against {ROW_MAJOR_WIDTH} (old)")
for spec in sys.argv[2:]:
    A = resolve(spec, progress=False).load().tocsr()
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    mats, same = {}, []
    for f in ORDERED:
        try:
            new = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
        except UnsuitableFormatError:
            continue
        mats[f"{f} new"] = new
        k = new.params["width"]
        if bool(new.params["row_major"]) == (k >= ROW_MAJOR_WIDTH):
            same.append(f)  # both orders agree: one matrix times both
        else:
            mats[f"{f} old"] = clspmv.DeviceMatrix.from_scipy(
                A, format=f, device=dev, row_major=k >= ROW_MAJOR_WIDTH)
    for f in OTHERS:
        mats[f] = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
    t = {k: v.median_ms for k, v in time_side_by_side(mats, x, warmup=2, repeat=5).items()}
    for f in same:
        t[f"{f} old"] = t[f"{f} new"]
    widths = {f: mats[f"{f} new"].params["width"] for f in ORDERED if f"{f} new" in mats}

    def hyb_ratio(which: str) -> float:
        parts = [t[f"{f} {which}"] for f in ("ell", "ellr") if f"{f} {which}" in t]
        return t[f"hyb {which}"] / min(parts + [t[f] for f in OTHERS[:3]])
    print(spec, A.nnz, "widths", widths, " ".join(f"{k}={v:.2f}" for k, v in t.items()))
    print("    hyb/counterpart old", f"{hyb_ratio('old'):.2f}", "new", f"{hyb_ratio('new'):.2f}",
          " old/new:", " ".join(f"{f}={t[f'{f} old'] / t[f'{f} new']:.2f}" for f in widths),
          flush=True)
