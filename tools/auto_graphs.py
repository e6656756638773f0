"""``format="auto"`` on large matrices against every CSR kernel measured side by side (issue 42:
on large graphs the default ``from_scipy(A)`` should take the fastest CSR kernel).

For each matrix (a ``gen:`` spec of ``clspmv bench``, a ``.mtx`` path, ``ss:GROUP/NAME``), in
float64 on one device: ``from_scipy(A)`` with default arguments and with
``expected_products=1000`` (their choices and wall times, the calibration measured first where
none is stored), then every CSR kernel converted (wall ms) and all timed side by side
(:func:`clspmv.bench.timing.time_side_by_side`, kernel ms, medians), with the model's
predictions of every format it did not refuse. One JSON line per matrix on stdout::

    python tools/auto_graphs.py --device gpu gen:rmat:scale=23,edges=12 \\
        gen:powerlaw:n=8000000,k=13,local=0.5,seed=2 > auto-graphs.jsonl
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np
import scipy.sparse as sp

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.format_choice import csr_kernels


def timed_from_scipy(A: sp.csr_matrix, device: clspmv.Device,
                     **kwargs: object) -> tuple[clspmv.DeviceMatrix, float]:
    """``from_scipy(A, device=device, **kwargs)`` and its wall ms until the queue is idle."""
    start = time.perf_counter()
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, **kwargs)
    device.queue.finish()
    return M, 1e3 * (time.perf_counter() - start)


def measure(spec: str, device: clspmv.Device, repeat: int) -> dict[str, object]:
    """The record of one matrix (see the module docstring)."""
    A = sp.csr_matrix(resolve(spec).load(), dtype=np.float64)
    A.sum_duplicates()
    auto, auto_ms = timed_from_scipy(A, device)
    auto1000, auto1000_ms = timed_from_scipy(A, device, expected_products=1000)
    kernels = [f for f in csr_kernels() if f != "csr-aligned"]
    made = {f: timed_from_scipy(A, device, format=f) for f in kernels}
    matrices = {f: M for f, (M, _) in made.items()}
    for M in (auto, auto1000):  # a choice outside the CSR kernels, timed beside them
        matrices.setdefault(M.format, M)
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    times = time_side_by_side(matrices, x, repeat=repeat)
    return {"matrix": spec, "device": device.name, "rows": A.shape[0], "nnz": A.nnz,
            "auto": auto.format, "auto_convert_ms": auto_ms,
            "auto1000": auto1000.format, "auto1000_convert_ms": auto1000_ms,
            "kernel_ms": {f: t.median_ms for f, t in times.items()},
            "convert_ms": {f: ms for f, (_, ms) in made.items()},
            "fastest_csr": min(kernels, key=lambda f: times[f].median_ms),
            "calibration": auto.selection.calibration if auto.selection else None,
            "predicted": [row for row in auto.selection.table() if row["kernel ms"]]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("matrices", nargs="+", help="gen: specs, .mtx paths or ss:GROUP/NAME")
    parser.add_argument("--device", help="clspmv device spec (default: the default device)")
    parser.add_argument("--repeat", type=int, default=20, help="rounds of the side-by-side timing")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    for spec in args.matrices:
        print(json.dumps(measure(spec, device, args.repeat), default=str), flush=True)


if __name__ == "__main__":
    main()
