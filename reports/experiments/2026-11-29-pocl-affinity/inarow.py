"""Back-to-back products (numpy x to numpy y), as a solver runs them: per matrix the given
format's median over COUNT products in a row, and MKL's optimised handle's in a row (default
blocktime), in one process; prints JSON lines."""
import json, os, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "tools"))
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench import baselines
from cpu_vs_mkl import wall_ms
dev = clspmv.select_device(sys.argv[1])
baselines.mkl_threads_set(int(sys.argv[2]))
COUNT = 30
for item in sys.argv[3:]:
    spec, fmt = item.rsplit("@", 1)
    A = canonical_csr(resolve(spec, progress=False).load(), np.dtype("float64"))
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev)
    y = np.empty(A.shape[0])
    opt = OptimisedMkl(A, expected_calls=4 * COUNT)
    out = {"matrix": spec, "format": fmt, "aff": os.environ.get("POCL_AFFINITY")}
    for rep in range(2):
        wall_ms(lambda: M.matvec(x, y), 3)
        c = float(np.median(wall_ms(lambda: M.matvec(x, y), COUNT)))
        wall_ms(lambda: opt.matvec(x, y), 3)
        m = float(np.median(wall_ms(lambda: opt.matvec(x, y), COUNT)))
        out[f"clspmv{rep}"], out[f"mkl{rep}"] = c, m
    opt.close()
    print(json.dumps(out), flush=True)
