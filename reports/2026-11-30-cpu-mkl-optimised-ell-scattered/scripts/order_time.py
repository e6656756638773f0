"""The ELL order probe (clspmv.model.order_probe.measure_ell_order) twice on DEVICE: its seconds,
the widths it gives (regular rows, scattered rows), row-major over column-major per width, and
the scattered rows' column-major ms.

    python order_time.py DEVICE
"""
import sys, time, numpy as np
from clspmv.device import select_device
from clspmv.model.order_probe import measure_ell_order
from clspmv.precision import resolve
dev = select_device(sys.argv[1])
p = resolve(np.float64, np.float64)
for _ in range(2):
    t0 = time.perf_counter(); o = measure_ell_order(dev, p); print("%.2f s" % (time.perf_counter() - t0), o.row_major_width, o.scattered_row_major_width)
    print("  regular  ", {w: round(r / c, 2) for w, (c, r) in o.times.items()})
    print("  scattered", {w: round(r / c, 2) for w, (c, r) in o.scattered_times.items()}, {w: round(c*1e3, 2) for w, (c, r) in o.scattered_times.items()})
