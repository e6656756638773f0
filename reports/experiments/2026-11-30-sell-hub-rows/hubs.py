"""sell, pjds and the CSR kernels on rows of power-law lengths with hub rows of growing size:
kernel seconds in rounds (clspmv.model.probes.kernel_times, fastest of 3 passes)."""
import sys, numpy as np, scipy.sparse as sp
import clspmv, pyopencl.array as cl_array
from clspmv.formats import convert, format_class
from clspmv.model.probes import kernel_times
from clspmv.canonical import canonical_csr
from clspmv.precision import resolve
from clspmv.bench.sources import resolve as source
dev = clspmv.select_device(sys.argv[1]); prec = resolve(np.float64, np.float64)
def powerlaw(rows, cap, seed=17):
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.zipf(2.0, rows) * 3, cap) // 2 + 1
    cols = rng.integers(0, rows, lengths.sum())
    return sp.csr_matrix((np.ones(cols.size), cols, np.r_[0, np.cumsum(lengths)]), shape=(rows, rows))
mats = {f"powerlaw cap {c}": powerlaw(1 << 19, c) for c in (512, 4096, 32768, 1 << 20)}
for n in sys.argv[2:]:
    mats[n] = source(n).load()
names = ("csr-blocks", "csr-merge", "sell", "pjds")
print(f"# {dev.name} ({dev.compute_units} units)")
for n, A in mats.items():
    csr = canonical_csr(A, np.float64)
    fm = {k: convert(csr, k, format_class(k).layout_for(dev), prec) for k in names}
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
    best = {}
    for _ in range(3):
        for k, v in kernel_times(fm, x, y, 5).items(): best[k] = min(v, best.get(k, v))
    rl = np.diff(csr.indptr)
    print(f"{n[:40]:40s} nnz {csr.nnz/1e6:5.2f}M maxrow {rl.max():6d}", " ".join(f"{k}={v*1e3:.3f}" for k, v in best.items()),
          f"sell/csr-blocks={best['sell']/best['csr-blocks']:.2f} pjds/csr-blocks={best['pjds']/best['csr-blocks']:.2f}", flush=True)
