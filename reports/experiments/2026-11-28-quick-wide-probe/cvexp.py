"""Variants of the quick calibration scored by tools/quick_crossval.py's cross-validation.
usage: cvexp.py [probe=rows:length:spread[,rows:length:spread...]] [groups=wide] [own=cache,memory] [pull=x] [ownpull=x] [drop=name]"""
import sys, numpy as np
sys.path.insert(0, "/work/main/tools"); sys.path.insert(0, "/work/main"); sys.path.insert(0, "/tmp/exp43")
import quick_crossval as qc
from clspmv.model import quick, benchmarks
from clspmv.bench.suites import SUITES
import fitvar

args = dict(a.split("=", 1) for a in sys.argv[1:])
from clspmv.model.benchmarks import small_matrices
orig_probe = lambda simd, cu: small_matrices(simd, cu, quick.PROBE_ROWS)
extra = [tuple(int(v) for v in s.split(":")) for s in args.get("probe", "").split(",") if s]
drop = [d for d in args.get("drop", "").split(",") if d]
def pm(simd, cu):
    mats = dict(orig_probe(simd, cu))
    for d in drop: mats.pop(d)
    for i, (rows, length, spread) in enumerate(extra):
        rng = np.random.default_rng(17 + i)
        unit = simd * cu
        m = max(unit, rows // unit * unit)
        mats[f"wide{i}"] = benchmarks._from_lengths(np.full(m, length, np.int64), m, spread, rng)
    return mats
bands = [tuple(int(v) for v in s.split(":")) for s in args.get("band", "").split(",") if s]
import scipy.sparse as sp
def pm2(simd, cu):
    mats = pm(simd, cu)
    mats.pop("wide", None)
    for i, (rows, length, step) in enumerate(bands):
        unit = simd * cu
        m = max(unit, rows // unit * unit)
        offs = (np.arange(length) - length // 2) * step
        mats[f"band{i}"] = sp.diags([np.ones(m - abs(o)) for o in offs], offs, shape=(m, m), format="csr")
    return mats
quick.probe_matrices = pm2
if args.get("groups") == "wide":
    quick.GROUPS = {"launch": ("launch",), "memory": ("bytes", "xbytes", "far xbytes"),
                    "cache": ("cached bytes", "work-items", "longest", "lanes", "length changes"),
                    "wide": ("wide bytes", "cached wide bytes")}
fitvar.OWN = args.get("own", "cache").split(",") if args.get("own", "cache") else []
fitvar.PULL = float(args.get("pull", 0.5))
fitvar.OWN_PULL = float(args["ownpull"]) if "ownpull" in args else None
quick.fit_quick = fitvar.fit_quick

names = list(SUITES)
label = " ".join(sys.argv[1:]) or "base"
for bm in (False, True):
    cv = qc.cross_validation("976aa3b", names, qc.Path("/tmp/clspmv-crossval-features"), 0.05, 3, 1.0, bm)
    of = [r for r in cv if r["class"] == "cpu"]
    print(f"{label[:60]:60s} {'proc' if bm else 'dev '} T: {qc.score(of, qc.TUNING)}")
    print(f"{'':60s}      H: {qc.score(of, set(names)-set(qc.TUNING))}", flush=True)
    if not bm and "gpu" in args:
        og = [r for r in cv if r["class"] == "gpu"]
        print(f"{'':60s} gpu  T: {qc.score(og, qc.TUNING)}")
        print(f"{'':60s} gpu  H: {qc.score(og, set(names)-set(qc.TUNING))}", flush=True)
    if "show" in args and not bm:
        print(qc.table([dict(r, fold=f"{r['processor']} {r['held_out'][-30:]}") for r in of], "fold", names))
