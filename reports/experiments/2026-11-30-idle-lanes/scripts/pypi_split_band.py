"""Time csr-blocks on the quick calibration's large band under this device (as the large probes
do: kernel_times, fastest of three passes), then replay PyPI's quick calibrations with the
correction split by the gathers and that band time as the shared part."""
import dataclasses, json, pickle, sys
from pathlib import Path
from types import SimpleNamespace
import numpy as np, pyopencl.array as cl_array
import clspmv
from clspmv.canonical import canonical_csr
from clspmv.formats import convert, format_class
from clspmv.formats.layout import Layout
from clspmv.model import quick
from clspmv.model.predict import predict_features
from clspmv.model.probes import REPEATS, kernel_times
from clspmv.model.quick_large import BANDED, large_probe_matrices
from clspmv.precision import resolve
W = Path("/tmp/s22/replay")
dev = clspmv.select_device(sys.argv[1])
band = canonical_csr(large_probe_matrices(dev.simd_width, dev.compute_units)[BANDED], np.float64)
fm = {"csr-blocks": convert(band, "csr-blocks", format_class("csr-blocks").layout_for(dev), resolve(np.float64, np.float64))}
fm["csr-blocks"].upload(dev)
x = cl_array.to_device(dev.queue, np.ones(band.shape[1])); y = cl_array.zeros(dev.queue, band.shape[0], np.float64)
t = min(kernel_times(fm, x, y, REPEATS)["csr-blocks"] for _ in range(3))
print(f"csr-blocks on {BANDED}: {t * 1e3:.3f} ms")
folders = [Path(a) for a in sys.argv[2].split(",")]
measured = sys.argv[3].split(",")
pfeats = pickle.loads((W / "probefeats-16-2.pkl").read_bytes())
mfeats = pickle.loads((W / "feats-16-2.pkl").read_bytes())
layout = Layout(16, 256, 2, 1 << 20, gathers_slices=True)
for folder in folders:
    data = json.loads(next(folder.glob("calibration-*.json")).read_text())
    fake = SimpleNamespace(name=data["device"], driver_version=data["driver"], cache_bytes=data["cache_bytes"], compute_units=2, type="cpu", simd_width=16)
    st = data["measurements"]["quick"]
    keyed = lambda d: {tuple(k.split("/")): v for k, v in d.items()}
    large = keyed(st.get("large_s", {}))
    probes = quick.QuickProbes(keyed(st["kernel_s"]), keyed(st["conversion_s"]), st["stream_bw"], st["passes"], st["slowest"], st["noisy"], st.get("seconds", 0), large)
    cals = {"as is": quick.fit_quick(probes, pfeats, fake, layout=layout)}
    orig = quick.corrects_by_gathers
    quick.corrects_by_gathers = lambda layout: True
    probes2 = dataclasses.replace(probes, large_s={**large, (BANDED, "csr-blocks"): t})
    cals["split, band"] = quick.fit_quick(probes2, pfeats, fake, layout=layout)
    quick.corrects_by_gathers = orig
    print(folder.name, {k: (round(c.large_shared, 2), round(c.large_scatter, 2), {f: round(v, 2) for f, v in c.large_ratio.items() if f in ("csr-blocks", "sell", "pjds", "dia")}) for k, c in cals.items()})
    score = {k: [] for k in cals}
    for m in measured:
        for r in json.loads(Path(m).read_text())["records"]:
            ms = {k: v for k, v in dict(r["measured_ms"]).items() if v}
            shown = [f"{r['matrix'][4:44]:40s} best={min(ms, key=ms.get):10s}"]
            for label, cal in cals.items():
                pr = {k: p.kernel_s for k, p in predict_features(mfeats[r["matrix"]], cal, 256).items() if p.refused is None and k in ms}
                pick = min(pr, key=pr.get); score[label].append(min(ms.values()) / ms[pick])
                shown.append(f"{label}:{pick}({score[label][-1]:.2f})")
            print(" ".join(shown))
    for k, v in score.items():
        print(f"{folder.name} {k}: geomean {np.exp(np.mean(np.log(v))):.3f} worst {min(v):.2f} n={len(v)}")
