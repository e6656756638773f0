"""Host microseconds per OpenCL call of the kind a distributed product makes (a dia kernel, a
gather, a marker, copies between a GPU buffer and shared host memory, a flush, an event query),
on queues with and without profiling, per rank: each rank alone, then all at once; with UE=1
also the latency of a copy gated by a user event and of a copy seen complete by polling.

    source .whl/gpu-env.sh && CLSPMV_CALIBRATE=0 UE=1 K=6400 \
        mpiexec -n 4 python3 reports/2026-11-28-h200x4-host-costs/probe_hostcost.py OUTDIR

Writes OUTDIR/hostcost-n<N>.json and (UE=1) usergated-n<N>.json: per rank, per call, the mean
host µs over 200 calls (the queue finished every 20). A 2-D Poisson block of K/4 x K grid
rows (K=6400: 51 M entries per rank) gives the kernels a realistic size. HANG: seconds before
a stuck run dumps its stacks and exits."""

import faulthandler
import json
import mmap
import os
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cla
import scipy.sparse as sp
from mpi4py import MPI

from clspmv import DeviceMatrix
from clspmv.device import select_device
from clspmv.vectors import DeviceVectors

faulthandler.dump_traceback_later(int(os.environ.get("HANG", "240")), exit=True)
comm = MPI.COMM_WORLD
rank = comm.rank
gpus = [d for p in cl.get_platforms() if "NVIDIA" in p.name for d in p.get_devices()]
dev = select_device(gpus[rank % len(gpus)]) if gpus else select_device(None)
ctx, q = dev.context, dev.queue
qnp = cl.CommandQueue(ctx)  # no profiling
q2 = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
k = int(os.environ.get("K", "3200"))
T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k)).tocsr()
A = (sp.kron(sp.eye(k // 4), T) + sp.kron(T[: k // 4, : k // 4], sp.eye(k))).tocsr()
M = DeviceMatrix.from_scipy(A, format="dia", device=dev)
x = cla.to_device(q, np.ones(A.shape[1]))
y = cla.zeros(q, A.shape[0], np.float64)
a, b = np.float64(1), np.float64(0)
vec = DeviceVectors(dev, np.float64)
idx = cla.to_device(q, np.arange(0, 2 * 12800, 2, dtype=np.int32))
dst = cla.zeros(q, 12800, np.float64)
mm = mmap.mmap(-1, 1 << 22, flags=mmap.MAP_SHARED)
win = np.frombuffer(mm, np.float64)
reg = cl.Buffer(ctx, cl.mem_flags.USE_HOST_PTR | cl.mem_flags.READ_WRITE, hostbuf=win)
view = win[:12800]
res = {}
devnp = select_device(cl.CommandQueue(ctx))  # no profiling
Mnp = DeviceMatrix.from_scipy(A, format="dia", device=devnp)
xn = cla.to_device(devnp.queue, np.ones(A.shape[1]))
yn = cla.zeros(devnp.queue, A.shape[0], np.float64)
vecn = DeviceVectors(devnp, np.float64)


def per_call(name, fn, n=200, sync=None, every=20):
    for _ in range(10):
        fn()
    (sync or q.finish)()
    t = 0.0
    for i in range(n):
        s = time.perf_counter()
        fn()
        t += time.perf_counter() - s
        if i % every == every - 1:
            (sync or q.finish)()
    (sync or q.finish)()
    res.setdefault(name, []).append(round(t / n * 1e6, 2))


def suite(tag):
    per_call(f"{tag} kernel matvec_checked (profiling queue)", lambda: M.matvec_checked(x, y, a, b))
    per_call(
        f"{tag} kernel matvec_checked NO profiling",
        lambda: Mnp.matvec_checked(xn, yn, a, b),
        sync=devnp.queue.finish,
    )
    per_call(f"{tag} take NO profiling", lambda: vecn.take(idx, xn, dst), sync=devnp.queue.finish)
    per_call(
        f"{tag} marker NO profiling",
        lambda: cl.enqueue_marker(devnp.queue),
        sync=devnp.queue.finish,
    )
    per_call(
        f"{tag} copy dev->win view NO profiling",
        lambda: cl.enqueue_copy(qnp, view, x.data, is_blocking=False),
        sync=qnp.finish,
    )
    per_call(f"{tag} flush", q.flush)
    per_call(f"{tag} kernel+flush", lambda: (M.matvec_checked(x, y, a, b), q.flush()))
    per_call(f"{tag} take 12800", lambda: vec.take(idx, x, dst))
    per_call(f"{tag} marker", lambda: cl.enqueue_marker(q))
    per_call(
        f"{tag} copy dev->win view 100KB",
        lambda: cl.enqueue_copy(q2, view, x.data, is_blocking=False),
        sync=q2.finish,
    )
    per_call(
        f"{tag} copy win view->dev 100KB",
        lambda: cl.enqueue_copy(q2, dst.data, view, is_blocking=False),
        sync=q2.finish,
    )
    per_call(
        f"{tag} copy view->dev no-prof queue",
        lambda: cl.enqueue_copy(qnp, dst.data, view, is_blocking=False),
        sync=qnp.finish,
    )
    ev = cl.enqueue_marker(q)
    q.finish()
    per_call(f"{tag} event status query", lambda: ev.command_execution_status)

    def ue():
        u = cl.UserEvent(ctx)
        u.set_status(cl.command_execution_status.COMPLETE)

    per_call(f"{tag} user event create+set", ue)


def suite2(tag):
    q2 = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
    dst = cla.zeros(q2, 12800, np.float64)
    view = np.zeros(12800)
    # latency: gated copy, set, wait for completion; against ungated copy + wait
    lat_g, lat_u = [], []
    for _ in range(50):
        u = cl.UserEvent(ctx)
        e = cl.enqueue_copy(q2, dst.data, view, is_blocking=False, wait_for=[u])
        q2.flush()
        time.sleep(2e-4)
        s = time.perf_counter()
        u.set_status(cl.command_execution_status.COMPLETE)
        e.wait()
        lat_g.append(time.perf_counter() - s)
        s = time.perf_counter()
        e = cl.enqueue_copy(q2, dst.data, view, is_blocking=False)
        q2.flush()
        e.wait()
        lat_u.append(time.perf_counter() - s)
    q.finish()
    q2.finish()
    res[f"{tag} user-gated copy: set->done us"] = round(float(np.median(lat_g)) * 1e6, 1)
    res[f"{tag} plain copy: enqueue->done us"] = round(float(np.median(lat_u)) * 1e6, 1)
    # cross-queue: kernel on q waiting for a copy on q2 gated by user event
    lat = []
    for _ in range(50):
        u = cl.UserEvent(ctx)
        e = cl.enqueue_copy(q2, dst.data, view, is_blocking=False, wait_for=[u])
        q2.flush()
        # make the take wait on e: use marker with wait list
        cl.enqueue_marker(q, wait_for=[e])
        kev = vec.take(idx, x, dst)
        q.flush()
        time.sleep(2e-4)
        s = time.perf_counter()
        u.set_status(cl.command_execution_status.COMPLETE)
        kev.wait()
        lat.append(time.perf_counter() - s)
    res[f"{tag} user-gated copy then kernel on other queue: set->done us"] = round(
        float(np.median(lat)) * 1e6, 1
    )
    # event poll detection latency: copy, poll status until complete
    lat = []
    for _ in range(50):
        s = time.perf_counter()
        e = cl.enqueue_copy(q2, view, x.data, is_blocking=False)
        q2.flush()
        while e.command_execution_status != cl.command_execution_status.COMPLETE:
            pass
        lat.append(time.perf_counter() - s)
    res[f"{tag} copy down enqueue->seen complete by polling us"] = round(
        float(np.median(lat)) * 1e6, 1
    )


# alone: one rank at a time
for r in range(comm.size):
    comm.Barrier()
    if r == rank:
        suite("alone")
    comm.Barrier()
comm.Barrier()
suite("all")


def report(name):
    out = comm.gather(res)
    if rank == 0:
        os.makedirs(sys.argv[1], exist_ok=True)
        json.dump(
            {"device": dev.name, "ranks": comm.size, "per_rank": out},
            open(os.path.join(sys.argv[1], f"{name}-n{comm.size}.json"), "w"),
            indent=1,
        )
        for key in out[0]:
            print(key, [o.get(key) for o in out], flush=True)


report("hostcost")
if os.environ.get("UE"):
    suite2("all")
    report("usergated")
