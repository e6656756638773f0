"""One product's timeline per rank (DistributedMatrix.last_timeline: host steps and OpenCL
commands on one clock), window exchange, each mode, after warm-up products; every rank's spans
gathered to rank 0 and written as JSON lines.

    mpiexec -n R python3 timeline_probe.py OUT.jsonl [GEN_SPEC FORMAT]
"""

import json
import sys
from dataclasses import asdict

import numpy as np
import pyopencl.array as cl_array
from mpi4py import MPI

from clspmv.bench.sources import resolve
from clspmv.distributed import DistributedMatrix

comm = MPI.COMM_WORLD
spec = sys.argv[2] if len(sys.argv) > 2 else "gen:random:n=20000000,k=10"
fmt = sys.argv[3] if len(sys.argv) > 3 else "csr-adaptive"
A = resolve(spec, progress=False).load().tocsr()
D = DistributedMatrix.from_scipy(A, comm, format=fmt, device="local-rank", mode="vector")
q = D.device.queue
x = cl_array.to_device(q, np.ones(D.local_shape[1]))
rows = []
for mode in ("vector", "overlap", "task"):
    D.mode = mode
    for _ in range(5):
        comm.Barrier()
        y = D.matvec(x)
        q.finish()
    t = D.last_timeline
    rows.append({"rank": comm.rank, "ranks": comm.size, "mode": mode, "matrix": spec,
                 "bytes_by_path": D.plan.bytes_by_path,
                 "spans": [asdict(s) for s in t.spans],
                 "device": [asdict(s) for s in t.device_spans()]})
every = comm.gather(rows)
D.close()
if comm.rank == 0:
    with open(sys.argv[1], "a") as f:
        for part in every:
            for r in part:
                f.write(json.dumps(r, default=str) + "\n")
    for r in (r for part in every for r in part if r["mode"] == "overlap"):
        print("rank", r["rank"], r["mode"],
              " ".join(f"{s['name']}[{s['start'] * 1e3:.2f},{s['stop'] * 1e3:.2f}]"
                       for s in r["device"]))
