"""pjds (and sell) with the slices dealt over the work-groups and in sorted order, side by side.

python spread_ab.py DEVICE SPEC|suite:NAME ...   (under flock /tmp/clspmv-measure.lock on a shared machine)

Per matrix: kernel ms (median of 9 interleaved rounds, each the least of 3 products, clspmv.cover's timing) of pjds dealt
(spread=True) and sorted (spread=False), what the default chose (spread_order's rule), sell likewise where its default
deals, and csr-blocks beside; every product checked against scipy first."""
import sys

import numpy as np
import pyopencl.array as cl_array
import scipy.io
import scipy.sparse as sp

import clspmv
from clspmv.bench.generators import generate
from clspmv.bench.suites import SUITES, shared_matrices
from clspmv.cover import matrix_ns

dev = clspmv.select_device(sys.argv[1])
print(dev, flush=True)
specs = []
for a in sys.argv[2:]:
    specs += list(SUITES[a[6:]]) if a.startswith("suite:") else [a]
for spec in specs:
    A = generate(spec) if spec.startswith("gen:") else scipy.io.mmread(shared_matrices() / spec)
    A = sp.csr_matrix(A, dtype=np.float64)
    Ms, default = {}, {}
    for f in ("pjds", "sell"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
        default[f] = M.params["spread"]
        if f == "pjds" or default[f]:
            Ms[f + "/dealt"] = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev, spread=True)
            Ms[f + "/sorted"] = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev, spread=False)
    Ms["csr-blocks"] = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev)
    x = cl_array.to_device(dev.queue, np.random.default_rng(0).random(A.shape[1]))
    y = cl_array.zeros(dev.queue, A.shape[0], np.float64)
    ref = A @ x.get()
    for k, M in Ms.items():
        M.matvec(x, y)
        assert np.abs(y.get() - ref).max() < 1e-8 * (1 + np.abs(ref).max()), k
    samples = {k: [] for k in Ms}
    for _ in range(9):
        for k, M in Ms.items():
            samples[k].append(min(matrix_ns(M, lambda: M.matvec(x, y))[0] for _ in range(3)) / 1e6)
    med = {k: float(np.median(v)) for k, v in samples.items()}
    gains = "  ".join(f"{f} sorted/dealt {med[f + '/sorted'] / med[f + '/dealt']:.2f} (default "
                      f"{'dealt' if default[f] else 'sorted'})" for f in ("pjds", "sell") if f + "/dealt" in med)
    print(f"{spec[:55]:55s} nnz {A.nnz / 1e6:6.2f}M  " + "  ".join(f"{k} {v:.3f}" for k, v in med.items())
          + "  | " + gains, flush=True)
    del Ms
