import time, numpy as np, pyopencl as cl, os
import clspmv
from clspmv.device import select_device
dev = select_device(os.environ.get("DEV", "1:0"))
ctx, q = dev.context, dev.queue
src = """
__kernel void rsum(__global const double *restrict a, const long per, __global double *out) {
  const long g = get_global_id(0); const long b = g * per; double s0=0,s1=0,s2=0,s3=0;
  for (long i = b; i < b + per; i += 4) { s0 += a[i]; s1 += a[i+1]; s2 += a[i+2]; s3 += a[i+3]; }
  out[g] = s0+s1+s2+s3; }
__kernel void triad(__global const double *restrict a, __global const double *restrict b, __global double *restrict c, const long per) {
  const long g = get_global_id(0); const long s = g * per;
  for (long i = s; i < s + per; ++i) c[i] = a[i] * 2.0 + b[i]; }
"""
prg = cl.Program(ctx, src).build()
n = 8 << 20  # 64 MB
a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 8); cl.enqueue_fill_buffer(q, a, np.float64(1), 0, n * 8)
b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 8); cl.enqueue_fill_buffer(q, b, np.float64(1), 0, n * 8)
c = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, n * 8); cl.enqueue_fill_buffer(q, c, np.float64(1), 0, n * 8)
for items in (2, 4, 16, 64, 256):
    out = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, items * 8)
    ts = []
    for _ in range(15):
        t0 = time.perf_counter(); prg.rsum(q, (items,), (1,), a, np.int64(n // items), out); q.finish(); ts.append(time.perf_counter() - t0)
    tt = []
    for _ in range(15):
        t0 = time.perf_counter(); prg.triad(q, (items,), (1,), a, b, c, np.int64(n // items)); q.finish(); tt.append(time.perf_counter() - t0)
    print(f"items {items:4d}: read {n*8/min(ts)/1e9:6.1f} GB/s (median {n*8/np.median(ts)/1e9:5.1f}); triad 3x64MB {3*n*8/min(tt)/1e9:6.1f} GB/s (median {3*n*8/np.median(tt)/1e9:5.1f})")
A = np.ones(n); B = np.ones(n); C = np.empty(n)
ts = []
for _ in range(15):
    t0 = time.perf_counter(); A.sum(); ts.append(time.perf_counter() - t0)
tt = []
for _ in range(15):
    t0 = time.perf_counter(); np.multiply(A, 2.0, out=C); C += B; tt.append(time.perf_counter() - t0)
print(f"numpy 1 thread read {n*8/min(ts)/1e9:.1f} GB/s; triad-ish (2 passes, 5x64MB) {5*n*8/min(tt)/1e9:.1f}")
