"""PoCL per-command latency: a tiny kernel, event timestamps against the host's wall clock."""
import sys, time
import numpy as np, pyopencl as cl
import clspmv
dev = clspmv.select_device(sys.argv[1])
ctx, q = dev.context, dev.queue
prg = cl.Program(ctx, "__kernel void k(__global double *y, int n){int i=get_global_id(0); if(i<n) y[i]=2.0*y[i];}").build()
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * n)
k = prg.k
rows = []
for r in range(60):
    t0 = time.perf_counter_ns()
    e = k(q, ((n + 127) // 128 * 128,), (128,), y, np.int32(n))
    t1 = time.perf_counter_ns()
    e.wait()
    t2 = time.perf_counter_ns()
    p = e.profile
    rows.append((t1 - t0, t2 - t0, p.submit - p.queued, p.start - p.submit, p.end - p.start))
a = np.array(rows[10:]) / 1e3
for name, col in zip(["enqueue", "wall", "queued->submit", "submit->start", "start->end"], a.T):
    print(f"  {name:16s} median {np.median(col):8.1f} us  min {col.min():8.1f}")
print("  wall - (end-start) median", np.median(a[:, 1] - a[:, 4]))
