"""csr-scalar against csr-blocks and csr-merge under Intel's runtime: measured alone (run 1's
search) and as predicted by the quick calibration of the 44c7062 report's run (its stored
coefficients, lanes at SIMD width 1), by this run's before (HEAD, lanes at width 1) and after.

    python reports/2026-11-28-cpu-2core-xeon-intel-auto/hypothesis.py SPEC...
"""

from __future__ import annotations

import contextlib
import importlib
import json
import sys
from pathlib import Path

import numpy as np

from clspmv.bench.generators import generate
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration

HERE = Path(__file__).parent
features_mod = importlib.import_module("clspmv.model.features")


@contextlib.contextmanager
def lanes_at_simd_width(on: bool):
    """The model before (lanes at the device's SIMD width) where ``on``."""
    kept = features_mod.lane_width
    if on:
        features_mod.lane_width = lambda simd_width, itemsize: simd_width
    try:
        yield
    finally:
        features_mod.lane_width = kept


def main(specs: list[str]) -> None:
    cals = {name: Calibration.from_json(json.loads((HERE / path).read_text()), SINGLE_FORMATS)
            for name, path in (("44c7062 quick", "calibration-44c7062-quick.json"),
                               ("before", "intel-run1/calibration-before.json"),
                               ("after", "intel-run1/calibration-after.json"))}
    alone = {r["matrix"]: r["search_ms"] for r in json.loads(
        (HERE / "intel-run1/results.json").read_text())["records"]}
    for spec in specs:
        A = canonical_csr(generate(spec), np.float64)
        s = alone[spec]
        print(f"{spec}: measured alone csr-scalar {s['csr-scalar']:.1f} ms, csr-blocks "
              f"{s['csr-blocks']:.1f}, csr-merge {s['csr-merge']:.1f}: csr-scalar / csr-blocks "
              f"{s['csr-scalar'] / s['csr-blocks']:.2f}")
        for name, cal in cals.items():
            with lanes_at_simd_width(name != "after"):
                f = features_mod.features(A, 1, compute_units=2)
            t = {k: p.kernel_s for k, p in predict_features(f, cal).items() if p.kernel_s}
            print(f"   {name:14s} predicted csr-scalar / csr-blocks "
                  f"{t['csr-scalar'] / t['csr-blocks']:.2f}, / csr-merge "
                  f"{t['csr-scalar'] / t['csr-merge']:.2f}; first three {sorted(t, key=t.get)[:3]}")


if __name__ == "__main__":
    main(sys.argv[1:])
