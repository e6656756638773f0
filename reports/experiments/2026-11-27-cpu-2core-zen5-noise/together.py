import sys, time, numpy as np, pyopencl.array as cl_array, clspmv
from clspmv.bench.sources import resolve_all
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.matrix import canonical_csr
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve
spec, names = sys.argv[1], sys.argv[2].split(",")
dev = clspmv.select_device("1:0"); prec = resolve("float64", np.float64)
t0 = time.time(); csr = canonical_csr(resolve_all([spec], progress=False)[0].load(), prec.value); print("gen", round(time.time()-t0,1), "s", csr.nnz, flush=True)
x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
def up(n):
    f = convert(csr, n, FORMAT_CLASSES[n].layout_for(dev), prec, owned=False); f.upload(dev); return f
for it in range(2):
    u = {n: up(n) for n in names}
    s = kernel_times(u, x, y, 5); del u
    print(it, "together ", " ".join(f"{n}={s[n]*1e3:.2f}" for n in names), flush=True)
    sep = {}
    for n in names:
        f = up(n); sep[n] = kernel_times({n: f}, x, y, 5)[n]; del f
    print(it, "separately", " ".join(f"{n}={sep[n]*1e3:.2f}" for n in names), flush=True)
