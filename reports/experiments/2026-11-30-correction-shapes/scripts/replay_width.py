"""Replay: the large probes' correction per format as a function of the product's scattered gathers
and row width (log ratio = a + b*gathers + c*log2 width, fitted per timed format), against as is.
Args: TAG:FOLDER:LARGE.json:MEASUREDPREFIX:UNITS ..."""
import json, pickle, sys, dataclasses
from pathlib import Path
import numpy as np
sys.path.insert(0, str(Path(__file__).parent))  # large_view beside it
from large_view import load, lf
from clspmv.formats.layout import Layout
from clspmv.formats import FORMAT_CLASSES
from clspmv.model import quick, timemodel
from clspmv.model.predict import predict_features
from clspmv.model.quick_large import BANDED, lender
from clspmv.model.timemodel import scattered_share, stream_miss_share, streamed_bytes, LARGE_EXTRAPOLATION
A = Path("reports/experiments/2026-11-30-idle-lanes/again-cfecc7a")
ORIG = timemodel.Calibration.large_factor
PULL = float(dict(a.split("=") for a in sys.argv if a.startswith("pull=")).get("pull", 0.5))
NOWIDTH = "nowidth" in sys.argv
def width(fmt, f):
    if NOWIDTH: return 0.0
    return float(np.clip(np.log2(max(f.slots_of(fmt) / max(f.rows, 1), 1e-9)), 1, 6))
def fit_rule(raw, large, probes_used):
    """per timed format (a, b, c)"""
    coef, misses = {}, []
    for f in {f for _, f in large}:
        X, y = [], []
        for (m, g), t in large.items():
            if g != f or m not in probes_used: continue
            X.append([1.0, scattered_share(lf[m]), width(f, lf[m])]); y.append(np.log(t / raw.kernel_time(f, lf[m])))
            misses.append(stream_miss_share(streamed_bytes(f, lf[m]), raw.cache_bytes, raw.stream_miss))
        X, y = np.array(X), np.array(y)
        # slopes pulled to 0; intercept free; a single probe kind -> intercept only
        P = np.diag([0.0, PULL, PULL])
        Xc = np.vstack([X, P]); yc = np.concatenate([y, [0, 0, 0]])
        coef[f] = np.linalg.lstsq(Xc, yc, rcond=None)[0]
    return coef, float(np.median(misses))
def make_factor(coef, miss0):
    def factor(self, fmt, f):
        c = coef.get(fmt)
        if c is None:
            lend = lender(fmt)
            got = [v for k, v in coef.items() if lend(FORMAT_CLASSES[k])]
            c = got[0] if got else np.median(np.array(list(coef.values())), axis=0)
        miss = stream_miss_share(streamed_bytes(fmt, f), self.cache_bytes, self.stream_miss)
        power = min(LARGE_EXTRAPOLATION, miss / miss0)
        return float(np.exp(c[0] + c[1] * scattered_share(f) + c[2] * width(fmt, f)) ** power)
    return factor
