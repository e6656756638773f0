"""sell and pjds on rows with hubs at several long-row limits (rows beyond go to the COO tail):
kernel seconds in rounds (clspmv.model.probes.kernel_times, fastest of 3 passes), against
csr-blocks. Limits: nnz / (compute units * k) for several k, and the default ("auto")."""
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
mats = {f"powerlaw cap {c}": powerlaw(1 << 19, c) for c in (4096, 32768)}
for n in sys.argv[2:]:
    mats[n] = source(n).load()
KS = (16, 64, 256, 1024)
cu = dev.compute_units
print(f"# {dev.name} ({cu} units)")
for n, A in mats.items():
    csr = canonical_csr(A, np.float64)
    rl = np.diff(csr.indptr)
    fm = {"csr-blocks": convert(csr, "csr-blocks", format_class("csr-blocks").layout_for(dev), prec)}
    info = {}
    for k in ("sell", "pjds"):
        lay = format_class(k).layout_for(dev)
        fm[k] = convert(csr, k, lay, prec)
        info[k] = fm[k].params.get("long_rows"), fm[k].params.get("spread")
        for q in KS:
            lim = max(64, csr.nnz // (cu * q))
            fm[f"{k}@{q}"] = convert(csr, k, lay, prec, long_rows=lim)
            info[f"{k}@{q}"] = lim, int((rl > lim).sum()), round(float(rl[rl > lim].sum()) / csr.nnz, 3), fm[f"{k}@{q}"].params.get("spread")
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
    best = {}
    for _ in range(3):
        for k, v in kernel_times(fm, x, y, 5).items(): best[k] = min(v, best.get(k, v))
    b = best["csr-blocks"]
    print(f"{n[:40]:40s} nnz {csr.nnz/1e6:5.2f}M maxrow {rl.max():6d} csr-blocks {b*1e3:.3f} ms", flush=True)
    for k in fm:
        if k != "csr-blocks":
            print(f"    {k:10s} {best[k]/b:5.2f}  {info[k]}", flush=True)
    del fm
