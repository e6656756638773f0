"""csr-adaptive's kernel time at several ``sm_queues`` (experiment.patch: the row blocks in that
many ranges, a work-group taking the next block of its compute unit's range), all converted at once and timed in alternating rounds, cuSPARSE beside; both value
types. Matrices generated once and kept as .npz in CACHE. One JSON line per matrix and value
type.

    python sweep.py DEVICE CACHE G1,G2,... SPEC ...
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

import clspmv
from clspmv.bench.baselines import cusparse_product
from clspmv.bench.generators import generate
from clspmv.cover import matrix_ns


def matrix(spec: str, cache: Path) -> sp.csr_matrix:
    path = cache / (spec.replace(":", "_").replace(",", "_").replace("=", "") + ".npz")
    if path.exists():
        return sp.load_npz(path).tocsr()
    A = generate(spec).tocsr()
    sp.save_npz(path, A, compressed=False)
    return A


def main() -> None:
    device, cache, runs, specs = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4:]
    cache.mkdir(parents=True, exist_ok=True)
    dev = clspmv.select_device(device)
    runs = [int(g) for g in runs.split(",")]
    for spec in specs:
        A = matrix(spec, cache)
        for dtype in (np.float64, np.float32):
            Ad = A.astype(dtype)
            xh = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = Ad @ xh
            mats, err = {}, {}
            for g in runs:
                M = clspmv.DeviceMatrix.from_scipy(Ad, format="csr-adaptive", device=dev,
                                                   dtype=dtype, sm_queues=g)
                err[g] = float(np.max(np.abs(M @ xh - ref)) / max(1e-30, np.max(np.abs(ref))))
                mats[g] = M
            q = dev.queue
            x = cl_array.to_device(q, xh)
            y = cl_array.zeros(q, A.shape[0], dtype)
            best = {g: np.inf for g in runs}
            for _ in range(40):
                for g, M in mats.items():
                    M.matvec(x, y)
                    ns, _ = matrix_ns(M, lambda: M.matvec(x, y))
                    best[g] = min(best[g], ns / 1e6)
            cus = cusparse_product(Ad, xh)
            print(json.dumps({"spec": spec, "dtype": np.dtype(dtype).name, "nnz": int(A.nnz),
                              "blocks": mats[runs[0]].params["blocks"],
                              "ms": {g: round(v, 4) for g, v in best.items()},
                              "cusparse_ms": cus.timing.min_ms if cus.timing else None,
                              "max_rel_err": max(err.values())}), flush=True)
            del mats


if __name__ == "__main__":
    main()