layout = Layout(16, 256, 2, 1 << 20, gathers_slices=True)
for arg in [a for a in sys.argv[1:] if ":" in a]:
    tag, folder, ljson, meas, units = arg.split(":")
    units = int(units)
    pfeats = pickle.loads(Path(f"/tmp/s22/replay/probefeats-16-{units}.pkl").read_bytes())
    mfeats = pickle.loads(Path(f"/tmp/s22/replay/feats-16-{units}.pkl").read_bytes())
    dev, probes = load(folder, units)
    large = {tuple(k.split("/")): v for k, v in json.loads(Path(ljson).read_text()).items()}
    lay = Layout(16, 256, units, 1 << 20, gathers_slices=True)
    plan = quick.large_probe_plan(lay)
    as_is = {k: v for k, v in large.items() if k[1] in plan.get(k[0], ())}
    for (m, f) in as_is: pfeats.setdefault(m, lf[m])
    cals, factors = {}, {}
    cals["as is"] = quick.fit_quick(dataclasses.replace(probes, large_s=as_is), pfeats, dev, layout=lay)
    factors["as is"] = ORIG
    raw = quick.fit_quick(dataclasses.replace(probes, large_s={}), pfeats, dev, layout=lay)
    T = ("csr-blocks", "sell", "pjds", "dia")
    # own split: per format its band ratio R and irregular ratio I, interpolated by gathers
    sub = {k: v for k, v in large.items() if k[1] in T and (k[1] != "dia" or k[0] == BANDED) and k[0] in ("large-powerlaw", "large-random", BANDED)}
    own = {}
    for f in {f for _, f in sub}:
        irr = [np.log(t / raw.kernel_time(f, lf[m])) for (m, g), t in sub.items() if g == f and m != BANDED]
        band = [np.log(t / raw.kernel_time(f, lf[m])) for (m, g), t in sub.items() if g == f and m == BANDED]
        own[f] = (band[0] if band else np.mean(irr), np.mean(irr) if irr else band[0])
    g0 = float(np.median([scattered_share(lf[m]) for m in ("large-powerlaw", "large-random")]))
    ms0 = float(np.median([stream_miss_share(streamed_bytes(f, lf[m]), raw.cache_bytes, raw.stream_miss) for (m, f) in sub if m != BANDED]))
    def own_factor(self, fmt, f, own=own, g0=g0, ms0=ms0):
        c = own.get(fmt)
        if c is None:
            lend = lender(fmt); got = [v for k, v in own.items() if lend(FORMAT_CLASSES[k])]
            c = got[0] if got else tuple(np.median(np.array(list(own.values())), axis=0))
        miss = stream_miss_share(streamed_bytes(fmt, f), self.cache_bytes, self.stream_miss)
        power = min(LARGE_EXTRAPOLATION, miss / ms0)
        g = min(1.0, scattered_share(f) / g0)
        return float(np.exp((c[0] + (c[1] - c[0]) * g) * power))
    cals["own split"] = raw; factors["own split"] = own_factor
    if "-c" in sys.argv: print(tag, "own", {f: np.round(np.exp(c), 2).tolist() for f, c in own.items()})
    for label, used in (("width+band", {"large-powerlaw", "large-random", "large-banded"}),
                        ("width+wide", {"large-powerlaw", "large-random", "large-banded", "large-wide"}),
                        ("width+wide64", {"large-powerlaw", "large-random", "large-banded", "large-wide", "large-wide64"})):
        sub = {k: v for k, v in large.items() if k[1] in T and (k[1] != "dia" or k[0] == BANDED)}
        coef, miss0 = fit_rule(raw, sub, used)
        cals[label] = raw; factors[label] = make_factor(coef, miss0)
        if "-c" in sys.argv: print(tag, label, {f: np.round(c, 2).tolist() for f, c in coef.items()})
    recs = [r for s in ("offsuite", "cpu") for r in json.loads((A / f"{meas}-{s}.json").read_text())["records"]]
    out = {}
    for label, cal in cals.items():
        timemodel.Calibration.large_factor = factors[label]
        v = []
        for r in recs:
            ms = {k: x for k, x in dict(r["measured_ms"]).items() if x}
            pr = {k: p.kernel_s for k, p in predict_features(mfeats[r["matrix"]], cal, 256).items() if p.refused is None and k in ms}
            pick = min(pr, key=pr.get); v.append(min(ms.values()) / ms[pick])
            out.setdefault(r["matrix"][4:34], []).append(f"{pick[:8]}{v[-1]:.2f}")
        timemodel.Calibration.large_factor = ORIG
        print(f"{tag} {label:12s} offsuite {np.exp(np.mean(np.log(v[:12]))):.3f} cpu {np.exp(np.mean(np.log(v[12:]))):.3f} all {np.exp(np.mean(np.log(v))):.3f} worst {min(v):.2f}")
    if "-v" in sys.argv:
        for m, s in out.items(): print(f"   {m:30s}", " ".join(f"{x:14s}" for x in s))
