"""The calibration's ELL order probe (clspmv.model.order_probe.measure_ell_order) run RUNS times
on a device, float64: each run's seconds, width and column-/row-major kernel ms per probed width;
``--save`` stores the last run as the device's order (clspmv.ell_order.save), as a calibration
would.

    python probe_runs.py DEVICE RUNS [--save]
"""

import sys
import time

import numpy as np

import clspmv
from clspmv import ell_order
from clspmv.model.order_probe import measure_ell_order
from clspmv.precision import resolve

dev = clspmv.select_device(sys.argv[1])
print(f"# {dev}")
for _ in range(int(sys.argv[2])):
    t0 = time.perf_counter()
    order = measure_ell_order(dev, resolve(np.float64, np.float64))
    print(f"{time.perf_counter() - t0:.2f} s: row-major from {order.row_major_width} slots;",
          " ".join(f"{w}: {c * 1e3:.3f}/{r * 1e3:.3f} ({r / c:.2f})"
                   for w, (c, r) in order.times.items()), flush=True)
if "--save" in sys.argv:
    print("saved", ell_order.save(dev, order))
