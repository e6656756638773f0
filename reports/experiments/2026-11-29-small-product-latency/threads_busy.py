"""Products queued back to back (no wait between them): wall per product and the process's CPU time over
wall time (PoCL's worker threads are threads of this process), for dia and csr-blocks on two Poisson matrices."""
import sys, time, resource
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.sources import resolve
dev = clspmv.select_device("1:0"); q = dev.queue
for f in ("dia", "csr-blocks"):
  for k in (250, 450):
    A = resolve(f"gen:poisson2d:k={k}").load().tocsr()
    M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
    x = cla.to_device(q, np.random.default_rng(0).random(A.shape[1])); y = cla.zeros(q, A.shape[0], np.float64)
    one, zero = np.float64(1), np.float64(0)
    for _ in range(10): M.matvec_checked(x, y, one, zero)
    q.finish()
    r0 = resource.getrusage(resource.RUSAGE_SELF); t = time.perf_counter()
    N = 400; kt = 0
    for _ in range(N):
        ev = M.matvec_checked(x, y, one, zero)
    q.finish()
    wall = time.perf_counter() - t; r1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    print(f"{f} k={k}: wall per product {wall/N*1e6:.0f} us, cpu/wall {cpu/wall:.2f}, user {r1.ru_utime-r0.ru_utime:.3f}s sys {r1.ru_stime-r0.ru_stime:.3f}s")
