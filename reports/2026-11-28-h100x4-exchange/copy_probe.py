"""Host <-> GPU copy rates by the kind of host memory (issue 45's window path was no faster than
pinned staging plus MPI messages): numpy, an anonymous shared mapping, a /dev/shm file mapping,
an MPI shared-memory window, a mapped ALLOC_HOST_PTR buffer; each by enqueue_copy from/to the
host array, and through a USE_HOST_PTR buffer over the same memory (buffer to buffer).

    mpiexec -n R python3 copy_probe.py OUT.jsonl     (every rank on GPU rank % gpus, at once)
"""

import json
import mmap
import os
import sys
import time

import numpy as np
import pyopencl as cl
from mpi4py import MPI

comm = MPI.COMM_WORLD
gpus = [d for p in cl.get_platforms() for d in p.get_devices() if d.type & cl.device_type.GPU]
dev = gpus[comm.rank % len(gpus)]
ctx = cl.Context([dev])
q = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
mf = cl.mem_flags
SIZES = [4 << 20, 64 << 20]


def kinds(n):
    yield "numpy", np.empty(n, np.uint8), None
    m = mmap.mmap(-1, n, flags=mmap.MAP_SHARED)
    yield "mmap anon shared", np.frombuffer(m, np.uint8), m
    path = f"/dev/shm/clspmv-probe-{os.getpid()}"
    with open(path, "wb") as f:
        f.truncate(n)
    fd = os.open(path, os.O_RDWR)
    m2 = mmap.mmap(fd, n, flags=mmap.MAP_SHARED)
    os.close(fd)
    os.unlink(path)
    yield "/dev/shm file", np.frombuffer(m2, np.uint8), m2
    win = MPI.Win.Allocate_shared(n, 1, comm=MPI.COMM_SELF)
    buf, _ = win.Shared_query(0)
    yield "MPI window", np.frombuffer(buf, np.uint8), win
    pinned = cl.Buffer(ctx, mf.ALLOC_HOST_PTR | mf.READ_WRITE, n)
    arr, _ = cl.enqueue_map_buffer(q, pinned, cl.map_flags.READ | cl.map_flags.WRITE, 0,
                                   (n,), np.uint8)
    yield "ALLOC_HOST_PTR mapped", arr, pinned


def rate(fn, n, repeat=5):
    fn().wait()
    best = 1e9
    for _ in range(repeat):
        comm.Barrier()
        t = time.perf_counter()
        fn().wait()
        best = min(best, time.perf_counter() - t)
    return n / best / 1e9


out = []
for n in SIZES:
    d = cl.Buffer(ctx, mf.READ_WRITE, n)
    for name, host, keep in kinds(n):
        host[:] = 1
        row = {"rank": comm.rank, "ranks": comm.size, "bytes": n, "memory": name}
        row["h2d GB/s"] = rate(lambda: cl.enqueue_copy(q, d, host, is_blocking=False), n)
        row["d2h GB/s"] = rate(lambda: cl.enqueue_copy(q, host, d, is_blocking=False), n)
        try:
            hb = cl.Buffer(ctx, mf.USE_HOST_PTR | mf.READ_WRITE, hostbuf=host)
            row["h2d USE_HOST_PTR GB/s"] = rate(lambda: cl.enqueue_copy(q, d, hb), n)
            row["d2h USE_HOST_PTR GB/s"] = rate(lambda: cl.enqueue_copy(q, hb, d), n)
            del hb
        except cl.Error as err:
            row["USE_HOST_PTR"] = str(err)
        out.append(row)
        if isinstance(keep, MPI.Win):
            keep.Free()
rows = comm.gather(out)
if comm.rank == 0:
    with open(sys.argv[1], "a") as f:
        for r in (r for part in rows for r in part):
            f.write(json.dumps(r) + "\n")
    for r in rows[0]:
        print(r["ranks"], r["bytes"] >> 20, "MiB", f"{r['memory']:22s}",
              " ".join(f"{k.split(' GB')[0]}={v:.1f}" for k, v in r.items()
                       if k.endswith("GB/s")))
