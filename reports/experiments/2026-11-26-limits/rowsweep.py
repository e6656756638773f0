"""csr-blocks / ellr / csr-merge / csr-scalar kernel times on in-cache banded matrices of ~1 M entries, row length varied."""
import sys
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.model.benchmarks import _from_lengths
from clspmv.model.probes import kernel_times
from clspmv.formats import convert, FORMAT_CLASSES
from clspmv.precision import resolve
from clspmv.canonical import canonical_csr
dev = clspmv.select_device(sys.argv[1])
entries = int(float(sys.argv[2])) if len(sys.argv) > 2 else 1_000_000
fmts = ["csr-blocks", "csr-scalar", "csr-merge", "ellr", "hyb", "sell"]
prec = resolve(np.float64, np.float64)
rng = np.random.default_rng(1)
print(dev.name, "entries", entries)
print("len   rows   " + " ".join(f"{f:>11s}" for f in fmts) + "   (ms; ns/row of csr-blocks)")
for L in (2, 3, 4, 5, 6, 8, 12, 16, 24):
    m = entries // L
    A = canonical_csr(_from_lengths(np.full(m, L, np.int64), m, 2 * L, rng), np.float64)
    up = {}
    for f in fmts:
        up[f] = convert(A, f, FORMAT_CLASSES[f].layout_for(dev), prec); up[f].upload(dev)
    x = cla.to_device(dev.queue, np.ones(m)); y = cla.zeros(dev.queue, m, np.float64)
    t = kernel_times(up, x, y, 15)
    print(f"{L:3d} {m:7d}  " + " ".join(f"{t[f]*1e3:11.3f}" for f in fmts) + f"   {t['csr-blocks']/m*1e9:.2f}")
