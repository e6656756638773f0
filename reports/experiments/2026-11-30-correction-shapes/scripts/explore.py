import json, pickle, sys, copy
from pathlib import Path
import numpy as np
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.timemodel import Calibration, stream_miss_share, streamed_bytes, scattered_share, TERMS
cal = Calibration.from_json(json.loads(next(Path(sys.argv[1]).glob("calibration-*.json")).read_text()), SINGLE_FORMATS)
raw = copy.deepcopy(cal); raw.large_ratio = {}
mfeats = pickle.loads(Path("/tmp/s22/replay/feats-16-2.pkl").read_bytes())
F = ("csr-blocks", "csr-scalar", "sell", "pjds")
print("ratio", {k: round(v,2) for k,v in cal.large_ratio.items() if k in F})
for m in sys.argv[2:]:
    for r in json.loads(Path(m).read_text())["records"]:
        ms = dict(r["measured_ms"]); f = mfeats[r["matrix"]]
        out = []
        for k in F:
            if not ms.get(k): out.append("   -   "); continue
            p = raw.kernel_time(k, f)*1e3
            miss = stream_miss_share(streamed_bytes(k, f), cal.cache_bytes, cal.stream_miss)
            out.append(f"{p/ms[k]:5.2f}/{miss:4.2f}")
        t = raw.terms("sell", f) * np.array(raw.kernel["sell"])
        share = t / t.sum()
        top = sorted(zip(TERMS, share), key=lambda x: -x[1])[:3]
        print(f"{r['matrix'][4:40]:36s} e/r={f.entries/f.rows:6.1f} sc={scattered_share(f):4.2f} " + " ".join(out), " ".join(f"{a}:{b:.2f}" for a,b in top))
