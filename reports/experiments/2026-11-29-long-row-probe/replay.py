"""Auto's choice under the quick calibration before and after the prior's ``longest`` per compute
unit, judged in the formats' times that tools/cpu_vs_mkl.py measured (its results.json
"search_ms").

    python replay.py DEVICE [--calibration CAL.json] [--save CAL.json] RESULTS.json ...

Without --calibration a quick calibration is measured on DEVICE (--save writes it). Its probes
are fitted twice: by this checkout ("after") and as at the commit before the change (ce22acb:
the prior of prior-before.json, whose ``longest`` is relative to the device's whole streaming
bandwidth, compute units taken as 1, "before"). Per matrix: each one's choice and its search
time over the fastest format's in each results file. (The first run, node-with-probe/, was made
with with-probe.diff applied: a third fit, "with", of the long-row probe that diff adds.)"""
import argparse
import json
import runpy
from pathlib import Path
from types import SimpleNamespace

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.prior import ClassPrior
from clspmv.model.quick import QuickProbes, fit_quick, probe_matrices, quick_calibrate
from clspmv.model.quick_blocks import block_probe_matrices
from clspmv.model.quick_large import large_probe_matrices
from clspmv.model.timemodel import TERMS, Calibration
from clspmv.precision import resolve as resolve_precision

ev = runpy.run_path(str(Path(__file__).parents[3] / "tools" / "model_eval.py"))
parser = argparse.ArgumentParser()
parser.add_argument("device")
parser.add_argument("results", nargs="+")
parser.add_argument("--calibration")
parser.add_argument("--save")
args = parser.parse_args()
dev = clspmv.select_device(args.device)
prec = resolve_precision(np.float64, np.float64)
cal = (Calibration.from_json(json.loads(Path(args.calibration).read_text()), SINGLE_FORMATS)
       if args.calibration else quick_calibrate(dev))
if args.save:
    Path(args.save).write_text(json.dumps(cal.to_json(), indent=1))
q = cal.measurements["quick"]
def keyed(d):
    return {tuple(k.split("/", 1)): v for k, v in d.items()}
probes = QuickProbes(keyed(q["kernel_s"]), keyed(q["conversion_s"]), q["stream_bw"], q["passes"],
                     q["slowest"], q["noisy"], q["seconds"], keyed(q.get("large_s", {})))
mats = {**probe_matrices(dev.simd_width, dev.compute_units), **block_probe_matrices("cpu"),
        **large_probe_matrices(dev.simd_width, dev.compute_units)}
feats = {k: with_exact_diagonals(features(canonical_csr(v, prec.value), dev.simd_width),
                                 canonical_csr(v, prec.value)) for k, v in mats.items()}
layout = Layout.for_device(dev)
after = fit_quick(probes, feats, dev, layout=layout)
old = json.loads((Path(__file__).parent / "prior-before.json").read_text())["classes"]["cpu"]
before = fit_quick(probes, feats, SimpleNamespace(
    name=dev.name, driver_version=dev.driver_version, type=dev.type, cache_bytes=dev.cache_bytes,
    compute_units=1), layout=layout, prior=ClassPrior(
        old["kernel"], old["conversion"], old["x_miss"], old["stream_miss"], old["variants"]))
i = TERMS.index("longest")
for f in ("sell", "pjds"):
    print(f"{f}: longest coefficient after/before {after.kernel[f][i] / before.kernel[f][i]:.3f}")
runs = [{r["matrix"]: r["search_ms"] for r in json.loads(Path(p).read_text())["records"]}
        for p in args.results]
variants = {"after": after, "before": before}
ratios = {(label, i): [] for label in variants for i in range(len(runs))}
for name in runs[0]:
    csr = canonical_csr(resolve(name).load(), prec.value)
    line = f"{name[:50]:50s}"
    for label, c in variants.items():
        choice = ev["evaluate"](csr, dev, prec, c, runs[0][name])["auto"]
        line += f" | {label}: {choice:11s}"
        for i, run in enumerate(runs):
            measured = run.get(name)
            if measured:
                ratios[(label, i)].append(min(measured.values()) / measured.get(choice, np.inf))
                line += f" {ratios[(label, i)][-1]:.2f}"
    print(line, flush=True)
for (label, i), r in ratios.items():
    r = np.array(r)
    print(f"{label} in {args.results[i]}: geometric mean {np.exp(np.log(r).mean()):.3f}, "
          f"worst {r.min():.3f}")
