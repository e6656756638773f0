"""numpy-to-numpy products waited for by polling (clspmv.host_buffers.wait_polling: looks at the
last event, yielding the CPU, then blocks) against a blocking wait (cl.wait_for_events),
whatever Device.polls_kernels says for the device, in alternating blocks of 10 products, 30
blocks each, medians in ms. Usage: python poll_wait.py DEVICE MATRIX..."""
import sys
import time
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
dev = clspmv.select_device(sys.argv[1])
print("#", dev.name, "shares host pointer:", dev.shares_host_pointer)
for spec in sys.argv[2:]:
    A = resolve(spec).load().tocsr().astype(np.float64)
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, format="auto", device=dev)
    res = {"blocking": [], "polling": []}
    for _ in range(30):
        for mode in res:
            dev.__dict__["_polls_kernels"] = mode == "polling"  # the property's stored answer
            for _ in range(10):
                t = time.perf_counter()
                M.matvec(x)
                res[mode].append(time.perf_counter() - t)
    dev.__dict__.pop("_polls_kernels")
    b, p = np.median(res["blocking"]) * 1e3, np.median(res["polling"]) * 1e3
    print(f"{spec} nnz={A.nnz} {M.format} blocking={b:.3f} polling={p:.3f} "
          f"blocking/polling={b / p:.2f}", flush=True)
