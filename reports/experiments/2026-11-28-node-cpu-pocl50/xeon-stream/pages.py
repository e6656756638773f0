import time, numpy as np, pyopencl as cl, os
from clspmv.device import select_device
dev = select_device(os.environ.get("DEV", "1:0")); ctx, q = dev.context, dev.queue
src = """
__kernel void rsum(__global const double *restrict a, const long per, __global double *out) {
  const long g = get_global_id(0); const long b = g * per; double s0=0,s1=0,s2=0,s3=0;
  for (long i = b; i < b + per; i += 4) { s0 += a[i]; s1 += a[i+1]; s2 += a[i+2]; s3 += a[i+3]; }
  out[g] = s0+s1+s2+s3; }
"""
prg = cl.Program(ctx, src).build(); k = cl.Kernel(prg, "rsum")
n = int(os.environ.get("MB", "64")) << 17
host = np.ones(n)
np.core.multiarray._set_madvise_hugepage(False)
host4k = np.ones(n)
np.core.multiarray._set_madvise_hugepage(True)
bufs = {"numpy 4k USE_HOST_PTR": cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=host4k), "numpy USE_HOST_PTR": cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR, hostbuf=host),
        "PoCL alloc (COPY_HOST_PTR)": cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=host),
        "PoCL alloc (ALLOC_HOST_PTR)": cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.ALLOC_HOST_PTR | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)}
flush = np.ones(128 << 20)  # 1 GB: beyond the 480 MiB L3
items = 32; out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, items * 8)
import re
def huge(a):
    addr = a.ctypes.data
    for block in open("/proc/self/smaps").read().split("\n") and re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", open("/proc/self/smaps").read()):
        lo, hi = (int(v, 16) for v in block.split()[0].split("-"))
        if lo <= addr < hi:
            return re.search(r"AnonHugePages:\s+(\d+)", block).group(1)
print("huge kB: numpy", huge(host), "numpy 4k", huge(host4k))
for mode in ("warm", "cold"):
    t = {b: [] for b in bufs}
    for _ in range(7):
        for name, b in bufs.items():
            if mode == "cold": flush += 1.0
            k(q, (items,), (1,), b, np.int64(n // items), out); q.finish() if mode == "warm" else None
            t0 = time.perf_counter(); k(q, (items,), (1,), b, np.int64(n // items), out); q.finish(); t[name].append(time.perf_counter() - t0) if mode == "warm" else None
            if mode == "cold":
                flush += 1.0
                t0 = time.perf_counter(); k(q, (items,), (1,), b, np.int64(n // items), out); q.finish(); t[name].append(time.perf_counter() - t0)
    for name in bufs:
        print(f"{mode} {name:28s} min {n*8/min(t[name])/1e9:5.1f} med {n*8/np.median(t[name])/1e9:5.1f} GB/s")
