"""The fastest clspmv formats against MKL from numpy x to numpy y, side by side: per matrix of
the cpu suite, MKL's mkl_sparse_d_mv (2 threads, its handle made once) and ``M @ x`` of each
candidate format (the 3 fastest by wall time in the bench runs given), one call of each in turn,
ROUNDS rounds after a warm-up; the median of each product's calls. Unlike a bench run, where
MKL's product and each format's are timed minutes apart, a slow phase of the shared machine
falls on all of them alike.

    python side_by_side_mkl.py DEVICE ROUNDS BENCH_FOLDER...   (float64; JSON lines on stdout)
"""

import json
import sys
import time
from collections import defaultdict

import numpy as np

import clspmv
from clspmv.bench.baselines import _MklProduct
from clspmv.bench.availability import load_sparse_dot_mkl
from clspmv.bench.records import read_results, results_path
from clspmv.bench.sources import resolve


def candidates(folders: list[str], count: int = 3) -> dict[str, list[str]]:
    """Per matrix, the ``count`` formats of least median wall time over the bench runs."""
    walls: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for folder in folders:
        for r in read_results(results_path(folder))["records"]:
            if r["kind"] == "format" and r["status"] == "ok" and r["operation"] == "spmv" \
                    and r.get("wall_ms"):
                walls[r["matrix"]][r["format"]].append(r["wall_ms"])
    return {m: sorted(f, key=lambda k: np.median(f[k]))[:count] for m, f in walls.items()}


def main() -> None:
    device, rounds, folders = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    dev = clspmv.select_device(device)
    mkl = load_sparse_dot_mkl()
    mkl.mkl_set_num_threads(2)
    for spec, formats in candidates(folders).items():
        A = resolve(spec, progress=False).load().tocsr().astype(np.float64)
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        ref = A @ x
        calls = {"mkl": _MklProduct(mkl, A)}
        for f in formats:
            M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev, dtype="float64")
            calls[f] = lambda M=M: M @ x
        calls["mkl"], handle = (lambda h=calls["mkl"]: h(x)), calls["mkl"]
        errors = {k: float(np.max(np.abs(c() - ref)) / np.max(np.abs(ref))) for k, c in calls.items()}
        times: dict[str, list[float]] = defaultdict(list)
        for i in range(rounds + 3):  # 3 rounds of warm-up
            for name, call in calls.items():
                t0 = time.perf_counter()
                call()
                if i >= 3:
                    times[name].append((time.perf_counter() - t0) * 1e3)
        handle.close()
        med = {k: float(np.median(v)) for k, v in times.items()}
        best = min(formats, key=med.get)
        print(json.dumps({"spec": spec, "nnz": int(A.nnz), "ms": {k: round(v, 4) for k, v in med.items()},
                          "fastest": best, "x_mkl": round(med["mkl"] / med[best], 3),
                          "max_error": max(errors.values())}), flush=True)


if __name__ == "__main__":
    main()
