import time, sys, numpy as np, os, itertools
import clspmv, pyopencl.array as cla
from clspmv.formats import dia as diam
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
dev = select_device(os.environ.get("DEV", "1:0"))
spec = sys.argv[1]
A = resolve_all([spec], progress=False)[0].load().tocsr()
x = np.random.default_rng(0).random(A.shape[1]); ref = A @ x
xd = cla.to_device(dev.queue, x); yd = cla.zeros(dev.queue, A.shape[0], np.float64)
variants = [(int(a), int(b)) for a, b in (v.split(":") for v in sys.argv[2].split(","))]
Ms = {}
for rc, ipu in variants:
    diam.ROW_CHUNK = rc; diam.CHUNK_ITEMS_PER_UNIT = ipu
    M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev)
    M.matvec(xd, yd); assert np.allclose(yd.get(), ref)
    Ms[(rc, ipu)] = M
inrow = {}
for v, M in Ms.items():
    ts = []
    for _ in range(20):
        t0 = time.perf_counter(); M.matvec(xd, yd); dev.queue.finish(); ts.append(time.perf_counter() - t0)
    inrow[v] = ts
inter = {v: [] for v in Ms}
for _ in range(15):
    for v, M in Ms.items():
        t0 = time.perf_counter(); M.matvec(xd, yd); dev.queue.finish(); inter[v].append(time.perf_counter() - t0)
for v in Ms:
    print(f"chunk {v[0]:5d} items/unit {v[1]:3d}: in a row min {min(inrow[v])*1e3:.3f} med {np.median(inrow[v])*1e3:.3f}  interleaved min {min(inter[v])*1e3:.3f} med {np.median(inter[v])*1e3:.3f}")
