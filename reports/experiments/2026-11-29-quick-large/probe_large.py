"""Measure the quick probes plus big (beyond-cache) probe matrices on a device; save JSON."""
import json, sys, time
import numpy as np, pyopencl.array as cl_array
from clspmv.device import select_device
from clspmv.precision import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.quick import measure_quick
from clspmv.model.probes import kernel_times, REPEATS
from clspmv.model.features import refusal, features, with_exact_diagonals
import sys as _sys, pathlib as _pl
_sys.path.insert(0, str(_pl.Path(__file__).parent))
from large_mats import big_matrices

dev = select_device(sys.argv[1]); out = sys.argv[2]; rows = int(sys.argv[3]) if len(sys.argv) > 3 else 1 << 19
prec = resolve(np.float64, np.float64)
t0 = time.perf_counter()
probes, feats = measure_quick(dev, prec)
tq = time.perf_counter() - t0
names = ["csr-scalar", "csr-blocks", "csr-merge", "ellr", "pjds", "sell", "hyb", "coo"]
big = {}
for key, m in big_matrices(rows).items():
    csr = canonical_csr(m, prec.value)
    f = with_exact_diagonals(features(csr, dev.simd_width), csr)
    up, conv = {}, {}
    t1 = time.perf_counter()
    for n in names:
        if refusal(n, f) is not None:
            continue
        own = {"long_rows": 0} if getattr(FORMAT_CLASSES[n], "splits_long_rows", False) else {}
        t = time.perf_counter()
        fmt = convert(csr, n, FORMAT_CLASSES[n].layout_for(dev), prec, owned=False, **own)
        fmt.upload(dev); dev.queue.finish()
        conv[n] = time.perf_counter() - t
        up[n] = fmt
    x = cl_array.to_device(dev.queue, np.ones(csr.shape[1], prec.value))
    y = cl_array.zeros(dev.queue, csr.shape[0], prec.value)
    kt = kernel_times(up, x, y, REPEATS)
    big[key] = {"nnz": int(csr.nnz), "kernel_s": kt, "conversion_s": conv,
                "seconds": time.perf_counter() - t1}
    print(key, csr.nnz, {k: round(v * 1e3, 3) for k, v in kt.items()}, round(time.perf_counter() - t1, 2), "s", flush=True)
json.dump({"device": dev.name, "quick": probes.to_json(), "quick_s": tq, "rows": rows, "big": big}, open(out, "w"), indent=1)
print("quick", round(tq, 2), "s")
