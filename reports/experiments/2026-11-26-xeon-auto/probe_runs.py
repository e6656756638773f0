"""The ELL order probe three times on a device: per width row-major / column-major, the rule's width, seconds."""
import sys, time, json
import numpy as np
from clspmv.device import select_device
from clspmv.model.order_probe import measure_ell_order
from clspmv.precision import resolve
dev = select_device(sys.argv[1])
for run in range(int(sys.argv[2]) if len(sys.argv) > 2 else 3):
    t0 = time.perf_counter()
    o = measure_ell_order(dev, resolve(np.float64, np.float64))
    s = time.perf_counter() - t0
    print(f"run {run}: {s:.2f} s, row-major from {o.row_major_width}: " + " ".join(f"{w}:{r / c:.2f}" for w, (c, r) in sorted(o.times.items())), flush=True)
