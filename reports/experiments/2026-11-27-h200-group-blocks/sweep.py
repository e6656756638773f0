"""csr-adaptive's kernel time at several values of one of its conversion parameters (PARAM:
``group_blocks``, consecutive row blocks one work-group takes, group-blocks.patch here;
``sm_queues``, ../2026-11-27-h200-sm-queues/experiment.patch), all converted at once and timed in
alternating rounds, cuSPARSE beside; both value types. Matrices generated once and kept as .npz
in CACHE (ab.py's). One JSON line per matrix and value type.

    python sweep.py DEVICE CACHE PARAM G1,G2,... SPEC ...

(sweep.jsonl here was written by this script with PARAM fixed to group_blocks, before it took
PARAM; the measurement is the same.)
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.baseline_cusparse import cusparse_product
from clspmv.cover import matrix_ns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-h200-adaptive-one-kernel"))
from ab import matrix  # noqa: E402  (generated once, kept as .npz)


def main() -> None:
    device, cache, param, runs = sys.argv[1], Path(sys.argv[2]), sys.argv[3], sys.argv[4]
    specs = sys.argv[5:]
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
                                                   dtype=dtype, **{param: g})
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
