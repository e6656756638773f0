"""In a row vs after a 64 MB flush vs after a pause: clspmv formats and MKL optimised, numpy to numpy."""
import sys, time
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.mkl_optimised import OptimisedMkl
from threadpoolctl import threadpool_limits
import sparse_dot_mkl  # noqa

spec, formats = sys.argv[1], sys.argv[2].split(",")
A = resolve(spec).load().tocsr().astype(np.float64)
x = np.random.default_rng(0).random(A.shape[1])
big_a = np.ones(8 << 20); big_b = np.empty_like(big_a)
threadpool_limits(2)
contestants = {f: clspmv.DeviceMatrix.from_scipy(A, format=f, device="1:0") for f in formats}
mkl = OptimisedMkl(A, expected_calls=1000)
ymkl = np.empty(A.shape[0])





calls = {f: (lambda M=M: M.matvec(x)) for f, M in contestants.items()}
calls["mkl-opt"] = lambda: mkl.matvec(x, ymkl)
for c in calls.values():
    c(); c()
def flush():
    np.copyto(big_b, big_a)
res = {k: {"row": [], "flush": [], "pause": [], "flush+pause": []} for k in calls}
from clspmv.device import events_ns
kres = {k: {"row": [], "flush": [], "pause": [], "flush+pause": []} for k in contestants}
def kt(k, mode):
    if k in contestants:
        kres[k][mode].append(events_ns(contestants[k].last_events) * 1e-9)
for rnd in range(15):
    for k, c in calls.items():
        for _ in range(3):
            t = time.perf_counter(); c(); res[k]["row"].append(time.perf_counter() - t); kt(k, "row")
        flush(); t = time.perf_counter(); c(); res[k]["flush"].append(time.perf_counter() - t); kt(k, "flush")
        time.sleep(0.005); t = time.perf_counter(); c(); res[k]["pause"].append(time.perf_counter() - t); kt(k, "pause")
        flush(); time.sleep(0.005); t = time.perf_counter(); c(); res[k]["flush+pause"].append(time.perf_counter() - t); kt(k, "flush+pause")
print(spec, A.nnz)
print(f"{'':12s}" + "".join(f"{m:>14s}" for m in res[next(iter(res))]))
for k, r in res.items():
    print(f"{k:12s}" + "".join(f"{np.median(v)*1e3:14.3f}" for v in r.values()))
for k, r in kres.items():
    print(f"{k+' kern':12s}" + "".join(f"{np.median(v)*1e3:14.3f}" for v in r.values()))
