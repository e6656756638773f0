"""hyb at several ELL widths beside coo and the CSR kernels, fastest of 7 side by side: python hyb_width.py DEVICE W1,W2,... SPEC..."""
import sys
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.generators import generate
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.precision import resolve as prec_resolve
from clspmv.model.probes import kernel_times
dev = clspmv.select_device(sys.argv[1]); widths = [int(w) for w in sys.argv[2].split(",")]
prec = prec_resolve(np.float64, np.float64)
for spec in sys.argv[3:]:
    A = canonical_csr(generate(spec), np.float64)
    lay = lambda n: FORMAT_CLASSES[n].layout_for(dev)
    up = {n: convert(A, n, lay(n), prec) for n in ("csr-scalar", "csr-blocks", "coo")}
    up["hyb default"] = convert(A, "hyb", lay("hyb"), prec)
    for w in widths:
        up[f"hyb w={w}"] = convert(A, "hyb", lay("hyb"), prec, width=w)
    for f in up.values(): f.upload(dev)
    x = cla.to_device(dev.queue, np.ones(A.shape[1])); y = cla.zeros(dev.queue, A.shape[0], np.float64)
    t = kernel_times(up, x, y, 7)
    b = t["csr-scalar"]
    print(f"{spec} nnz {A.nnz} default width {up['hyb default'].params['width']}: csr-scalar {b*1e3:.3f} ms; " + ", ".join(f"{k} {v/b:.2f}x" for k, v in t.items() if k != "csr-scalar"), flush=True)
