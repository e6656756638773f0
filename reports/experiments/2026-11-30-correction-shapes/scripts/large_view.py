import json, pickle, sys, dataclasses
from pathlib import Path
from types import SimpleNamespace
import numpy as np
from clspmv.canonical import canonical_csr
from clspmv.formats.layout import Layout
from clspmv.model import quick
from clspmv.model.benchmarks import _from_lengths
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.quick_large import large_probe_matrices
from clspmv.model.timemodel import TERMS, scattered_share
W = Path("/tmp/s23")  # a cache of the large probes' features (made on the first run)
fk = W / "largefeats-2.pkl"
if fk.exists():
    lf = pickle.loads(fk.read_bytes())
else:
    mats = dict(large_probe_matrices(16, 2)); m = next(iter(mats.values())).shape[0]
    rng = np.random.default_rng(19)
    mats["large-wide"] = _from_lengths(np.full(m // 4, 32, np.int64), m // 4, 96, rng)
    mats["large-wide64"] = _from_lengths(np.full(m // 8, 64, np.int64), m // 8, 160, rng)
    lf = {k: with_exact_diagonals(features(canonical_csr(v, np.float64), 16), canonical_csr(v, np.float64)) for k, v in mats.items()}
    fk.write_bytes(pickle.dumps(lf))
def load(folder, units=2):
    data = json.loads(next(Path(folder).glob("calibration-*.json")).read_text())
    dev = SimpleNamespace(name=data["device"], driver_version=data["driver"], cache_bytes=data["cache_bytes"], compute_units=units, type="cpu", simd_width=16)
    st = data["measurements"]["quick"]
    keyed = lambda d: {tuple(k.split("/")): v for k, v in d.items()}
    probes = quick.QuickProbes(keyed(st["kernel_s"]), keyed(st["conversion_s"]), st["stream_bw"], st["passes"], st["slowest"], st["noisy"], st.get("seconds", 0), keyed(st.get("large_s", {})))
    return dev, probes
if __name__ == "__main__":
    pfeats = pickle.loads(Path("/tmp/s22/replay/probefeats-16-2.pkl").read_bytes())
    layout = Layout(16, 256, 2, 1 << 20, gathers_slices=True)
    for folder, meas in zip(sys.argv[1::2], sys.argv[2::2]):
        dev, probes = load(folder)
        raw = quick.fit_quick(dataclasses.replace(probes, large_s={}), pfeats, dev, layout=layout)
        large = {tuple(k.split("/")): v for k, v in json.loads(Path(meas).read_text()).items()}
        print(folder, meas)
        for m in lf:
            print(f"  {m:15s} sc={scattered_share(lf[m]):.2f}", " ".join(f"{f}:{raw.kernel_time(f, lf[m]) / t:.2f}" for (mm, f), t in large.items() if mm == m))
        t = raw.terms("sell", lf["large-wide"]) * np.array(raw.kernel["sell"]); print("  sell wide terms", {a: round(b / t.sum(), 2) for a, b in zip(TERMS, t) if b > 0})
        t = raw.terms("csr-blocks", lf["large-wide"]) * np.array(raw.kernel["csr-blocks"]); print("  csrb wide terms", {a: round(b / t.sum(), 2) for a, b in zip(TERMS, t) if b > 0})
