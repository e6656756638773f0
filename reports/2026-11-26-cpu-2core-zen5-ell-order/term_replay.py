"""format="auto"'s model alone with a "length changes" term and a medium-uneven calibration matrix
(length-changes-term.diff, not kept) against the same calibration's timings fitted without both
(the term's column zeroed, the matrix's timings dropped), judged in stored model_eval
measurements (no device). With the diff applied:

    python term_replay.py calibration-zen5-pocl31-length-changes.json . 6cf905a,281133b

"with" uses the stored coefficients, "with-refit" fits them again in the checkout's form (the same
with the diff as measured; term-replay-filled-rows.txt: the feature counting changes between the
non-empty rows only, where only "with-refit" is meaningful)."""
import copy, importlib, json, math, sys
from pathlib import Path

import numpy as np
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from model_eval import evaluate, facts_device
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import suite
from clspmv.formats import SINGLE_FORMATS
from clspmv.matrix import canonical_csr
from clspmv.model.timemodel import Calibration
from clspmv.precision import resolve
calm = importlib.import_module("clspmv.model.calibrate")
cal_path, folder, tags = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3].split(",")
data = json.loads(cal_path.read_text())
new = Calibration.from_json(copy.deepcopy(data), SINGLE_FORMATS)
base_data = copy.deepcopy(data)
base_data["measurements"]["kernel_s"].pop("medium-uneven", None)
base_data["measurements"]["conversion_s"].pop("medium-uneven", None)
real_terms = calm.terms
calm.terms = lambda *a, **k: np.append(real_terms(*a, **k)[:-1], 0.0)
base = calm.refit(Calibration.from_json(base_data, SINGLE_FORMATS))
calm.terms = real_terms
refit_new = calm.refit(Calibration.from_json(copy.deepcopy(data), SINGLE_FORMATS))
cals = {"without": base, "with": new, "with-refit": refit_new}
device = facts_device(new)
precision = resolve(np.float64, np.float64)
ratios = {}
for s in ("demo", "cpu", "offsuite", "real", "heldout"):
    group = "heldout" if s == "heldout" else "target"
    for tag in tags:
        stored = {r["matrix"]: r["measured_ms"] for r in json.loads((folder / f"measured-{s}-{tag}.json").read_text())["records"]}
        for src in resolve_all(list(suite(s)), progress=False):
            if src.name not in stored: continue
            csr = canonical_csr(src.load(), precision.value)
            line = f"{s:8s} {tag} {src.name[:40]:40s} fastest={min(stored[src.name], key=stored[src.name].get):12s}"
            for label, cal in cals.items():
                r = evaluate(csr, device, precision, cal, stored[src.name])
                ratios.setdefault((group, label), []).append(r["ratio"])
                line += f" | {label}: {r['auto']:12s} {r['ratio']:.3f}"
            print(line, flush=True)
for (group, label), rs in sorted(ratios.items()):
    gm = math.exp(sum(map(math.log, rs)) / len(rs))
    print(f"{group:8s} {label:10s} {len(rs):3d} gm {gm:.3f} worst {min(rs):.3f} within 5 % {sum(r >= 0.95 for r in rs)/len(rs):.0%}")
