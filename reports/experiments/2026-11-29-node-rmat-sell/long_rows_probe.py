"""Kernel ms of sell and pjds with long-row limits (auto, 16384, 4096, 1024) beside the CSR kernels,
side by side in rounds. Usage: long_rows_probe.py DEVICE SPEC..."""
import sys
import numpy as np
import clspmv
import pyopencl.array as cl_array
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve as resolve_precision
dev = clspmv.select_device(sys.argv[1])
prec = resolve_precision(np.float64, np.float64)
for spec in sys.argv[2:]:
    A = canonical_csr(resolve(spec).load(), np.float64)
    fmts = {}
    for name in ("csr-blocks", "csr-merge"):
        f = convert(A, name, FORMAT_CLASSES[name].layout_for(dev), prec, owned=False); f.upload(dev); fmts[name] = f
    for name in ("sell", "pjds"):
        for lim in ("auto", 16384, 4096, 1024):
            f = convert(A, name, FORMAT_CLASSES[name].layout_for(dev), prec, owned=False, long_rows=lim); f.upload(dev)
            fmts[f"{name}:{lim}({f.params.get('long_rows')})"] = f
    x = cl_array.to_device(dev.queue, np.ones(A.shape[1]))
    y = cl_array.zeros(dev.queue, A.shape[0], np.float64)
    t = kernel_times(fmts, x, y, 9)
    print(f"{spec} nnz {A.nnz/1e6:.2f}M max {np.diff(A.indptr).max()}: " + " ".join(f"{k}={v*1e3:.3f}" for k, v in t.items()), flush=True)
