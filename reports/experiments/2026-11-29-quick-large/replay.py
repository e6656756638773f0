"""Replay (the design study, before the library had the correction): ship quick calibration's choices vs choices with per-format beyond-cache corrections
from the big probes, judged in stored measured kernel times."""
import json, sys
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
from large_mats import big_matrices
from clspmv.device import select_device
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS, format_class
from clspmv.bench.sources import resolve
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration, miss_share
# usage: [FAMILY=1] [NORM=1|INTERP=1] python replay.py QUICK_CAL.json PROBES.json FORMATS MATRICES|"" MEASURED.json...
dev = select_device("1:0")
cal = Calibration.from_json(json.load(open(sys.argv[1])), SINGLE_FORMATS)
probes = json.load(open(sys.argv[2]))
use = sys.argv[3].split(",")  # formats probed on the big matrices
which = sys.argv[4].split(",") if len(sys.argv) > 4 and sys.argv[4] else list(probes["big"])
def feats(csr):
    return with_exact_diagonals(features(csr, dev.simd_width, compute_units=dev.compute_units), csr)
ratios = {}
for k, m in big_matrices(probes["rows"]).items():
    if k not in which: continue
    f = feats(canonical_csr(m, np.float64))
    for fmt, t in probes["big"][k]["kernel_s"].items():
        if fmt in use:
            ratios.setdefault(fmt, []).append(t / cal.kernel_time(fmt, f))
rho = {f: float(np.exp(np.mean(np.log(v)))) for f, v in ratios.items()}
rest = float(np.median(list(rho.values())))
from clspmv.formats import FORMAT_CLASSES
import os
if os.environ.get("FAMILY"):
    for name in SINGLE_FORMATS:
        cls = FORMAT_CLASSES[name]
        if name in rho: continue
        fam = [v for g, v in rho.items() if FORMAT_CLASSES[g].trial_family == cls.trial_family]
        if fam: rho[name] = float(np.exp(np.mean(np.log(fam))))
print("rho", {f: round(v, 2) for f, v in rho.items()}, "rest", round(rest, 2))
def miss(fmt, f):
    streamed = format_class(fmt).matrix_bytes(f) + (f.rows + f.cols) * f.itemsize
    m = miss_share(cal.stream_miss, streamed)
    if os.environ.get("INTERP"):
        return min(1.5, max(0.0, (m - SMALL_MISS) / (PROBE_MISS - SMALL_MISS)))
    if os.environ.get("NORM"):
        return m / PROBE_MISS
    return m
_pf = feats(canonical_csr(big_matrices(probes["rows"])["big-random"], np.float64))
PROBE_MISS = miss_share(cal.stream_miss, format_class("csr-blocks").matrix_bytes(_pf) + (_pf.rows + _pf.cols) * _pf.itemsize)
from clspmv.model import quick as Q
_sm = [feats(canonical_csr(v, np.float64)) for k, v in Q.probe_matrices(dev.simd_width, dev.compute_units).items() if k != "launch"]
SMALL_MISS = float(np.median([miss_share(cal.stream_miss, format_class("csr-blocks").matrix_bytes(g) + (g.rows + g.cols) * g.itemsize) for g in _sm]))
print("probe miss", PROBE_MISS, "small", SMALL_MISS)
for path in sys.argv[5:]:
    recs = json.load(open(path))["records"]
    out = {"ship": [], "corr": []}
    for r in recs:
        meas = r["measured_ms"]
        csr = canonical_csr(resolve(r["matrix"]).load(), np.float64)
        f = feats(csr)
        p = {k: v.kernel_s for k, v in predict_features(f, cal, 256).items() if v.kernel_s is not None and k in meas}
        c = {k: v * rho.get(k, rest) ** miss(k, f) for k, v in p.items()}
        best = min(meas.values())
        a, b = min(p, key=p.get), min(c, key=c.get)
        out["ship"].append(best / meas[a]); out["corr"].append(best / meas[b])
        print(f"  {r['matrix'][:50]:50s} fastest {min(meas, key=meas.get):10s} ship {a:10s} {best/meas[a]:.3f}  corr {b:10s} {best/meas[b]:.3f}")
    for k, v in out.items():
        v = np.array(v); print(path.split('/')[-1], k, f"geomean {np.exp(np.log(v).mean()):.3f} worst {v.min():.3f} within5 {np.mean(v >= 1/1.05):.0%}")
