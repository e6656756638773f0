"""Where the distributed model's error comes from (issue 12): the local kernel of each rank
timed alone (the other ranks asleep) and with every rank running its own at once, against the
whole matrix on one rank, and the product per mode, in interleaved rounds so that a drift of the
machine touches every figure alike.

    POCL_MAX_PTHREAD_COUNT=1 flock /tmp/clspmv-measure.lock \\
        mpiexec -n 2 python tools/distributed_contention.py poisson2d:k=3200 stencil27:k=80

Prints per matrix (rank 0): the 1-rank kernel (whole matrix) / ranks, each rank's local kernel
alone and together (ms, medians over the rounds; the slowest rank's), and per mode the product
(ms, slowest rank) with its local and non-local kernels and exchange.
"""

from __future__ import annotations

import sys
import time

import numpy as np


def _kernel_ms(M, x, y, queue) -> float:
    from clspmv.device import events_ns

    M.matvec(x, y)
    queue.finish()
    return events_ns(M.last_events) * 1e-6


def _adder(samples: dict[str, list[float]]):
    return lambda key, value: samples.setdefault(key, []).append(value)


def _sleep_until(request) -> None:
    while not request.Test():
        time.sleep(0.005)


def main() -> int:
    import pyopencl.array as cl_array
    from mpi4py import MPI

    from clspmv import DeviceMatrix
    from clspmv.bench.generators import GENERATORS
    from clspmv.distributed import DistributedMatrix

    comm = MPI.COMM_WORLD
    fmt = ("csr-vector", "csr-scalar")
    rounds, repeat = 5, 3
    for spec in sys.argv[1:]:
        name, _, args = spec.partition(":")
        kwargs = {k: int(v) for k, v in (a.split("=") for a in args.split(",") if a)}
        A = GENERATORS[name](**kwargs)
        D = DistributedMatrix.from_scipy(A, comm, format=fmt, partition="nnz", mode="vector")
        q = D.device.queue
        x = cl_array.to_device(q, np.ones(D.local_shape[1]))
        y = cl_array.zeros(q, D.local_shape[0], np.float64)
        one = None
        if comm.rank == 0:
            W = DeviceMatrix.from_scipy(A, format=fmt[0], device=D.device)
            wx = cl_array.to_device(q, np.ones(A.shape[1]))
            wy = cl_array.zeros(q, A.shape[0], np.float64)
            _kernel_ms(W, wx, wy, q)
        comm.Barrier()
        samples: dict[str, list[float]] = {}
        add = _adder(samples)
        for _ in range(rounds):
            if comm.rank == 0:  # the whole matrix on one rank, the others asleep
                for _ in range(repeat):
                    add("one", _kernel_ms(W, wx, wy, q) / comm.size)
            _sleep_until(comm.Ibarrier())
            for r in range(comm.size):  # each rank alone
                if comm.rank == r:
                    for _ in range(repeat):
                        add("alone", _kernel_ms(D.local, x, y, q))
                _sleep_until(comm.Ibarrier())
            comm.Barrier()
            for _ in range(repeat):  # all at once
                add("together", _kernel_ms(D.local, x, y, q))
            comm.Barrier()
            for mode in ("vector", "overlap", "task"):
                D.mode = mode
                for _ in range(repeat):
                    comm.Barrier()
                    start = time.perf_counter()
                    D.matvec(x, y)
                    q.finish()
                    add(mode, (time.perf_counter() - start) * 1e3)
                    t = D.timings
                    add(f"{mode} local", t["local"] * 1e3)
                    add(f"{mode} exchange", t["communication"] * 1e3)
        medians = {k: float(np.median(v)) for k, v in samples.items()}
        every = comm.gather(medians, root=0)
        D.close()
        if comm.rank == 0:
            worst = {k: max(m.get(k, 0.0) for m in every) for k in every[0]}
            one = worst.pop("one")
            print(f"{spec}: one rank / {comm.size} = {one:.2f} ms; local alone "
                  f"{worst['alone']:.2f} ({worst['alone'] / one:.3f}), together "
                  f"{worst['together']:.2f} ({worst['together'] / one:.3f})", flush=True)
            for mode in ("vector", "overlap", "task"):
                print(f"  {mode}: product {worst[mode]:.2f} ms ({worst[mode] / one:.3f}), local "
                      f"{worst[mode + ' local']:.2f}, exchange {worst[mode + ' exchange']:.2f}",
                      flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
