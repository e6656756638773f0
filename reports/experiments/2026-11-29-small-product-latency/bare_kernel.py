import time, numpy as np, pyopencl as cl
p = [p for p in cl.get_platforms() if "Portable" in p.name][0]
d = p.get_devices()[0]
ctx = cl.Context([d]); q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
prg = cl.Program(ctx, "__kernel void k(__global double *y, __global const double *x, int n){int i=get_global_id(0); if(i<n) y[i]=2*x[i];}").build()
k = prg.k
x = np.ones(1 << 16); y = np.empty_like(x)
big_a = np.ones(8 << 20); big_b = np.empty_like(big_a)
ns = time.perf_counter_ns
for mode in ["row", "pause", "flush"]:
    rows = []
    for i in range(60):
        if mode == "pause": time.sleep(0.005)
        if mode == "flush": np.copyto(big_b, big_a)
        t0 = ns()
        bx = cl.Buffer(ctx, cl.mem_flags.USE_HOST_PTR | cl.mem_flags.READ_WRITE, hostbuf=x)
        by = cl.Buffer(ctx, cl.mem_flags.USE_HOST_PTR | cl.mem_flags.READ_WRITE, hostbuf=y)
        t1 = ns()
        k.set_args(by, bx, np.int32(x.size))
        t2 = ns()
        ev = cl.enqueue_nd_range_kernel(q, k, (x.size,), (64,))
        t3 = ns()
        ev.wait()
        t4 = ns()
        rows.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3, (ev.profile.end - ev.profile.start), t4 - t0))
    r = np.median(np.array(rows[5:]), axis=0) / 1e3
    print(f"{mode:6s} buffers {r[0]:7.1f} set_args {r[1]:7.1f} enqueue {r[2]:7.1f} wait {r[3]:7.1f} (kernel {r[4]:7.1f}) total {r[5]:7.1f} us")
