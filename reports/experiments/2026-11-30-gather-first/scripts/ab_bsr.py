"""A/B: csr-blocks against bsr 1x1 on random rows, in rounds. Args: DEVICE"""
import sys
import numpy as np, pyopencl.array as cl_array
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import convert, format_class
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve as prec_of
dev = clspmv.select_device(sys.argv[1]); p = prec_of(np.float64, np.float64)
for name in sys.argv[2:]:
    a = canonical_csr(resolve(name).load(), np.float64)
    lay = lambda f: format_class(f).layout_for(dev)
    fm = {"csr-blocks": convert(a, "csr-blocks", lay("csr-blocks"), p),
          "csr-blocks owned": convert(canonical_csr(a, np.float64).copy(), "csr-blocks", lay("csr-blocks"), p, owned=True),
          "csr-blocks nolong": convert(a, "csr-blocks", lay("csr-blocks"), p, long_rows=0),
          "bsr1": convert(a, "bsr", lay("bsr"), p, block_size=1),
          "csr-scalar": convert(a, "csr-scalar", lay("csr-scalar"), p)}
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, np.random.default_rng(0).random(a.shape[1])); y = cl_array.zeros(dev.queue, a.shape[0], np.float64)
    best = {}
    for _ in range(7):
        for k, t in kernel_times(fm, x, y, 10).items(): best.setdefault(k, []).append(t)
    print(name, a.nnz, {k: f"{np.min(v)*1e3:.3f}/{np.median(v)*1e3:.3f}" for k, v in best.items()}, {k: v.params for k, v in fm.items() if k.startswith("bsr") or k == "csr-blocks"})
