"""How much of a uniform random matrix's product is x's gathers? The same rows with columns
folded into a window of W columns (cols mod W), pjds/sell/csr-blocks and MKL optimised, rounds."""
import sys, os
import numpy as np
import scipy.sparse as sp
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tools"))
import clspmv
from clspmv.device import select_device
from clspmv.bench.sources import resolve
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench import openmp
from cpu_vs_mkl import side_by_side, MKL_BLOCKTIME_ROUNDS_MS
dev = select_device(sys.argv[1])
A = resolve(sys.argv[2], progress=False).load().tocsr()
formats = sys.argv[3].split(",")
rounds = 9
for W in [int(w) for w in sys.argv[4].split(",")]:
    B = A if W == 0 else sp.csr_matrix((A.data, A.indices % W, A.indptr), shape=A.shape)
    B.sum_duplicates(); B.sort_indices()
    x = np.random.default_rng(1).uniform(-1, 1, B.shape[1])
    calls = {}
    for f in formats:
        M = clspmv.DeviceMatrix.from_scipy(B, format=f, device=dev)
        calls[f] = (lambda M: lambda: M.matvec(x))(M)
    opt = OptimisedMkl(B, expected_calls=100)
    out = np.empty(B.shape[0])
    calls["mkl-opt"] = lambda: opt.matvec(x, out)
    with openmp.blocktime(MKL_BLOCKTIME_ROUNDS_MS):
        s = side_by_side(calls, rounds)
    med = {k: float(np.median(v)) for k, v in s.items()}
    print(f"W={W:8d} nnz={B.nnz/1e6:.2f}M " + " ".join(f"{k}={v:7.3f}" for k, v in med.items())
          + "  best/mkl=" + f"{med['mkl-opt']/min(med[f] for f in formats):.3f}", flush=True)
    opt.close()
