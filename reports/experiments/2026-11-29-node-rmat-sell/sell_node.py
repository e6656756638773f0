"""sell and pjds variants against the CSR kernels on irregular matrices; kernel ms, medians of
9 side-by-side rounds (device vectors)."""
import sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
dev = clspmv.select_device(sys.argv[1])
print("#", dev.name, "units", dev.cl_device.max_compute_units)
VARIANTS = {
    "sell": ("sell", {}), "sell-rows": ("sell", {"slice_items": False}),
    "sell-nospread": ("sell", {"spread": False}), "sell-nolong": ("sell", {"long_rows": None}),
    "pjds": ("pjds", {}), "pjds-rows": ("pjds", {"slice_items": False}),
    "csr-scalar": ("csr-scalar", {}), "csr-blocks": ("csr-blocks", {}), "csr-merge": ("csr-merge", {}),
}
for spec in sys.argv[2:]:
    A = resolve(spec).load().tocsr().astype(np.float64)
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    ms = {}
    for name, (fmt, params) in VARIANTS.items():
        try:
            ms[name] = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, **params)
        except Exception as e:  # noqa: BLE001
            print("  ", name, "refused:", str(e)[:80])
    info = {k: dict(M.params) for k, M in ms.items() if k.startswith("sell") or k.startswith("pjds")}
    t = time_side_by_side(ms, x, warmup=3, repeat=9)
    print(spec, "nnz", A.nnz, " ".join(f"{k}={v.median_ms:.3f}" for k, v in t.items()), flush=True)
    print("   params", info, flush=True)
