"""Host costs of one product on a GPU (issue 45): what the host spends, per call, enqueueing a
kernel, flushing, a marker, a finish round trip, DeviceMatrix.matvec, and one distributed
product's steps (cProfile of rank 0).

    python probe.py single OUT.json           # one process, the first GPU
    mpiexec -n 2 python probe.py dist OUT.json  # one rank per GPU, window exchange
"""
import cProfile
import io
import json
import pstats
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.sparse as sp

N = 2000


def per_call(fn, n=N):
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def banded(n, k):
    offs = [0, 1, -1, 1000, -1000, 2, -2, 37, -37, 999, -999][:k]
    return sp.diags([np.full(n, 4.0)] + [np.full(n, -0.5)] * (len(offs) - 1), offs,
                    shape=(n, n), format="csr")


def profile_top(fn, n, lines=22):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        fn()
    pr.disable()
    s = io.StringIO()
    pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(lines)
    return s.getvalue()


def single(out):
    import clspmv
    M0 = clspmv.DeviceMatrix.from_scipy(banded(1_000_000, 11), format="dia")
    dev = M0.device
    q = dev.queue
    ctx = dev.context
    prg = cl.Program(ctx, "__kernel void k(__global double *y, int n, double a)"
                          "{ int i = get_global_id(0); if (i < n) y[i] = a * y[i]; }").build()
    knl = cl.Kernel(prg, "k")
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, 8 * 1024)
    host = np.empty(1024)
    r = {"device": dev.name}
    r["kernel_call_us"] = per_call(lambda: knl(q, (1024,), (256,), buf, np.int32(1024),
                                               np.float64(1.0)))
    q.finish()
    knl.set_args(buf, np.int32(1024), np.float64(1.0))
    r["enqueue_nd_range_preset_us"] = per_call(
        lambda: cl.enqueue_nd_range_kernel(q, knl, (1024,), (256,)))
    q.finish()
    r["flush_after_kernel_us"] = per_call(
        lambda: (cl.enqueue_nd_range_kernel(q, knl, (1024,), (256,)), q.flush())) \
        - r["enqueue_nd_range_preset_us"]
    q.finish()
    r["marker_us"] = per_call(lambda: cl.enqueue_marker(q))
    q.finish()
    r["flush_empty_us"] = per_call(q.flush)
    r["kernel_finish_roundtrip_us"] = per_call(
        lambda: (cl.enqueue_nd_range_kernel(q, knl, (1024,), (256,)), q.finish()), 500)
    r["copy_d2h_8k_nonblocking_us"] = per_call(
        lambda: cl.enqueue_copy(q, host, buf, is_blocking=False))
    q.finish()
    r["perf_counter_us"] = per_call(time.perf_counter)
    for fmt in ("dia", "csr-adaptive", "csr-vector"):
        M = M0 if fmt == "dia" else clspmv.DeviceMatrix.from_scipy(banded(1_000_000, 11),
                                                                   format=fmt)
        x = cla.to_device(q, np.ones(M.shape[1]))
        y = cla.empty(q, M.shape[0], np.float64)
        r[f"matvec_{fmt}_us"] = per_call(lambda: M.matvec(x, y), 500)
        q.finish()
        r[f"matvec_{fmt}_finish_us"] = per_call(lambda: (M.matvec(x, y), q.finish()), 300)
        if fmt == "dia":
            r["matvec_dia_profile"] = profile_top(lambda: M.matvec(x, y), 500)
            q.finish()
    json.dump(r, open(out, "w"), indent=1)
    print({k: v for k, v in r.items() if not k.endswith("profile")})
    print(r["matvec_dia_profile"])


def dist(out):
    from mpi4py import MPI
    from clspmv.bench.generators import random
    from clspmv.distributed import DistributedMatrix
    comm = MPI.COMM_WORLD
    r = {}
    for name, A, fmts in (("banded 2M", banded(2_000_000, 11), ("dia", "dia")),
                          ("random 1M", random(n=1_000_000, k=10),
                           ("csr-adaptive", "csr-adaptive"))):
        D = DistributedMatrix.from_scipy(A, comm, format=fmts, mode="overlap",
                                         device="local-rank")
        q = D.device.queue
        c0, c1 = D.col_range
        x = cla.to_device(q, np.ones(c1 - c0))
        y = cla.empty(q, D.local_shape[0], np.float64)
        for _ in range(50):
            D.matvec(x, y)
            q.finish()
        res = {}
        for label, fin in (("finish each", True), ("back to back", False)):
            comm.Barrier()
            t = time.perf_counter()
            for _ in range(500):
                D.matvec(x, y)
                if fin:
                    q.finish()
            q.finish()
            res[label] = (time.perf_counter() - t) / 500 * 1e6
        comm.Barrier()
        res["timeline"] = D.last_timeline.summary()
        if comm.rank == 0:
            res["profile"] = profile_top(lambda: (D.matvec(x, y), q.finish()), 300, 30)
        else:
            for _ in range(300):
                D.matvec(x, y)
                q.finish()
        D.close()
        r[name] = res
        if comm.rank == 0:
            print(name, {k: v for k, v in res.items() if k in ("finish each", "back to back")})
            print(res["profile"])
    if comm.rank == 0:
        json.dump(r, open(out, "w"), indent=1, default=str)


if __name__ == "__main__":
    {"single": single, "dist": dist}[sys.argv[1]](sys.argv[2])
