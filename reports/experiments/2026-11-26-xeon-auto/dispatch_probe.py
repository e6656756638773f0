"""PoCL's time around one product: enqueue (host), queued -> start, end -> host sees it (python dispatch_probe.py DEVICE SPEC FORMAT)."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cl_array
import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
dev = select_device(sys.argv[1]); A = resolve_all([sys.argv[2]])[0].load()
M = clspmv.DeviceMatrix.from_scipy(A, format=sys.argv[3], device=dev); q = dev.queue
x = cl_array.to_device(q, np.ones(A.shape[1])); y = cl_array.zeros(q, A.shape[0], np.float64)
enq, tot, kern, q2s, e2end = [], [], [], [], []
for r in range(100):
    q.finish()
    t0 = time.perf_counter()
    evs = M._fmt.launch(q, x.data, y.data, np.float64(1), np.float64(0)) or []
    t1 = time.perf_counter()
    cl.wait_for_events(evs)
    t2 = time.perf_counter()
    e = evs[0]
    enq.append(t1 - t0); tot.append(t2 - t0)
    kern.append((evs[-1].profile.end - e.profile.start) * 1e-9)
    q2s.append((e.profile.start - e.profile.queued) * 1e-9)
print(sys.argv[3], f"launches {len(evs)} enqueue {np.median(enq)*1e6:.0f} us, total {np.median(tot)*1e6:.0f} us, kernel {np.median(kern)*1e6:.0f} us, queued->start {np.median(q2s)*1e6:.0f} us, rest {np.median(np.array(tot)-np.array(kern)-np.array(q2s))*1e6:.0f} us")
