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

import numpy as np
from replay_common import fits, judge, stored_probes

import clspmv
from clspmv.formats import SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model.quick import quick_calibrate
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
probes, feats = stored_probes(cal, dev.simd_width, dev.compute_units)
variants = fits(probes, feats, dev, Layout.for_device(dev))
i = TERMS.index("longest")
for f in ("sell", "pjds"):
    print(f"{f}: longest coefficient after/before "
          f"{variants['after'].kernel[f][i] / variants['before'].kernel[f][i]:.3f}")
judge(args.results, variants,
      lambda name, csr, c, measured: ev["evaluate"](csr, dev, prec, c, measured)["auto"])
