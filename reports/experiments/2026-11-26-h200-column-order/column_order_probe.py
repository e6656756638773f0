"""Would relabelling the columns by their entry counts (hot columns first, x permuted to match
before each product) speed up the gathers from x on graph-like matrices? Times cuSPARSE (cupy)
and clspmv's csr-adaptive on A and on A[:, order], and the gather x[order] a product would add.
python column_order_probe.py DTYPE SPEC ...  (kernel ms, least of interleaved rounds)"""
import sys, json
import numpy as np, cupy as cp, cupyx.scipy.sparse as csp
import clspmv
from clspmv.bench.generators import generate
from clspmv.cover import matrix_ns
import pyopencl.array as cl_array

dtype = np.dtype(sys.argv[1])
dev = clspmv.select_device("nvidia")


def cuda_ms(fn, reps=30):
    fn(); cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    best = np.inf
    for _ in range(reps):
        s.record(); fn(); e.record(); e.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(s, e))
    return best


def cl_ms(M, shape, reps=30):
    q = dev.queue
    x = cl_array.to_device(q, np.ones(shape[1], dtype)); y = cl_array.zeros(q, shape[0], dtype)
    M.matvec(x, y)
    return min(matrix_ns(M, lambda: M.matvec(x, y))[0] for _ in range(reps)) / 1e6


for spec in sys.argv[2:]:
    A = generate(spec).astype(dtype)
    counts = np.bincount(A.indices, minlength=A.shape[1])
    order = np.argsort(-counts, kind="stable")  # new column j is old column order[j]
    inv = np.empty_like(order); inv[order] = np.arange(order.size)
    B = A.copy(); B.indices = inv[B.indices].astype(B.indices.dtype); B.sort_indices()
    out = {"spec": spec, "dtype": dtype.name, "nnz": int(A.nnz),
           "top1pct_share": float(np.sort(counts)[::-1][: max(1, A.shape[1] // 100)].sum() / A.nnz)}
    xg = cp.asarray(np.random.default_rng(0).random(A.shape[1]).astype(dtype))
    og = cp.asarray(order.astype(np.int32))
    for _ in range(3):  # interleaved rounds
        for key, M in (("A", A), ("B", B)):
            Mg = csp.csr_matrix(M)
            out[f"cusparse_{key}"] = min(out.get(f"cusparse_{key}", np.inf), cuda_ms(lambda: Mg @ xg))
            D = clspmv.DeviceMatrix.from_scipy(M, format="csr-adaptive", device=dev, dtype=dtype)
            out[f"adaptive_{key}"] = min(out.get(f"adaptive_{key}", np.inf), cl_ms(D, M.shape))
            del D, Mg
        out["gather_x"] = min(out.get("gather_x", np.inf), cuda_ms(lambda: xg[og]))
    y_ref = A @ np.arange(A.shape[1], dtype=dtype); y_b = B @ np.arange(A.shape[1], dtype=dtype)[order]
    out["check"] = float(np.max(np.abs(y_ref - y_b)) / max(1.0, np.max(np.abs(y_ref))))
    print(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in out.items()}), flush=True)
