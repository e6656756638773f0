"""dia with and without CHUNK_VW in cpu_vs_mkl's rounds (numpy to numpy, order rotating, MKL's
blocktime 0), with MKL's optimised handle and scipy: medians of 25 rounds. Needs the kernel's
temporary NO_CHUNK_VW switch."""
import sys
import numpy as np
sys.path.insert(0, "tools")
import clspmv
from clspmv.bench import openmp
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve
from cpu_vs_mkl import side_by_side
dev = clspmv.select_device(sys.argv[1])
for spec in sys.argv[2:]:
    A = resolve(spec).load().tocsr().astype(np.float64)
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    new = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev)
    old = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=dev)
    base = old._fmt.defines
    old._fmt.defines = lambda: {**base(), "NO_CHUNK_VW": 1}
    old._fmt.prepare_kernels()
    assert np.allclose(old @ x, A @ x) and np.allclose(new @ x, A @ x)
    opt = OptimisedMkl(A, expected_calls=80)
    out = np.empty(A.shape[0])
    calls = {"new": lambda: new.matvec(x), "old": lambda: old.matvec(x),
             "mkl-optimised": lambda: opt.matvec(x, out), "scipy": lambda: A @ x}
    with openmp.blocktime(0):
        s = side_by_side(calls, 25)
    opt.close()
    med = {k: float(np.median(v)) for k, v in s.items()}
    print(spec, " ".join(f"{k}={v:.3f}" for k, v in med.items()),
          f"old/new={med['old']/med['new']:.2f} new x mkl={med['mkl-optimised']/med['new']:.2f}"
          f" old x mkl={med['mkl-optimised']/med['old']:.2f}", flush=True)
