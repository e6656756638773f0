"""Replay correction rules beyond the cache on stored quick calibrations (74df651) and every
format's times in rounds (cfecc7a). Usage: rules.py"""
import json, pickle, sys
from pathlib import Path
import numpy as np
from clspmv.formats import SINGLE_FORMATS
from clspmv.model import timemodel
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration, scattered_share, stream_miss_share, streamed_bytes, LARGE_EXTRAPOLATION
R = Path("reports/2026-11-30-cpu-mkl-optimised-slice-groups"); A = Path("reports/experiments/2026-11-30-idle-lanes/again-cfecc7a")
W = Path("/tmp/s22/replay")
RUNS = [("pypi", "zen4-pypi-pocl-74df651", "zen4-pypi", 2), ("pypi2", "zen4-pypi-pocl-74df651-2", "zen4-pypi", 2),
        ("deb", "zen4-debian-pocl-74df651", "zen4-debian", 2), ("deb2", "zen4-debian-pocl-74df651-2", "zen4-debian", 2),
        ("n16", "node-16cores-pocl50-74df651", "node16", 16), ("n32", "node-32cores-pocl50-74df651", "node32", 32)]
def rule_factory(name, sat=None):
    def factor(self, fmt, f):
        if not self.large_ratio or self.large_miss <= 0:
            return 1.0
        ratio = self.large_ratio.get(fmt) or float(np.median(list(self.large_ratio.values())))
        miss = stream_miss_share(streamed_bytes(fmt, f), self.cache_bytes, self.stream_miss)
        power = min(LARGE_EXTRAPOLATION, miss / self.large_miss)
        if name == "as is" or fmt not in ("sell", "pjds"):
            return float(ratio ** power)
        shared = self.large_ratio["csr-blocks"]
        g = min(1.0, scattered_share(f) / sat)
        return float(shared ** power * (ratio / shared) ** (power * g))
    return factor
RULES = {"as is": rule_factory("as is")}
for s in (0.9, 0.6, 0.4, 0.25):
    RULES[f"rel sat{s}"] = rule_factory("rel", s)
res = {k: {} for k in RULES}
for tag, folder, meas, units in RUNS:
    cal = Calibration.from_json(json.loads(next((R / folder).glob("calibration-*.json")).read_text()), SINGLE_FORMATS)
    mfeats = pickle.loads((W / f"feats-16-{units}.pkl").read_bytes())
    recs = [r for s in ("offsuite", "cpu") for r in json.loads((A / f"{meas}-{s}.json").read_text())["records"]]
    for rname, fn in RULES.items():
        timemodel.Calibration.large_factor = fn
        v = []
        for r in recs:
            ms = {k: x for k, x in dict(r["measured_ms"]).items() if x}
            pr = {k: p.kernel_s for k, p in predict_features(mfeats[r["matrix"]], cal, 256).items() if p.refused is None and k in ms}
            pick = min(pr, key=pr.get); v.append(min(ms.values()) / ms[pick])
            res[rname].setdefault(r["matrix"][4:30], {})[tag] = (pick, v[-1])
        res[rname][("sum", tag)] = (np.exp(np.mean(np.log(v[:12]))), np.exp(np.mean(np.log(v[12:]))), np.exp(np.mean(np.log(v))), min(v))
for rname in RULES:
    print(rname, " ".join(f"{t}: {a:.3f}/{b:.3f} all {c:.3f} w{d:.2f}" for (_, t), (a, b, c, d) in ((k, x) for k, x in res[rname].items() if isinstance(k, tuple))))
if "-v" in sys.argv:
    for m in res["as is"]:
        if isinstance(m, tuple): continue
        print(f"{m:26s}", " | ".join(" ".join(f"{res[r][m][t][0][:6]}{res[r][m][t][1]:.2f}" for t in ("pypi", "deb", "n16")) for r in RULES))
