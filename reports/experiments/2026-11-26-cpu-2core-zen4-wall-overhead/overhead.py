import time, sys
import numpy as np, scipy.sparse as sp
import pyopencl as cl, pyopencl.array as cla
import clspmv
dev = clspmv.select_device(sys.argv[1])
A = sp.random(2000, 2000, density=0.002, format='csr', random_state=1)
M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[2] if len(sys.argv) > 2 else "csr-scalar", device=dev)
x = np.random.rand(2000); y = np.empty(2000)
xd = cla.to_device(dev.queue, x); yd = cla.empty(dev.queue, 2000, np.float64)
def loop(n, f):
    t = time.perf_counter()
    for _ in range(n): f()
    return (time.perf_counter() - t) / n * 1e6
q = dev.queue
knl_only = lambda: (M.matvec(xd, yd), q.finish())
for r in range(2):
    print('us per call: M@x %.1f  matvec(x,y) %.1f  dev+finish %.1f  finish-only %.1f' % (loop(2000, lambda: M @ x), loop(2000, lambda: M.matvec(x, y)), loop(2000, knl_only), loop(2000, q.finish)))
