"""sell and pjds on rows with hubs: default layout against forced deal (spread=True) and smaller
work-groups (slices per work-group), kernel time over csr-blocks' (kernel_times in rounds,
fastest of 3 passes)."""
import sys, dataclasses, numpy as np, scipy.sparse as sp
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
mats = {f"powerlaw cap {c}": powerlaw(1 << 19, c) for c in (512, 4096, 32768)}
for n in sys.argv[2:]:
    mats[n] = source(n).load()
print(f"# {dev.name} ({dev.compute_units} units)")
for n, A in mats.items():
    csr = canonical_csr(A, np.float64)
    rl = np.diff(csr.indptr)
    fm = {"csr-blocks": convert(csr, "csr-blocks", format_class("csr-blocks").layout_for(dev), prec)}
    for k in ("sell", "pjds"):
        lay = format_class(k).layout_for(dev)
        c = lay.simd_width
        fm[k] = convert(csr, k, lay, prec)
        fm[f"{k} dealt"] = convert(csr, k, lay, prec, spread=True)
        fm[f"{k} undealt"] = convert(csr, k, lay, prec, spread=False)
        for wg in (c, 4 * c):
            small = dataclasses.replace(lay, work_group_size=wg)
            fm[f"{k} wg{wg // c}"] = convert(csr, k, small, prec)
            fm[f"{k} wg{wg // c} dealt"] = convert(csr, k, small, prec, spread=True)
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
    best = {}
    for _ in range(3):
        for k, v in kernel_times(fm, x, y, 5).items(): best[k] = min(v, best.get(k, v))
    b = best["csr-blocks"]
    print(f"{n[:40]:40s} nnz {csr.nnz/1e6:5.2f}M maxrow {rl.max():6d} csr-blocks {b*1e3:.3f} ms sigma {fm['sell'].params.get('sigma')} spread {fm['sell'].params.get('spread')}/{fm['pjds'].params.get('spread')}", flush=True)
    print("    " + " ".join(f"{k}={best[k]/b:.2f}" for k in fm if k != "csr-blocks"), flush=True)
    del fm
