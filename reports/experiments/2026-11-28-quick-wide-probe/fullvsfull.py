import sys, numpy as np
sys.path.insert(0, "/work/main/tools"); sys.path.insert(0, "/work/main")
import quick_crossval as qc
from clspmv.model.timemodel import Calibration
from clspmv.formats import SINGLE_FORMATS
from clspmv.bench.suites import SUITES
paths = sys.argv[1:]
cals = [Calibration.from_json(qc.read_json(p), SINGLE_FORMATS) for p in paths]
facts = qc.read_json(paths[0])["measurements"]["facts"]
key = (facts["simd_width"], facts["compute_units"])
names = list(SUITES)
mats = qc.suite_features(names, {key}, qc.Path("/tmp/clspmv-crossval-features"))
recs = []
for i, a in enumerate(cals):
    for j, b in enumerate(cals):
        if i == j: continue
        for name in names:
            per = qc.ratios(a, b, mats[name], key)
            recs.append({"pair": f"{j} scored by {i}", "suite": name, "summary": qc.summary(r for r, _, _ in per.values()), "matrices": per})
print(qc.table(recs, "pair", names))
print("T", qc.score(recs, qc.TUNING)); print("H", qc.score(recs, set(names) - set(qc.TUNING)))
for r in recs:
    for m, (x, pick, best) in r["matrices"].items():
        if x > 1.05: print(f"{x:.2f} {r['pair']} {r['suite']:15s} {m[:45]:45s} pick={pick} best={best}")
