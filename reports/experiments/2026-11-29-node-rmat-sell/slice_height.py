"""sell's and pjds's slices of C = 16 rows (the SIMD width, as the library builds them) against
C = 8 (clspmv.formats.sell.slice_height replaced for the conversion), csr-blocks and csr-scalar
beside; kernel us, medians of 11 side-by-side rounds (time_side_by_side).
Usage: python slice_height.py DEVICE DTYPE MATRIX..."""
import sys

import numpy as np

import clspmv
import clspmv.formats.sell as sell_module
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side

device = clspmv.select_device(sys.argv[1])
dtype = sys.argv[2]
print("#", device.name, dtype)
library_height = sell_module.slice_height
for spec in sys.argv[3:]:
    A = resolve(spec).load().tocsr().astype(dtype)
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
    formats = {}
    for name in ("sell", "pjds"):
        formats[f"{name}16"] = clspmv.DeviceMatrix.from_scipy(A, format=name, device=device)
        sell_module.slice_height = lambda layout, itemsize: 8
        try:
            formats[f"{name}8"] = clspmv.DeviceMatrix.from_scipy(A, format=name, device=device)
        finally:
            sell_module.slice_height = library_height
    for name in ("csr-blocks", "csr-scalar"):
        formats[name] = clspmv.DeviceMatrix.from_scipy(A, format=name, device=device)
    us = {k: t.median_ms * 1e3 for k, t in time_side_by_side(formats, x, warmup=3, repeat=11).items()}
    heights = " ".join(f"{k}:C={M.params['slice_height']},limit={M.params['long_rows']}"
                       for k, M in formats.items() if "slice_height" in M.params)
    print(spec, " ".join(f"{k}={v:.0f}" for k, v in us.items()),
          f"sell 16/8={us['sell16'] / us['sell8']:.2f} pjds 16/8={us['pjds16'] / us['pjds8']:.2f}",
          heights, flush=True)
