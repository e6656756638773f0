import time, sys, numpy as np, scipy.sparse as sp, clspmv, pyopencl.array as cla
A = sp.random(2000, 2000, density=0.002, format="csr", random_state=0)
M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device="1:0")
q = M.device.queue
x = cla.to_device(q, np.ones(2000)); y = cla.zeros(q, 2000, np.float64)
for _ in range(200): M.matvec(x, y); q.finish()
ts = []
for _ in range(2000):
    t = time.perf_counter(); M.matvec(x, y); q.finish(); ts.append(time.perf_counter() - t)
ev = M.last_events
k = sum(e.profile.end - e.profile.start for e in ev) / 1e3
xn = np.ones(2000)
tn = []
for _ in range(2000):
    t = time.perf_counter(); M @ xn; tn.append(time.perf_counter() - t)
print(f"{sys.argv[1]}: device-resident median {np.median(ts)*1e6:.0f} us, numpy-to-numpy median {np.median(tn)*1e6:.0f} us, last kernel {k:.1f} us")
