"""Replay of the trial's candidate rule (clspmv.model.trial.candidates: TOP formats of least
predicted time plus each family's best within BAND above the best) on every stored model_eval
measurement file of reports/ (measured-*.json: per matrix every format's measured kernel ms and
each calibration's predictions), grouped by machine (zen4, zen5, h200). The trial's choice is
replayed in the stored measured times (the model's choice unless a candidate measured 5 % faster),
so it is optimistic against a trial that times the candidates again.

    python band_replay.py
"""
import glob
import json
import math
from collections import defaultdict
from pathlib import Path

FAM = {"ell": ("ell", "ellr", "ellr-t", "hyb", "dia"), "sliced": ("sell", "pjds")}
def fam(f):
    for k, v in FAM.items():
        if f in v: return k
    return "csr"
def cands(pred, top, band):
    ranked = sorted(pred, key=lambda f: (pred[f], f))
    out = ranked[:top]; limit = pred[ranked[0]] * (1 + band); seen = set()
    for f in ranked:
        if fam(f) not in seen:
            seen.add(fam(f))
            if pred[f] <= limit and f not in out: out.append(f)
    return out
groups = defaultdict(list)
for path in sorted(glob.glob(str(Path(__file__).resolve().parents[1] / "*/measured-*.json"))):
    d = json.load(open(path))
    grp = "h200" if "h200" in path or path.split("/")[-2] in ("2026-11-26-dia",) else ("zen5" if "zen5" in path else "zen4")
    for r in d["records"]:
        m = r["measured_ms"]
        for lab, v in r.items():
            if not isinstance(v, dict) or "predicted_ms" not in v or "trial" in lab: continue
            pred = {f: p for f, p in v["predicted_ms"].items() if f in m and p}
            if len(pred) < 2: continue
            groups[grp].append((path, r["matrix"], pred, m))
policies = [(3, b) for b in (0.0, 0.3, 0.6, 0.8, 1.0, 1.5, 3.0)] + [(2, 1.0), (1, 1.0), (4, 0.6)]
for grp, recs in groups.items():
    print(f"== {grp}: {len(recs)} (matrix, calibration) records")
    for top, band in policies:
        rs, nc = [], []
        for path, mat, pred, m in recs:
            c = cands(pred, top, band); choice = c[0]
            best_c = min(c, key=lambda f: m[f])
            if m[best_c] < m[choice] * (1 - 0.05): choice = best_c
            rs.append(min(m.values()) / m[choice]); nc.append(len(c))
        gm = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"  top {top} band {band}: gm {gm:.3f} worst {min(rs):.3f} within5 {sum(r >= 0.95 for r in rs) / len(rs):.0%} cands {sum(nc)/len(nc):.2f}")
