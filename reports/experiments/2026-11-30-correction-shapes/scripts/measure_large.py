"""Time formats on the quick calibration's large probes and candidate wide ones (kernel_times in
rounds, fastest of 3 passes). Args: DEVICE OUT.json"""
import json, sys
import numpy as np, pyopencl.array as cl_array
import clspmv
from clspmv.canonical import canonical_csr
from clspmv.formats import convert, format_class
from clspmv.model.benchmarks import _from_lengths
from clspmv.model.probes import REPEATS, kernel_times
from clspmv.model.quick_large import large_probe_matrices
from clspmv.precision import resolve
dev = clspmv.select_device(sys.argv[1])
mats = dict(large_probe_matrices(dev.simd_width, dev.compute_units))
m = next(iter(mats.values())).shape[0]
rng = np.random.default_rng(19)
mats["large-wide"] = _from_lengths(np.full(m // 4, 32, np.int64), m // 4, 96, rng)
mats["large-wide64"] = _from_lengths(np.full(m // 8, 64, np.int64), m // 8, 160, rng)
F = ("csr-blocks", "csr-scalar", "sell", "pjds", "ellr", "dia", "hyb", "csr-merge")
prec = resolve(np.float64, np.float64)
out = {}
for k, a in mats.items():
    a = canonical_csr(a, np.float64)
    fm = {}
    for f in F:
        cls = format_class(f)
        own = {"long_rows": 0} if getattr(cls, "splits_long_rows", False) else {}
        try:
            fm[f] = convert(a, f, cls.layout_for(dev), prec, **own); fm[f].upload(dev)
        except Exception as e:
            print(k, f, "skip", type(e).__name__)
    x = cl_array.to_device(dev.queue, np.ones(a.shape[1])); y = cl_array.zeros(dev.queue, a.shape[0], np.float64)
    best = {}
    for _ in range(3):
        for f, t in kernel_times(fm, x, y, REPEATS).items():
            best[f] = min(t, best.get(f, t))
    for f, t in best.items():
        out[f"{k}/{f}"] = t
    print(k, a.nnz, {f: round(t * 1e3, 3) for f, t in best.items()}, flush=True)
    del fm
json.dump(out, open(sys.argv[2], "w"), indent=1)
