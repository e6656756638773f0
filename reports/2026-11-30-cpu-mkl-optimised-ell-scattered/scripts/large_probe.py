"""Kernel times (the calibration's kernel_times: fastest of 9+ in rounds) of formats converted
for DEVICE, on the quick calibration's large probes or on the matrices named (gen: specs).

    python large_probe.py DEVICE FORMATS PASSES [MATRIX ...]

FORMATS: comma-separated; "ellr:col" / "ellr:row" convert with row_major=False / True. A format
that refuses a matrix (its padding) is left out. Prints one line per matrix and pass, in ms.
"""
import sys, numpy as np
from clspmv.device import select_device
from clspmv.model.quick_large import large_probe_matrices
from clspmv.model.probes import kernel_times, REPEATS
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.canonical import canonical_csr
from clspmv.precision import resolve
import pyopencl.array as cl_array
dev = select_device(sys.argv[1])
prec = resolve(np.float64, np.float64)
mats = large_probe_matrices(dev.simd_width, dev.compute_units)
if len(sys.argv) > 4:
    from clspmv.bench.generators import generate
    mats = {s: generate(s) for s in sys.argv[4:]}
fmts = sys.argv[2].split(",")
for key, A in mats.items():
    A = canonical_csr(A, np.float64)
    x = cl_array.to_device(dev.queue, np.ones(A.shape[1]))
    y = cl_array.zeros(dev.queue, A.shape[0], np.float64)
    for p in range(int(sys.argv[3])):
        up = {}
        for f in fmts:
            try:
                base, _, opt = f.partition(":")
                kw = {"row_major": opt == "row"} if opt else {}
                up[f] = convert(A, base, FORMAT_CLASSES[base].layout_for(dev), prec, owned=False, **kw)
            except Exception:
                continue
            up[f].upload(dev)
        dev.queue.finish()
        t = kernel_times(up, x, y, REPEATS)
        print(key, p, " ".join(f"{f}={v*1e3:.2f}" for f, v in t.items()), flush=True)
