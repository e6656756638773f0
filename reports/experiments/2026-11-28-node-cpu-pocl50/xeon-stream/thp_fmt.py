import time, sys, numpy as np, os, warnings
warnings.simplefilter("ignore")
import clspmv, pyopencl.array as cla
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
dev = select_device(os.environ.get("DEV", "1:0"))
spec = sys.argv[1]; fmts = sys.argv[2].split(",")
A = resolve_all([spec], progress=False)[0].load().tocsr()
x = np.random.default_rng(0).random(A.shape[1])
xd = cla.to_device(dev.queue, x); yd = cla.zeros(dev.queue, A.shape[0], np.float64)
Ms = {}
for f in fmts:
    for thp in (True, False):
        np.core.multiarray._set_madvise_hugepage(thp)
        Ms[(f, thp)] = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
np.core.multiarray._set_madvise_hugepage(True)
flush = np.ones(64 << 20)
for mode in ("warm", "cold"):
    t = {k: [] for k in Ms}
    for _ in range(11):
        for k, M in Ms.items():
            if mode == "cold": flush += 1
            else: M.matvec(xd, yd); dev.queue.finish()
            t0 = time.perf_counter(); M.matvec(xd, yd); dev.queue.finish(); t[k].append(time.perf_counter() - t0)
    for k in Ms:
        print(f"{spec} {mode} {k[0]:10s} madvise {str(k[1]):5s} min {min(t[k])*1e3:.3f} med {np.median(t[k])*1e3:.3f} ms")
