"""Kernel ms of every format on small skewed matrices (in the cache) and the quick calibration's
small power-law probe: does sell part from the CSR kernels at probe size? Usage: skew_probe.py DEVICE"""
import runpy, sys
import numpy as np
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.model.benchmarks import small_matrices
from clspmv.precision import resolve as resolve_precision
ev = runpy.run_path("tools/model_eval.py")
dev = clspmv.select_device(sys.argv[1])
prec = resolve_precision(np.float64, np.float64)
mats = {"probe-powerlaw": small_matrices(dev.simd_width, dev.compute_units, 1 << 16)["powerlaw"],
        "probe-random": small_matrices(dev.simd_width, dev.compute_units, 1 << 16)["random"]}
for spec in ["gen:rmat:scale=15,edges=16,seed=3", "gen:rmat:scale=16,edges=8,seed=3",
             "gen:powerlaw:n=65536,k=8,local=0.3,seed=11", "gen:chunglu:n=65536,k=8,seed=6",
             "gen:powerlaw:n=65536,k=8,local=0.9,seed=24"]:
    mats[spec] = resolve(spec).load()
show = ["csr-scalar", "csr-blocks", "csr-merge", "sell", "pjds", "hyb"]
for k, A in mats.items():
    A = canonical_csr(A, np.float64)
    lens = np.diff(A.indptr)
    m = ev["measure"](A, dev, prec)
    best = min(m[f] for f in ("csr-scalar", "csr-blocks", "csr-merge") if f in m)
    print(f"{k:44s} nnz {A.nnz/1e6:5.2f}M max {lens.max():6d} cv {lens.std()/lens.mean():5.2f} | "
          + " ".join(f"{f}={m[f]:.3f}" for f in show if f in m)
          + f" | sell/csr {m['sell']/best:.2f} pjds/csr {m['pjds']/best:.2f}", flush=True)
