"""csr-blocks with variant kernels against bsr 1x1, in rounds. Args: DEVICE MATRIX VARIANT.cl..."""
import sys
import numpy as np, pyopencl.array as cl_array
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import convert, format_class
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve as prec_of
dev = clspmv.select_device(sys.argv[1]); p = prec_of(np.float64, np.float64)
a = canonical_csr(resolve(sys.argv[2]).load(), np.float64)
lay = lambda f: format_class(f).layout_for(dev)
fm = {"csr-blocks": convert(a, "csr-blocks", lay("csr-blocks"), p), "bsr1": convert(a, "bsr", lay("bsr"), p, block_size=1)}
for v in sys.argv[3:]:
    fm[v] = convert(a, "csr-blocks", lay("csr-blocks"), p)
for f in fm.values(): f.upload(dev)
for v in sys.argv[3:]:
    f = fm[v]; f._kernel = f.kernel(v, "csr_blocks_spmv", wg=1, UNROLL=1, **f.long_row_defines())
x = cl_array.to_device(dev.queue, np.random.default_rng(0).random(a.shape[1])); y = cl_array.zeros(dev.queue, a.shape[0], np.float64)
ref = None
for k, f in fm.items():
    f.launch(dev.queue, x.data, y.data, np.float64(1), np.float64(0)); r = y.get()
    ref = r if ref is None else ref; assert np.allclose(r, ref), k
best = {}
for _ in range(7):
    for k, t in kernel_times(fm, x, y, 10).items(): best.setdefault(k, []).append(t)
print(sys.argv[2], {k: f"{np.min(v)*1e3:.3f}/{np.median(v)*1e3:.3f}" for k, v in best.items()})
