"""csr-adaptive's kernel time on matrices with long rows, for one checkout of clspmv (the one on
PYTHONPATH), both value types, cuSPARSE beside; matrices generated once and kept as .npz in
CACHE (so that runs of two checkouts, alternated, time the same matrices without generating
them again). One JSON line per matrix and value type.

    PYTHONPATH=TREE python ab.py LABEL DEVICE CACHE SPEC ...

LABEL ``name:param=value,...`` converts with those csr-adaptive parameters (e.g.
``new:chunk_blocks=2``).
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

import clspmv
from clspmv.bench.baseline_cusparse import cusparse_product
from clspmv.bench.generators import generate
from clspmv.cover import matrix_ns


def matrix(spec: str, cache: Path) -> sp.csr_matrix:
    path = cache / (spec.replace(":", "_").replace(",", "_").replace("=", "") + ".npz")
    if path.exists():
        return sp.load_npz(path).tocsr()
    A = generate(spec).tocsr()
    sp.save_npz(path, A, compressed=False)
    return A


def least_ms(M, shape, dtype, rounds: int = 6, reps: int = 10) -> float:
    q = M.device.queue
    x = cl_array.to_device(q, np.random.default_rng(0).standard_normal(shape[1]).astype(dtype))
    y = cl_array.zeros(q, shape[0], dtype)
    M.matvec(x, y)
    best = np.inf
    for _ in range(rounds * reps):
        ns, _ = matrix_ns(M, lambda: M.matvec(x, y))
        best = min(best, ns / 1e6)
    return round(best, 4)


def main() -> None:
    label, device, cache, specs = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4:]
    cache.mkdir(parents=True, exist_ok=True)
    dev = clspmv.select_device(device)
    params = {k: int(v) for k, v in (item.split("=") for item in
                                     label.partition(":")[2].split(",") if item)}
    for spec in specs:
        A = matrix(spec, cache)
        for dtype in (np.float64, np.float32):
            Ad = A.astype(dtype)
            M = clspmv.DeviceMatrix.from_scipy(Ad, format="csr-adaptive", device=dev, dtype=dtype,
                                               **params)
            x = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
            err = float(np.max(np.abs(M @ x - Ad @ x)) / max(1e-30, np.max(np.abs(Ad @ x))))
            ms = least_ms(M, A.shape, dtype)
            cus = cusparse_product(Ad, x)
            print(json.dumps({"label": label, "spec": spec, "dtype": np.dtype(dtype).name,
                              "nnz": int(A.nnz), "long_rows": M.params["long_rows"],
                              "events": len(M.last_events), "csr-adaptive_ms": ms,
                              "cusparse_ms": cus.timing.min_ms if cus.timing else None,
                              "max_rel_err": err}), flush=True)
            del M


if __name__ == "__main__":
    main()
