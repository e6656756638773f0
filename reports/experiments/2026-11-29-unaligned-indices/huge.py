"""Does x in huge pages (numpy's madvise) speed up PoCL's gathers of x?"""
import sys, time, ctypes, mmap
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clspmv
from clspmv.device import select_device
from clspmv.bench.generators import generate

spec = sys.argv[1]; fmts = sys.argv[2].split(","); reps = 15
print("numpy hugepage:", np.core.multiarray._get_madvise_hugepage())
dev = select_device("1:0"); q = dev.queue; ctx = q.context
A = generate(spec).tocsr(); m, n = A.shape
x = np.random.default_rng(0).random(n); yref = A @ x
libc = ctypes.CDLL("libc.so.6")
def huge_array(count):
    nbytes = count * 8 + (2 << 20)
    buf = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
    libc.madvise(ctypes.c_void_p(addr), ctypes.c_size_t(nbytes), 14)  # MADV_HUGEPAGE
    arr = np.frombuffer(buf, np.float64, count)
    return arr, buf
xs = {}
xs["pocl"] = cla.to_device(q, x)
hx, _keep = huge_array(n); hx[:] = x
hb = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=hx)
xs["huge-host-ptr"] = cla.Array(q, (n,), np.float64, data=hb)
px = np.empty(n); px[:] = x  # plain numpy (also madvised by numpy if >=4MiB)
pb = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=px)
xs["numpy-host-ptr"] = cla.Array(q, (n,), np.float64, data=pb)
mats = {f: clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev) for f in fmts}
y = cla.zeros(q, m, np.float64)
for f, M in mats.items():
    for k, xa in xs.items():
        M.matvec_checked(xa, y, np.float64(1), np.float64(0)); q.finish()
        assert np.abs(y.get() - yref).max() < 1e-9 * np.abs(yref).max(), (f, k)
times = {(f, k): [] for f in mats for k in xs}
for r in range(reps):
    for (f, k) in times:
        M = mats[f]; xa = xs[k]
        M.matvec_checked(xa, y, np.float64(1), np.float64(0)); q.finish()
        t = time.perf_counter()
        for _ in range(3):
            M.matvec_checked(xa, y, np.float64(1), np.float64(0))
        q.finish()
        times[(f, k)].append((time.perf_counter() - t) / 3)
for key, v in times.items():
    print(spec, *key, "%.3f ms" % (1e3 * np.median(v)))
import subprocess; print(subprocess.run(["grep", "AnonHuge", "/proc/%d/smaps_rollup" % __import__("os").getpid()], capture_output=True, text=True).stdout)
