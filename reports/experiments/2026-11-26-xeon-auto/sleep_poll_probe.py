"""Waiting for a product: blocking, polling, sleeping for EST_MS then polling or blocking (python sleep_poll_probe.py DEVICE SPEC FORMAT EST_MS)."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cl_array
import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
dev = select_device(sys.argv[1]); A = resolve_all([sys.argv[2]])[0].load()
M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[3], device=dev); q = dev.queue
x = cl_array.to_device(q, np.ones(A.shape[1])); y = cl_array.zeros(q, A.shape[0], np.float64)
COMPLETE = cl.command_execution_status.COMPLETE
est = float(sys.argv[4]) * 1e-3
res = {k: [] for k in ("wait", "poll", "sleep+poll", "sleep+wait")}
kern = {k: [] for k in res}
for r in range(80):
    for how in res:
        q.finish()
        t0 = time.perf_counter()
        evs = M._fmt.launch(q, x.data, y.data, np.float64(1), np.float64(0)) or []
        q.flush()
        if how.startswith("sleep"):
            time.sleep(est)
        if how.endswith("wait"):
            cl.wait_for_events(evs)
        else:
            e = evs[-1]
            while e.command_execution_status != COMPLETE:
                pass
        res[how].append(time.perf_counter() - t0)
        kern[how].append((evs[-1].profile.end - evs[0].profile.start) * 1e-9)
print(sys.argv[2][:30], sys.argv[3], " | ".join(f"{k} {np.median(v)*1e6:.0f} us (kernel {np.median(kern[k])*1e6:.0f}, ratio {np.median(v)/np.median(kern[k]):.3f})" for k, v in res.items()))
