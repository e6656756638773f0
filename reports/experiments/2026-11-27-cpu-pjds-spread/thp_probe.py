"""Kernel time of one format with x (and y) in PoCL's own buffers vs numpy arrays (huge pages or not)."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cl_array
import clspmv
from clspmv.bench.generators import generate
from clspmv.cover import matrix_ns

def anon_huge():
    tot = 0
    for line in open('/proc/self/smaps_rollup'):
        if line.startswith('AnonHugePages'): tot = int(line.split()[1])
    return tot // 1024

dev = clspmv.select_device(sys.argv[1])
for case in sys.argv[2:]:
    spec, _, fmt = case.rpartition('@')
    A = generate(spec)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
    q = dev.queue
    n, m = A.shape[1], A.shape[0]
    xs = np.random.default_rng(0).random(n)
    h0 = anon_huge()
    np.core.multiarray._set_madvise_hugepage(True)
    xh = xs.copy(); yh = np.zeros(m); xh2 = xs.copy(); yh2 = np.zeros(m)
    h1 = anon_huge()
    np.core.multiarray._set_madvise_hugepage(False)
    xn = xs.copy(); yn = np.zeros(m)
    xn2 = xs.copy(); yn2 = np.zeros(m)
    np.core.multiarray._set_madvise_hugepage(True)
    def wrap(dev, a, w):
        fl = cl.mem_flags.USE_HOST_PTR | (cl.mem_flags.READ_WRITE if w else cl.mem_flags.READ_ONLY)
        return cl_array.Array(q, a.shape, a.dtype, data=cl.Buffer(dev.context, fl, hostbuf=a))
    variants = {
        'pocl': (cl_array.to_device(q, xs), cl_array.zeros(q, m, np.float64)),
        'np-huge': (wrap(dev, xh, False), wrap(dev, yh, True)),
        'np-4k': (wrap(dev, xn, False), wrap(dev, yn, True)),
        'pocl2': (cl_array.to_device(q, xs), cl_array.zeros(q, m, np.float64)),
        'np-huge2': (wrap(dev, xh2, False), wrap(dev, yh2, True)),
        'np-4k2': (wrap(dev, xn2, False), wrap(dev, yn2, True)),
    }
    samples = {k: [] for k in variants}
    for r in range(12):
        for k, (x, y) in variants.items():
            samples[k].append(matrix_ns(M, lambda: M.matvec(x, y))[0] / 1e6)
    med = {k: np.median(v[2:]) for k, v in samples.items()}
    print(f"{spec}@{fmt} nnz={A.nnz/1e6:.1f}M x={n*8/1e6:.0f}MB hugeMB {h0}->{h1}->{anon_huge()}  " +
          "  ".join(f"{k} {v:.3f}" for k, v in med.items()) + f"  huge/pocl {med['np-huge']/med['pocl']:.3f} 4k/pocl {med['np-4k']/med['pocl']:.3f}", flush=True)
    del M, variants
