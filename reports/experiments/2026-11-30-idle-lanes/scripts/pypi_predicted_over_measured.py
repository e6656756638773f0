import json, pickle, sys
from pathlib import Path
import numpy as np
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration
cal = Calibration.from_json(json.loads(next(Path(sys.argv[1]).glob("calibration-*.json")).read_text()), SINGLE_FORMATS)
mfeats = pickle.loads(Path("/tmp/s22/replay/feats-16-2.pkl").read_bytes())
F = ("csr-blocks", "csr-scalar", "csr-merge", "sell", "pjds", "bsr", "ellr", "hyb", "dia")
print("large_ratio", {k: round(v, 2) for k, v in cal.large_ratio.items() if k in F}, "miss", round(cal.large_miss, 2))
print(f"{'matrix':40s} " + " ".join(f"{f:>10s}" for f in F))
for m in sys.argv[2:]:
    for r in json.loads(Path(m).read_text())["records"]:
        ms = dict(r["measured_ms"]); f = mfeats[r["matrix"]]
        pr = {k: p.kernel_s * 1e3 for k, p in predict_features(f, cal, 256).items() if p.refused is None}
        print(f"{r['matrix'][4:44]:40s} " + " ".join(f"{(pr[k]/ms[k] if ms.get(k) and k in pr else float('nan')):10.2f}" for k in F), " best", min(ms, key=lambda k: ms[k] or 1e9), " pick", min((k for k in pr if ms.get(k)), key=pr.get))
