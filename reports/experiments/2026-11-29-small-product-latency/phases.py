import sys, time
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
spec, fmt = sys.argv[1], sys.argv[2]
A = resolve(spec).load().tocsr().astype(np.float64)
x = np.random.default_rng(0).random(A.shape[1])
M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device="1:0")
big_a = np.ones(8 << 20); big_b = np.empty_like(big_a)
for mode in ["row", "pause", "flush"]:
    rows = []
    for i in range(40):
        if mode == "pause": time.sleep(0.005)
        if mode == "flush": np.copyto(big_b, big_a)
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        M.matvec(x)
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC_RAW)
        ev = M.last_events
        q = min(e.profile.queued for e in ev); s = min(e.profile.submit for e in ev)
        st = min(e.profile.start for e in ev); en = max(e.profile.end for e in ev)
        rows.append((q - t0, s - q, st - s, en - st, t1 - en, t1 - t0))
    r = np.median(np.array(rows[5:]), axis=0) / 1e3
    print(f"{mode:6s} call->queued {r[0]:8.1f}  queued->submit {r[1]:8.1f}  submit->start {r[2]:8.1f}  kernel {r[3]:8.1f}  end->return {r[4]:8.1f}  total {r[5]:8.1f} us  (n events {len(ev)})")
