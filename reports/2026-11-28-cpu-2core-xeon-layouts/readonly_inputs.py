"""M @ x from a numpy x with the input buffer declared read-only (clspmv before 118e9ce) against
read-write (since: read-only only where numpy's array is), alternating rounds on one device.

    python readonly_inputs.py [DEVICE]      # default 1:0; under Intel's runtime, see summary.md
"""
import sys
import time

import numpy as np
import pyopencl as cl

import clspmv
import clspmv.host_buffers as hb
from clspmv.bench.generators import poisson2d


def read_only_wrap(device, a, writable):
    flags = cl.mem_flags.USE_HOST_PTR | (cl.mem_flags.READ_WRITE if writable
                                         else cl.mem_flags.READ_ONLY)
    return hb.HostVector(cl.Buffer(device.context, flags, hostbuf=a), a)


dev = clspmv.select_device(sys.argv[1] if len(sys.argv) > 1 else "1:0")
A = poisson2d(k=1000)
M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev)
x = np.random.default_rng(1).random(A.shape[1])
current = hb.wrap
times = {"read-only x (before)": [], "read-write x (now)": []}
for _ in range(7):
    for name in times:
        hb.wrap = read_only_wrap if "before" in name else current
        M @ x
        start = time.perf_counter()
        for _ in range(20):
            M @ x
        times[name].append((time.perf_counter() - start) / 20 * 1e3)
hb.wrap = current
print(dev.name, dev.driver_version, "- poisson2d k=1000, dia, ms per M @ x, median of 7 rounds:",
      {k: round(float(np.median(v)), 3) for k, v in times.items()})
assert np.abs(M @ x - A @ x).max() <= 1e-12 * np.abs(A @ x).max()
