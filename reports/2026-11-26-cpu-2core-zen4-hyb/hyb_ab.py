"""hyb as committed before (ELL width: a third of the rows reach it; column-major) against the new default on CPUs
(three quarters in float64; row-major from 10 slots), beside csr-scalar, csr-blocks and coo: fastest of 7 products,
side by side (clspmv.model.probes.kernel_times), float64.  python hyb_ab.py DEVICE SPEC..."""
import sys
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.generators import generate
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.precision import resolve as prec_resolve
from clspmv.model.probes import kernel_times
from clspmv.stats import hyb_width
dev = clspmv.select_device(sys.argv[1])
prec = prec_resolve(np.float64, np.float64)
for spec in sys.argv[2:]:
    A = canonical_csr(generate(spec), np.float64)
    lay = lambda n: FORMAT_CLASSES[n].layout_for(dev)
    up = {n: convert(A, n, lay(n), prec) for n in ("csr-scalar", "csr-blocks", "coo")}
    old_k = hyb_width(np.diff(A.indptr))
    up["hyb before"] = convert(A, "hyb", lay("hyb"), prec, width=old_k, row_major=False)
    up["hyb now"] = convert(A, "hyb", lay("hyb"), prec)
    for f in up.values(): f.upload(dev)
    x = cla.to_device(dev.queue, np.ones(A.shape[1])); y = cla.zeros(dev.queue, A.shape[0], np.float64)
    t = kernel_times(up, x, y, 7)
    b = t["csr-scalar"]
    new = up["hyb now"].params
    print(f"{spec:48s} nnz {A.nnz:9d} K {old_k:3d} -> {new['width']:3d}{' row-major' if new['row_major'] else ''}: csr-scalar {b*1e3:8.3f} ms; "
          + ", ".join(f"{k} {v/b:.2f}x" for k, v in t.items() if k != "csr-scalar") + f"; hyb now/before {t['hyb now']/t['hyb before']:.2f}", flush=True)
