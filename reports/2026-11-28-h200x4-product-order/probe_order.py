"""Variants of one distributed product, interleaved in one run so that the node's slow spells
fall on every variant alike (issue 45): per product, every rank starts after a barrier and the
product's time is the slowest rank's (from its start to its queue finished); the host time of
each step of ``clspmv.distributed.modes.run`` per rank. One rank alone (the whole matrix on
rank 0's GPU, mode vector) is measured in the same run for the speedups.

    source .whl/gpu-env.sh && CLSPMV_CALIBRATE=0 mpiexec -n 4 python3 \\
        reports/2026-11-28-h200x4-product-order/probe_order.py OUTDIR SPEC [SPEC ...]

SPEC: a generator spec (``gen:poisson2d:k=6400``). Variants (``VARIANTS``, default all):
``vector``, ``overlap`` (the library's order), ``overlap-local-first`` (``overlap`` with the
local kernel enqueued before the exchange starts, whatever the library's
``Product.exchange_first`` says; the same as ``overlap`` in a library without it),
``local-only`` (each rank's local part alone, ``matvec_checked`` and its queue finished: what
no exchange can beat). REFERENCE: the 1-rank reference's spec instead of SPEC (e.g. a quarter
of the matrix, for weak scaling). ROUNDS (default 200) products per variant, in rounds of one
product per variant; HANG: seconds before a stuck run dumps its stacks and exits. Writes
OUTDIR/order-<name>-n<N>.json: per variant the products' seconds (slowest rank), the per-rank
step seconds, and the 1-rank reference's seconds."""

import faulthandler
import json
import os
import sys
import time

import numpy as np
import pyopencl.array as cla
from mpi4py import MPI

from clspmv.bench.sources import resolve
from clspmv.distributed import DistributedMatrix, modes
from clspmv.distributed.product import Product

faulthandler.dump_traceback_later(int(os.environ.get("HANG", "500")), exit=True)
comm = MPI.COMM_WORLD
out, specs = sys.argv[1], sys.argv[2:]
rounds = int(os.environ.get("ROUNDS", "200"))
variants = os.environ.get("VARIANTS", "vector,overlap,overlap-local-first").split(",")
STEPS = ("gather", "start", "wait", "local", "non_local")
library_first = getattr(Product, "exchange_first", None)  # None: the library has no such order
steps_seconds: dict[str, float] = {}


def timed(method):
    def run(self, *args):
        started = time.perf_counter()
        method(self, *args)
        steps_seconds[method.__name__] = (steps_seconds.get(method.__name__, 0.0)
                                          + time.perf_counter() - started)
    return run


for name in STEPS:
    setattr(Product, name, timed(getattr(Product, name)))


def product(D, x, y, variant: str) -> tuple[float, dict[str, float]]:
    steps_seconds.clear()
    if library_first is not None:
        Product.exchange_first = (property(lambda self: False)
                                  if variant.endswith("local-first") else library_first)
    comm.Barrier()
    started = time.perf_counter()
    if variant == "local-only":
        D.local.matvec_checked(x, y, D.dtype.type(1), D.dtype.type(0))
    else:
        D.mode = variant.split("-")[0]
        D.matvec(x, y)
    D.device.queue.finish()
    return time.perf_counter() - started, dict(steps_seconds)


def reference(A) -> list[float]:
    """Rank 0 alone, the whole matrix, mode vector: seconds of ROUNDS products."""
    sub = comm.Split(0 if comm.rank == 0 else MPI.UNDEFINED, 0)
    seconds: list[float] = []
    if comm.rank == 0:
        with DistributedMatrix.from_scipy(A, sub, mode="vector", partition="rows",
                                          device="local-rank") as D1:
            q = D1.device.queue
            x = cla.to_device(q, np.ones(A.shape[1]))
            y = cla.zeros(q, A.shape[0], np.float64)
            for i in range(rounds + 10):
                started = time.perf_counter()
                D1.matvec(x, y)
                q.finish()
                if i >= 10:
                    seconds.append(time.perf_counter() - started)
        sub.Free()
    return comm.bcast(seconds, root=0)


def main() -> None:
    os.makedirs(out, exist_ok=True)
    for spec in specs:
        A = resolve(spec, progress=False).load()
        reference_spec = os.environ.get("REFERENCE", spec)
        one = reference(A if reference_spec == spec
                        else resolve(reference_spec, progress=False).load())
        with DistributedMatrix.from_scipy(A, comm, mode="vector", device="local-rank") as D:
            q = D.device.queue
            c0, c1 = D.col_range
            x = cla.to_device(q, np.ones(c1 - c0))
            y = cla.zeros(q, D.local_shape[0], np.float64)
            for variant in variants:  # warm-up
                for _ in range(10):
                    product(D, x, y, variant)
            times = {v: [] for v in variants}
            steps = {v: {s: [] for s in STEPS} for v in variants}
            for _ in range(rounds):
                for variant in variants:
                    seconds, spent = product(D, x, y, variant)
                    times[variant].append(seconds)
                    for s in STEPS:
                        steps[variant][s].append(spent.get(s, 0.0))
            slowest = {v: np.max(comm.allgather(times[v]), axis=0).tolist() for v in variants}
            every_steps = comm.gather(steps, root=0)
            formats = comm.gather(D.formats, root=0)
            halo = comm.gather(D.plan.bytes_by_path, root=0)
        if comm.rank == 0:
            name = spec.split(":")[1] if spec.startswith("gen:") else spec
            record = {"spec": spec, "reference": reference_spec, "ranks": comm.size, "rounds": rounds, "one_rank": one,
                      "products": slowest, "steps": every_steps, "formats": formats,
                      "bytes_by_path": halo}
            with open(os.path.join(out, f"order-{name}-n{comm.size}.json"), "w") as f:
                json.dump(record, f)
            base = float(np.median(one))
            print(f"{spec}: 1 rank ({reference_spec}) {base * 1e3:.3f} ms", flush=True)
            for v in variants:
                med = float(np.median(slowest[v]))
                host = {s: float(np.median([np.median(r[v][s]) for r in every_steps])) * 1e6
                        for s in STEPS}
                print(f"  {v:22s} {med * 1e3:.3f} ms ({base / med:.2f}x) q1-q3 "
                      f"{np.percentile(slowest[v], 25) * 1e3:.3f}-"
                      f"{np.percentile(slowest[v], 75) * 1e3:.3f}; host us "
                      + " ".join(f"{s}={t:.0f}" for s, t in host.items()), flush=True)
        comm.Barrier()


main()
