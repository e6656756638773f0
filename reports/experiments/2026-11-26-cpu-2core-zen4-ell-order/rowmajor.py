import sys, numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.generators import generate
from clspmv.matrix import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.precision import resolve
from clspmv.model.probes import kernel_times
dev = clspmv.select_device(sys.argv[1])
prec = resolve(np.float64, np.float64)
for spec in sys.argv[2:]:
    csr = canonical_csr(generate(spec), np.float64)
    fm = {}
    for name, kw in (("ellr", {}), ("ellr-rowmajor", {"row_major": True}), ("ell", {}), ("ell-rowmajor", {"row_major": True}), ("csr-blocks", {}), ("sell", {})):
        base = name.split("-rowmajor")[0]
        fm[name] = convert(csr, base, FORMAT_CLASSES[base].layout_for(dev), prec, **kw)
        fm[name].upload(dev)
    x = cla.to_device(dev.queue, np.ones(csr.shape[1])); y = cla.zeros(dev.queue, csr.shape[0], np.float64)
    t = kernel_times(fm, x, y, 9)
    print(spec, csr.nnz, ' '.join(f"{k}={v*1e3:.2f}" for k, v in t.items()), flush=True)
