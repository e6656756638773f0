"""Where the wall time of one product goes on PoCL: python timeline.py DEVICE SPEC FORMAT.

The event's profiling stamps (queued, submit, start, end) against the host's wall clock around
the call, alternating device-resident x, y (then queue.finish) and M.matvec(numpy x) (a new
numpy y)."""
import sys, time
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.sources import resolve
dev = clspmv.select_device(sys.argv[1]); spec, fmt = sys.argv[2], sys.argv[3]
A = resolve(spec).load().tocsr()
M = clspmv.DeviceMatrix.from_scipy(A, device=dev, format=fmt)
x = np.random.default_rng(0).standard_normal(A.shape[1])
xd = cla.to_device(dev.queue, x); yd = cla.empty(dev.queue, A.shape[0], np.float64)
rows = []
for use_host in (False, True) * 30:
    t0 = time.perf_counter_ns()
    if use_host: M.matvec(x)
    else: M.matvec(xd, yd); dev.queue.finish()
    t1 = time.perf_counter_ns()
    e = M.last_events
    q, s, st, en = e[0].profile.queued, e[0].profile.submit, e[0].profile.start, e[-1].profile.end
    # PoCL's profiling clock has another origin than perf_counter_ns: only differences of
    # its own stamps, and the wall time minus their span, are compared
    rows.append((use_host, t1 - t0, s - q, st - s, en - st, (t1 - t0) - (en - q), len(e)))
for h in (False, True):
    a = np.array([r[1:6] for r in rows[6:] if r[0] == h]) / 1e3
    print(f"{fmt} {'numpy' if h else 'device'}: wall {np.median(a[:,0]):.0f} us = kernel {np.median(a[:,3]):.0f} + queued->submit {np.median(a[:,1]):.0f} + submit->start {np.median(a[:,2]):.0f} + host before queued and after the end {np.median(a[:,4]):.0f} (medians; events per product {rows[-1][6]})")
