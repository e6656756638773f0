"""A/B of bsr_spmv_runs at commit 5efb072 (its per-column test of x): with it and without (the test replaced by true), same buffers, against pjds and sell, alternating."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cla, clspmv
from clspmv import build
from clspmv.bench.sources import resolve
dev = sys.argv[1]
for spec in sys.argv[2:]:
    A = resolve(spec).load().tocsr()
    M = clspmv.DeviceMatrix.from_scipy(A, format="bsr", device=dev)
    P = clspmv.DeviceMatrix.from_scipy(A, format="pjds", device=dev)
    S = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=dev)
    f = M._fmt; d = M.device; q = d.queue
    src = build.source("bsr.cl")
    opts = build.options_for(np.float64, None, None, WG=1, BS=f.params["block_size"])
    kerns = {"check": cl.Program(d.context, src).build(options=list(opts)).bsr_spmv_runs,
             "nocheck": cl.Program(d.context, src.replace("if (isfinite(xv))", "if (1)")).build(options=list(opts)).bsr_spmv_runs}
    x = cla.to_device(q, np.random.default_rng(0).uniform(-1, 1, A.shape[1])); y = cla.zeros(q, A.shape[0], np.float64)
    runs = f.params["runs"]
    def go(k):
        return lambda: k(q, (runs,), (1,), np.int32(0), f.buffers["block_ptr"], np.int32(A.shape[0]), f.buffers["runs"], f.buffers["block_ptr"], f.buffers["block_col"], f.buffers["val"], x.data, y.data, np.float64(1), np.float64(0), np.int32(runs))
    fns = {k: go(v) for k, v in kerns.items()}
    fns["pjds"] = lambda: P.matvec(x, y)
    fns["sell"] = lambda: S.matvec(x, y)
    ts = {k: [] for k in fns}
    for r in range(15):
        for k, fn in fns.items():
            fn(); q.finish(); t = time.perf_counter()
            for _ in range(5): fn()
            q.finish(); ts[k].append((time.perf_counter() - t) / 5)
    med = {k: np.median(v) * 1e3 for k, v in ts.items()}
    print(spec, " ".join(f"{k}={v:.3f}" for k, v in med.items()), f"check/nocheck={med['check']/med['nocheck']:.2f}", flush=True)
