import sys, numpy as np, pyopencl.array as cl_array, clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import convert, format_class
from clspmv.precision import resolve as prec_of
dev = clspmv.select_device(sys.argv[1])
for dt in (np.float64, np.float32):
    p = prec_of(dt, dt)
    for name in ("gen:random:n=100000,k=10", "gen:powerlaw:n=100000,k=12,local=0.3,seed=11"):
        a = canonical_csr(resolve(name).load(), dt)
        f1 = convert(a, "csr-blocks", format_class("csr-blocks").layout_for(dev), p); f1.upload(dev)
        f2 = convert(a, "csr-blocks", format_class("csr-blocks").layout_for(dev), p); f2.upload(dev)
        f2._kernel = f2.kernel("exp_before.cl", "csr_blocks_spmv", wg=1, UNROLL=1, **f2.long_row_defines())
        x = cl_array.to_device(dev.queue, np.random.default_rng(0).uniform(-1, 1, a.shape[1]).astype(dt))
        ys = []
        for f in (f1, f2):
            y = cl_array.zeros(dev.queue, a.shape[0], dt); f.launch(dev.queue, x.data, y.data, dt(1), dt(0)); ys.append(y.get())
        print(sys.argv[1], dt.__name__, name, "bit-identical:", np.array_equal(ys[0], ys[1]))
