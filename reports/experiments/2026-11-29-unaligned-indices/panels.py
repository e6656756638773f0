"""Column panels: is A @ x faster as a sum of column-panel products (x panel fits L2)?"""
import sys, time
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.device import select_device
from clspmv.bench.generators import generate

spec = sys.argv[1]
fmts = sys.argv[2].split(",")
panels_list = [int(p) for p in sys.argv[3].split(",")]
reps = 15
dev = select_device("1:0")
q = dev.queue
A = generate(spec).tocsr()
m, n = A.shape
x = np.random.default_rng(0).random(n)
yref = A @ x
res = {}
def build(fmt, P):
    cuts = np.linspace(0, n, P + 1).astype(int)
    mats, xs = [], []
    for c0, c1 in zip(cuts[:-1], cuts[1:]):
        B = A[:, c0:c1].tocsr()
        mats.append(clspmv.DeviceMatrix.from_scipy(B, format=fmt, device=dev))
        xs.append(cla.to_device(q, np.ascontiguousarray(x[c0:c1])))
    return mats, xs
def run(mats, xs, y):
    for i, (M, xp) in enumerate(zip(mats, xs)):
        M.matvec_checked(xp, y, np.float64(1.0), np.float64(0.0 if i == 0 else 1.0))
    q.finish()
setups = {}
for fmt in fmts:
    for P in panels_list:
        setups[(fmt, P)] = build(fmt, P)
y = cla.zeros(q, m, np.float64)
for key, (mats, xs) in setups.items():
    run(mats, xs, y)
    err = np.abs(y.get() - yref).max() / np.abs(yref).max()
    assert err < 1e-12, (key, err)
times = {k: [] for k in setups}
for r in range(reps):
    for key, (mats, xs) in setups.items():
        run(mats, xs, y)
        t = time.perf_counter()
        for _ in range(3):
            run(mats, xs, y)
        times[key].append((time.perf_counter() - t) / 3)
for key in setups:
    print(spec, key[0], key[1], "%.3f ms" % (1e3 * np.median(times[key])))
