"""dia with a work-item per row (row_chunks=False) against its row chunks (True) and csr-blocks:
kernel seconds in rounds (clspmv.model.probes.kernel_times, the fastest of three passes), and
each layout's product against scipy (max |y - ref| / max |ref|).

    python kernel_ab.py DEVICE DTYPE MATRIX..."""
import sys, numpy as np
import clspmv, pyopencl.array as cl_array
from clspmv.formats import convert, format_class
from clspmv.model.probes import kernel_times
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.precision import resolve as presolve
dev = clspmv.select_device(sys.argv[1]); dt = np.dtype(sys.argv[2])
prec = presolve(dt, dt)
for n in sys.argv[3:]:
    A = resolve(n).load().tocsr().astype(dt)
    xs = np.random.default_rng(0).random(A.shape[1]).astype(dt)
    ref = A @ xs
    errs = []
    for rc in (False, True):
        M = clspmv.DeviceMatrix.from_scipy(A, device=dev, format="dia", row_chunks=rc)
        y = M @ xs
        errs.append(float(np.max(np.abs(y - ref)) / np.max(np.abs(ref))))
    csr = canonical_csr(A, dt)
    lay = format_class("dia").layout_for(dev)
    fm = {"rows": convert(csr, "dia", lay, prec, row_chunks=False), "chunks": convert(csr, "dia", lay, prec, row_chunks=True),
          "csr-blocks": convert(csr, "csr-blocks", format_class("csr-blocks").layout_for(dev), prec)}
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, xs); y = cl_array.zeros(dev.queue, csr.shape[0], dt)
    best = {}
    for rep in range(3):
        for k, v in kernel_times(fm, x, y, 5).items(): best[k] = min(v, best.get(k, v))
    print(f"{n[:44]:44s} {dt} diags {fm['rows'].params['n_diags']:3d} nnz {A.nnz/1e6:.1f}M", " ".join(f"{k}={v*1e3:.3f}" for k, v in best.items()), f"rows/chunks={best['rows']/best['chunks']:.2f} err={errs[0]:.0e},{errs[1]:.0e}", flush=True)
