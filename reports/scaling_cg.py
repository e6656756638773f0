"""Issue 45: distributed CG's time per iteration (clspmv.solvers.cg on a DistributedMatrix: one
product and the dot products summed over the ranks by Allreduce per iteration), one JSON
record per run; reports/scaling.sh runs it at 1, 2 and 4 ranks.

    mpiexec -n N python3 reports/scaling_cg.py OUT.json MATRIX [--device D] [--mode M]
        [--iterations K] [--warmup W] [--formats LOCAL,NONLOCAL]

MATRIX: a bench source (``gen:poisson2d:k=6400``, a .mtx path, ...). The right-hand side is
A @ ones. After ``W`` warm-up iterations, ``K`` iterations of CG are timed (``rtol=0``: none
stops early), every rank waiting at a barrier first and for its queue last; the slowest rank's
time / K is ``ms_per_iteration``. Checked: the recurrence's residual against the true one
(||b - A x|| by a distributed product) under ``1e-6`` relative, so a wrong product fails the
run. The record holds the command line, the exchange path per rank and the matrix's size.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time

import numpy as np
from mpi4py import MPI

from clspmv import solvers
from clspmv.bench.sources import resolve
from clspmv.distributed import DistributedMatrix


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("matrix")
    parser.add_argument("--device", default="local-rank")
    parser.add_argument("--mode", default="overlap")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--formats", default="auto")
    parser.add_argument("--dtype", default="float64")
    args = parser.parse_args()
    comm = MPI.COMM_WORLD
    started = time.perf_counter()
    A = resolve(args.matrix, progress=False).load().tocsr()
    formats = tuple(args.formats.split(",")) if "," in args.formats else args.formats
    D = DistributedMatrix.from_scipy(A, comm, format=formats, mode=args.mode,
                                     device=args.device, dtype=args.dtype)
    setup_s = time.perf_counter() - started
    r0, r1 = D.row_range
    b = np.asarray(A[r0:r1] @ np.ones(A.shape[1]), D.dtype)
    del A
    solvers.cg(D, b, rtol=0.0, maxiter=max(args.warmup, 1))
    D.device.queue.finish()
    history: list[float] = []
    comm.Barrier()
    t0 = time.perf_counter()
    x, info = solvers.cg(D, b, rtol=0.0, maxiter=args.iterations, history=history)
    D.device.queue.finish()
    mine = time.perf_counter() - t0
    slowest = comm.allreduce(mine, op=MPI.MAX)
    x_host = x if isinstance(x, np.ndarray) else x.get()
    r = b - D.matvec(np.ascontiguousarray(x_host, D.dtype))
    true = float(np.sqrt(comm.allreduce(float(r @ r))))
    norm_b = float(np.sqrt(comm.allreduce(float(b @ b))))
    recurrence = history[-1] if history else float("nan")
    ok = abs(true - recurrence) <= 1e-6 * norm_b + 1e-6 * true
    paths = comm.gather("+".join(p for p, (s, g) in D.plan.bytes_by_path.items() if s or g)
                        or "none")
    record = {"command": "mpiexec -n {} {}".format(comm.size, shlex.join([sys.executable,
                                                                          *sys.argv])),
              "matrix": args.matrix, "rows": D.shape[0], "ranks": comm.size, "mode": D.mode,
              "formats": comm.gather("/".join(f or "none" for f in D.formats)),
              "exchange": paths, "iterations": args.iterations, "info": info,
              "ms_per_iteration": 1e3 * slowest / args.iterations,
              "residual": true, "recurrence_residual": recurrence, "b_norm": norm_b,
              "residual_check": "ok" if ok else "MISMATCH", "setup_s": setup_s}
    D.close()
    if comm.rank == 0:
        with open(args.out, "w") as f:
            json.dump(record, f, indent=1)
        print(f"scaling_cg: {args.matrix} {comm.size} rank(s) {record['mode']}: "
              f"{record['ms_per_iteration']:.3f} ms per iteration, residual check "
              f"{record['residual_check']}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
