"""Replay: sell/pjds' lanes term as their own slice padding on CPUs (the idle-lanes change of
82b9a0e) on the current code. Refit the CPU prior's source full calibrations in both forms,
derive the prior, refit each run's stored quick calibration, judge auto's pick in the run's
search times (each format alone). Args: FOLDER... (a report folder with calibration-*.json and
results.json, or mkl/results.json beside). Device facts from the folder name: zen4 -> 2 units,
node-Ncores -> N units; SIMD width 16 (every one of them)."""
import json, pickle, sys, re
from pathlib import Path
from types import SimpleNamespace
import numpy as np
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model import prior as prior_mod, quick, timemodel
from clspmv.model.calibrate import refit
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.quick_large import large_probe_plan, large_probe_matrices
from clspmv.model.quick_blocks import block_probe_matrices
from clspmv.model.timemodel import Calibration, TERMS

ORIG = timemodel.terms
LANES = TERMS.index("lanes")
OWN = {"sell", "pjds"}
W = Path("/tmp/s22/replay")

def new_terms(fmt, f, *a, **k):
    t = ORIG(fmt, f, *a, **k)
    if fmt in OWN and f.simd_width < 32:
        t[LANES] = float(max(f.slots_of(fmt) - f.entries, 0))
    return t

def refit_any(data):
    kernel = data["kernel"]
    form = {**data, "terms": list(TERMS), "kernel": {k: [0.0] * len(TERMS) for k in kernel}}
    return refit(Calibration.from_json(form, tuple(kernel)))

def class_prior(patched):
    timemodel.terms = new_terms if patched else ORIG
    key = W / f"prior-{patched}.json"
    if key.exists():
        d = json.loads(key.read_text())
    else:
        cals = [refit_any(prior_mod._at_commit("976aa3b", p)).to_json() for p in prior_mod.SOURCES["cpu"]]
        d = prior_mod.derive(cals)
        key.write_text(json.dumps(d))
    shipped = prior_mod.prior_of("cpu")
    # only sell's and pjds' rows refitted: every other format's fit takes the same terms
    kernels = {**shipped.kernels, **{k: d["kernel"][k] for k in OWN}}
    return prior_mod.ClassPrior(kernels, shipped.conversions, shipped.x_miss, shipped.stream_miss, shipped.variants)

priors = {p: class_prior(p) for p in (False, True)}
for arg in sys.argv[1:]:
    folder, _, measured = arg.partition(":")
    folder = Path(folder)
    units = int(re.search(r"node-(\d+)cores", str(folder)).group(1)) if "node-" in str(folder) else 2
    simd = 16
    calfile = next(folder.glob("calibration-*.json"))
    data = json.loads(calfile.read_text())
    dev = SimpleNamespace(name=data["device"], driver_version=data["driver"], cache_bytes=data["cache_bytes"],
                          compute_units=units, type="cpu", simd_width=simd)
    layout = Layout(simd, 256, units, 1 << 20, gathers_slices=True)
    fk = W / f"probefeats-{simd}-{units}.pkl"
    if fk.exists():
        pfeats = pickle.loads(fk.read_bytes())
    else:
        mats = quick.probe_matrices(simd, units); mats.update(block_probe_matrices("cpu"))
        plan = large_probe_plan(layout)
        large = large_probe_matrices(simd, units); mats.update({k: large[k] for k in plan})
        mats = {k: canonical_csr(v, np.float64) for k, v in mats.items()}
        pfeats = {k: with_exact_diagonals(features(v, simd), v) for k, v in mats.items()}
        fk.write_bytes(pickle.dumps(pfeats))
    mk = W / f"feats-{simd}-{units}.pkl"
    mfeats = pickle.loads(mk.read_bytes()) if mk.exists() else {}
    st = data["measurements"]["quick"]
    keyed = lambda d: {tuple(k.split("/")): v for k, v in d.items()}
    probes = quick.QuickProbes(keyed(st["kernel_s"]), keyed(st["conversion_s"]), st["stream_bw"], st["passes"], st["slowest"], st["noisy"], st.get("seconds", 0), keyed(st.get("large_s", {})))
    cals = {"stored": Calibration.from_json(data, SINGLE_FORMATS)}
    for p in (False, True):
        timemodel.terms = new_terms if p else ORIG
        cals["new" if p else "refit"] = quick.fit_quick(probes, pfeats, dev, prior=priors[p], layout=layout)
    res = folder / "results.json"
    if not res.exists():
        res = folder / "mkl" / "results.json"
    if measured:  # tools/model_eval.py --measure-only files: every format in rounds
        recs = [{"matrix": r["matrix"], "search_ms": dict(r["measured_ms"])}
                for m in measured.split(",") for r in json.loads(Path(m).read_text())["records"]]
    else:
        recs = json.loads(res.read_text())["records"]
    score = {k: [] for k in cals}
    for rec in recs:
        ms = {k: v for k, v in rec["search_ms"].items() if v is not None}
        if not ms: continue
        n = rec["matrix"]
        if n not in mfeats:
            csr = canonical_csr(resolve(n).load(), np.float64)
            mfeats[n] = with_exact_diagonals(features(csr, simd, compute_units=units), csr)
        shown = [f"{n[:44]:44s} fastest={min(ms, key=ms.get):10s}"]
        for label, cal in cals.items():
            timemodel.terms = new_terms if label == "new" else ORIG
            pr = {k: p.kernel_s for k, p in predict_features(mfeats[n], cal, 256).items() if p.refused is None and k in ms}
            pick = min(pr, key=pr.get)
            score[label].append(min(ms.values()) / ms[pick])
            shown.append(f"{label}:{pick}({score[label][-1]:.2f})")
        print(" ".join(shown))
    for label, v in score.items():
        print(f"{folder.name} {label}: geomean {np.exp(np.mean(np.log(v))):.3f} worst {min(v):.2f} within5% {np.mean(np.array(v)>=0.95):.2f} n={len(v)}")
    mk.write_bytes(pickle.dumps(mfeats))
