"""Where csr-adaptive loses to cuSPARSE on the irregular matrices: each matrix, its short rows
alone (rows of more than CAP entries emptied) and its long rows alone (the others emptied),
timed with csr-adaptive (greedy blocks and split_rows tiles) and csr-merge, cuSPARSE beside;
csr-adaptive's two kernels (row blocks and chunks; the long rows' combine) also timed apart.
Fastest of 30 alternating rounds.

    python probe.py DEVICE CACHE SPEC ...
"""

import json
import sys

import numpy as np
import scipy.sparse as sp

import clspmv
from clspmv.cover import matrix_ns

from side_by_side import cusparse_ms, device_and_matrices, error, operands

CAP = {"float64": 1024, "float32": 2048}
CONFIGS = {"adaptive": ("csr-adaptive", {}), "split": ("csr-adaptive", {"split_rows": True}),
           "merge": ("csr-merge", {})}


def keep_rows(A: sp.csr_matrix, keep: np.ndarray) -> sp.csr_matrix:
    """A with the rows outside ``keep`` emptied (same shape)."""
    return sp.diags(keep.astype(A.dtype)) @ A


def main() -> None:
    dev, matrices = device_and_matrices(sys.argv[1:])
    for spec, A in matrices:
        lengths = np.diff(A.indptr)
        for dtype in ("float64", "float32"):
            Ad, xh, _, x, y = operands(dev, A, dtype)
            long = lengths > CAP[dtype]
            parts = {"all": Ad, "short": keep_rows(Ad, ~long), "long": keep_rows(Ad, long)}
            parts["long"].eliminate_zeros()
            parts["short"].eliminate_zeros()
            for part, P in parts.items():
                rec = {"spec": spec, "dtype": dtype, "part": part, "nnz": int(P.nnz)}
                mats = {k: clspmv.DeviceMatrix.from_scipy(P, format=f, device=dev, dtype=dtype,
                                                          **kw) for k, (f, kw) in CONFIGS.items()}
                ref = P @ xh
                rec.update({k + "_err": error(M, xh, ref) for k, M in mats.items()})
                best = {k: np.inf for k in mats}
                kernels = {k: [np.inf] * 3 for k in mats}
                for _ in range(30):
                    for k, M in mats.items():
                        M.matvec(x, y)
                        ns, _ = matrix_ns(M, lambda M=M: M.matvec(x, y))
                        best[k] = min(best[k], ns / 1e6)
                        M.matvec(x, y)
                        for e in M.last_events:
                            e.wait()
                        for i, e in enumerate(M.last_events[:3]):
                            kernels[k][i] = min(kernels[k][i],
                                                (e.profile.end - e.profile.start) / 1e6)
                rec.update({k: round(v, 4) for k, v in best.items()})
                rec.update({k + "_kernels": [round(v, 4) for v in ks if v < np.inf]
                            for k, ks in kernels.items()})
                rec["cusparse"] = cusparse_ms(P, xh)
                print(json.dumps(rec), flush=True)
                del mats


if __name__ == "__main__":
    main()
