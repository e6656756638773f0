"""Replay: PyPI's PoCL 3.0 quick calibration with the correction beyond the cache split by the
gathers (corrects_by_gathers forced True; no csr-blocks band timing: the shared part falls back
to the irregular probes' geometric mean), judged on every format's times in rounds."""
import json, pickle, sys
from pathlib import Path
from types import SimpleNamespace
import numpy as np
from clspmv.formats.layout import Layout
from clspmv.model import quick, quick_large
from clspmv.model.predict import predict_features
W = Path("/tmp/s22/replay")
folder = Path(sys.argv[1])
data = json.loads(next(folder.glob("calibration-*.json")).read_text())
dev = SimpleNamespace(name=data["device"], driver_version=data["driver"], cache_bytes=data["cache_bytes"], compute_units=2, type="cpu", simd_width=16)
layout = Layout(16, 256, 2, 1 << 20, gathers_slices=True)
pfeats = pickle.loads((W / "probefeats-16-2.pkl").read_bytes())
mfeats = pickle.loads((W / "feats-16-2.pkl").read_bytes())
st = data["measurements"]["quick"]
keyed = lambda d: {tuple(k.split("/")): v for k, v in d.items()}
probes = quick.QuickProbes(keyed(st["kernel_s"]), keyed(st["conversion_s"]), st["stream_bw"], st["passes"], st["slowest"], st["noisy"], st.get("seconds", 0), keyed(st.get("large_s", {})))
cals = {"as is": quick.fit_quick(probes, pfeats, dev, layout=layout)}
orig = quick.corrects_by_gathers
quick.corrects_by_gathers = lambda layout: True
cals["by gathers"] = quick.fit_quick(probes, pfeats, dev, layout=layout)
quick.corrects_by_gathers = orig
print({k: (round(c.large_shared, 2), round(c.large_scatter, 2)) for k, c in cals.items()})
score = {k: [] for k in cals}
for m in sys.argv[2:]:
    for r in json.loads(Path(m).read_text())["records"]:
        ms = {k: v for k, v in dict(r["measured_ms"]).items() if v}
        shown = [f"{r['matrix'][4:44]:40s} best={min(ms, key=ms.get):10s}"]
        for label, cal in cals.items():
            pr = {k: p.kernel_s for k, p in predict_features(mfeats[r["matrix"]], cal, 256).items() if p.refused is None and k in ms}
            pick = min(pr, key=pr.get); score[label].append(min(ms.values()) / ms[pick])
            shown.append(f"{label}:{pick}({score[label][-1]:.2f})")
        print(" ".join(shown))
for k, v in score.items():
    print(f"{k}: geomean {np.exp(np.mean(np.log(v))):.3f} worst {min(v):.2f} n={len(v)}")
