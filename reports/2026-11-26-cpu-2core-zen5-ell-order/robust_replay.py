"""Replay of the calibration's fit with and without its Huber reweighting
(clspmv.model.calibrate.ROBUST_ROUNDS) on the stored CPU calibrations of reports/ and the
model_eval measurements made with each (no device: every calibration is refitted to the timings
it stores, the device facts it stores stand in for the device, and format="auto"'s model alone is
judged in the stored measured times as tools/model_eval.py does).

    git apply reports/2026-11-26-cpu-2core-zen5-ell-order/robust-fit.diff   (the reweighting, not kept)
    python robust_replay.py        (prints per calibration and suite set: gm / worst / within 5 %)
    git apply -R reports/2026-11-26-cpu-2core-zen5-ell-order/robust-fit.diff
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "tools"))
from model_eval import evaluate, facts_device  # noqa: E402

from clspmv.bench.sources import resolve_all  # noqa: E402
from clspmv.bench.suites import suite  # noqa: E402
from clspmv.formats import SINGLE_FORMATS  # noqa: E402
from clspmv.matrix import canonical_csr  # noqa: E402
from clspmv.model.timemodel import TERMS, Calibration  # noqa: E402
from clspmv.precision import resolve  # noqa: E402

calibrate_mod = importlib.import_module("clspmv.model.calibrate")
SUITES = ("demo", "cpu", "offsuite", "real", "heldout")
R = HERE.parent
PAIRS = [  # (calibration file, the measured-S-TAG.json files timed with it)
    (R / "2026-11-26-cpu-2core-zen5-ell-order/calibration-zen5-pocl31-5a9b7db.json",
     [R / "2026-11-26-cpu-2core-zen5-ell-order", ("6cf905a", "281133b")]),
    (R / "2026-11-26-cpu-2core-zen5-dia-layout/calibration-zen5-pocl31-4c40772.json",
     [R / "2026-11-26-cpu-2core-zen5-dia-layout", ("4c40772",)]),
    (R / "2026-11-26-cpu-2core-zen5-dia-layout/calibration-zen5-pocl31-73f0df0.json",
     [R / "2026-11-26-cpu-2core-zen5-dia-layout", ("73f0df0",)]),
] + [(R / f"{folder}/calibration-{name}-0.1.0.json", [R / folder, (tag,)])
     for folder in ("2026-11-26-cpu-2core-zen4-lanes", "2026-11-26-cpu-2core-zen4-greedy",
                    "2026-11-26-cpu-2core-zen4-hyb", "2026-11-26-cpu-2core-zen4-ell-order")
     for name, tag in (("pthread-skylake-avx512-AMD_EPYC-3.1_debian", "pocl31"),
                       ("pthread-AMD_EPYC-3.0-rc2", "pocl30"))]


def refitted(path: Path, rounds: int) -> Calibration:
    data = json.loads(path.read_text())
    data["terms"] = list(TERMS)
    data["kernel"] = {k: [0.0] * len(TERMS) for k in data["kernel"]}
    calibrate_mod.ROBUST_ROUNDS = rounds
    return calibrate_mod.refit(Calibration.from_json(data, SINGLE_FORMATS))


def summary(ratios: list[float]) -> str:
    gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
    return (f"{len(ratios):3d} gm {gm:.3f} worst {min(ratios):.3f} within 5 % "
            f"{sum(r >= 0.95 for r in ratios) / len(ratios):4.0%}")


matrices: dict[str, object] = {}
totals: dict[str, dict[str, list[float]]] = {}
for cal_path, (folder, tags) in PAIRS:
    if not cal_path.exists() or not all((folder / f"measured-cpu-{t}.json").exists()
                                        for t in tags):
        continue
    cals = {"plain": refitted(cal_path, 0), "robust": refitted(cal_path, 2)}
    device = facts_device(cals["plain"])
    precision = resolve(np.float64, np.float64)
    ratios: dict[tuple[str, str], list[float]] = {}
    for s in SUITES:
        group = "heldout" if s == "heldout" else "target"
        for tag in tags:
            path = folder / f"measured-{s}-{tag}.json"
            if not path.exists():
                continue
            stored = {r["matrix"]: r["measured_ms"] for r in json.loads(path.read_text())["records"]}
            for source in resolve_all(list(suite(s)), progress=False):
                if source.name not in stored:
                    continue
                if source.name not in matrices:
                    matrices[source.name] = canonical_csr(source.load(), precision.value)
                for label, cal in cals.items():
                    r = evaluate(matrices[source.name], device, precision, cal,
                                 stored[source.name])
                    ratios.setdefault((group, label), []).append(r["ratio"])
    name = f"{cal_path.parent.name}/{cal_path.name[:40]}"
    for (group, label), rs in sorted(ratios.items()):
        print(f"{name:80s} {group:8s} {label:6s} {summary(rs)}", flush=True)
        totals.setdefault(f"{'zen5' if 'zen5' in name else 'zen4'} {group} {label}", {}
                          ).setdefault("r", []).extend(rs)
for key, d in sorted(totals.items()):
    print(f"ALL {key:24s} {summary(d['r'])}")
