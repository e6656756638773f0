"""Auto's choices of quick calibrations fitted again here, with no device: the probes stored in a
quick calibration measured on a machine (dump_facts.py's quick-calibration.json, or --save of
replay.py) and that machine's facts (facts.json), judged in the formats' search times of
tools/cpu_vs_mkl.py runs there (results.json "search_ms"): the least predicted kernel time of
clspmv.model.predict.predict_features, as select() takes it without a trial.

    python replay_offline.py FACTS.json QUICK.json RESULTS.json [RESULTS.json ...]
        [--units N] [--features CACHE.pkl]

--units: the compute units to fit and predict for (default: the facts'). Variants: "before"
(prior-before.json, compute units taken as 1: the fit before the change) and "after" (this
checkout)."""
import argparse
import json
import pickle
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.prior import ClassPrior
from clspmv.model.quick import QuickProbes, fit_quick, probe_matrices
from clspmv.model.quick_blocks import block_probe_matrices
from clspmv.model.quick_large import large_probe_matrices
from clspmv.model.timemodel import Calibration

parser = argparse.ArgumentParser()
parser.add_argument("facts")
parser.add_argument("quick")
parser.add_argument("results", nargs="+")
parser.add_argument("--units", type=int, default=0)
parser.add_argument("--features", default="")
args = parser.parse_args()
facts = json.loads(Path(args.facts).read_text())
units = args.units or facts["compute_units"]
layout = Layout(**{**facts["layout"], "compute_units": units})
simd = facts["simd_width"]
stored = Calibration.from_json(json.loads(Path(args.quick).read_text()), SINGLE_FORMATS)
q = stored.measurements["quick"]


def keyed(d):
    return {tuple(k.split("/", 1)): v for k, v in d.items()}


mats = {**probe_matrices(simd, units), **block_probe_matrices("cpu"),
        **large_probe_matrices(simd, units)}
kernel_s = {k: v for k, v in keyed(q["kernel_s"]).items() if k[0] in mats}
probes = QuickProbes(kernel_s, keyed(q["conversion_s"]), q["stream_bw"], q["passes"],
                     q["slowest"], q["noisy"], q["seconds"], keyed(q.get("large_s", {})))
feats = {}
for k, v in mats.items():
    c = canonical_csr(v, np.float64)
    feats[k] = with_exact_diagonals(features(c, simd), c)
dev = SimpleNamespace(name=facts["name"], driver_version=facts["driver_version"], type="cpu",
                      cache_bytes=facts["cache_bytes"], compute_units=units)
old = json.loads((Path(__file__).parent / "prior-before.json").read_text())["classes"]["cpu"]
variants = {
    "after": fit_quick(probes, feats, dev, layout=layout),
    "before": fit_quick(probes, feats, SimpleNamespace(**{**vars(dev), "compute_units": 1}),
                        layout=layout, prior=ClassPrior(old["kernel"], old["conversion"],
                                                        old["x_miss"], old["stream_miss"],
                                                        old["variants"])),
}
runs = [{r["matrix"]: r["search_ms"] for r in json.loads(Path(p).read_text())["records"]}
        for p in args.results]
cache = Path(args.features) if args.features else None
matrix_feats = pickle.loads(cache.read_bytes()) if cache and cache.exists() else {}
ratios = {(label, i): [] for label in variants for i in range(len(runs))}
for name in runs[0]:
    if (name, units) not in matrix_feats:
        csr = canonical_csr(resolve(name).load(), np.float64)
        matrix_feats[(name, units)] = with_exact_diagonals(
            features(csr, simd, compute_units=units), csr)
    f = matrix_feats[(name, units)]
    line = f"{name[:50]:50s}"
    for label, cal in variants.items():
        preds = predict_features(f, cal, min(256, facts["max_work_group_size"]))
        ok = {k: p.kernel_s for k, p in preds.items() if p.refused is None}
        choice = min(ok, key=ok.get)
        line += f" | {label}: {choice:11s}"
        for i, run in enumerate(runs):
            measured = run.get(name)
            if measured:
                ratios[(label, i)].append(min(measured.values()) / measured.get(choice, np.inf))
                line += f" {ratios[(label, i)][-1]:.2f}"
    print(line, flush=True)
if cache:
    cache.write_bytes(pickle.dumps(matrix_feats))
for (label, i), r in ratios.items():
    r = np.array(r)
    print(f"{label} in {args.results[i]}: geometric mean {np.exp(np.log(r).mean()):.3f}, "
          f"worst {r.min():.3f}")
