"""format="auto" before and after the lane width of issue 44 (Intel's CPU runtime), side by side.

One quick calibration's probes are measured (as the first ``format="auto"`` on a new device
does) and fitted twice: *before*, the probe features with lanes at the device's SIMD width (1
under Intel's runtime: no lane padding at all), and *after*, with the working tree's
:func:`clspmv.model.features.lane_width`. Per matrix, auto's choice of each (default arguments:
the model alone) is taken; every format is converted, checked and timed alone
(``--search-rounds`` products); the ``--finalists`` fastest and both choices then run in
``--rounds`` alternating rounds (order rotating, tools/cpu_vs_mkl.py's ``side_by_side``);
auto ÷ fastest = the least median of the rounds over the median of the choice's format.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import suite
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.precision import resolve

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
cpu_vs_mkl = importlib.import_module("cpu_vs_mkl")
features_mod = importlib.import_module("clspmv.model.features")
quick = importlib.import_module("clspmv.model.quick")
select_mod = importlib.import_module("clspmv.model.select")


@contextlib.contextmanager
def before():
    """The model before: lanes at the device's SIMD width."""
    kept = features_mod.lane_width
    features_mod.lane_width = lambda simd_width, itemsize: simd_width
    try:
        yield
    finally:
        features_mod.lane_width = kept


def calibrations(device):
    """The quick probes measured once, fitted before and after."""
    precision = resolve(np.float64, np.float64)
    probes, feats = quick.measure_quick(device, precision)
    mats = {k: canonical_csr(v, np.float64)
            for k, v in quick.probe_matrices(device.simd_width, device.compute_units).items()}
    with before():
        old_feats = {k: features_mod.with_exact_diagonals(
            features_mod.features(v, device.simd_width), v) for k, v in mats.items()}
        old = quick.fit_quick(probes, old_feats, device)
    new = quick.fit_quick(probes, feats, device)
    return probes, old, new


def product(A, x, fmt: str, device):
    """One product of ``A`` in ``fmt`` on ``device`` from ``x``, a call."""
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
    return lambda: M.matvec(x)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("matrices", nargs="*")
    p.add_argument("--suite", action="append", default=[])
    p.add_argument("--device", default="1:0")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--search-rounds", type=int, default=5)
    p.add_argument("--finalists", type=int, default=3)
    p.add_argument("--out", required=True)
    args = p.parse_args()
    device = clspmv.select_device(args.device)
    probes, old, new = calibrations(device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "calibration-before.json").write_text(json.dumps(old.to_json()))
    (out / "calibration-after.json").write_text(json.dumps(new.to_json()))
    names = [n for s in args.suite for n in suite(s)] + list(args.matrices)
    records = []
    for source in resolve_all(names):
        name, A = source.name, canonical_csr(source.load(), np.float64)
        with before():
            was = select_mod.select(A, device, calibration_=old).format
        now = select_mod.select(A, device, calibration_=new).format
        x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
        load = os.getloadavg()[0]
        searched, skipped = cpu_vs_mkl.search(A, x, device, list(SINGLE_FORMATS),
                                              args.search_rounds)
        finalists = sorted(searched, key=searched.get)[:args.finalists]
        calls = {f: product(A, x, f, device) for f in dict.fromkeys([*finalists, was, now])}
        samples = cpu_vs_mkl.side_by_side(calls, args.rounds)
        med = {f: float(np.median(s)) for f, s in samples.items()}
        fastest = min(med, key=med.get)
        rec = {"matrix": name, "nnz": int(A.nnz), "before": was, "after": now,
               "fastest": fastest, "median_ms": med, "search_ms": searched,
               "skipped": skipped, "samples_ms": samples,
               "before_ratio": med[fastest] / med[was], "after_ratio": med[fastest] / med[now],
               "load_average": [load, os.getloadavg()[0]]}
        records.append(rec)
        print(f"{name}: fastest {fastest} {med[fastest]:.3f} ms; before {was} "
              f"{rec['before_ratio']:.2f}, after {now} {rec['after_ratio']:.2f} "
              f"(load {load:.1f})", flush=True)
        del calls
    meta = {"command": " ".join(sys.argv), "device": str(device),
            "driver": device.driver_version, "simd_width": device.simd_width,
            "started_probes": probes.to_json(), "time": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                         time.gmtime())}
    (out / "results.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    for key in ("before_ratio", "after_ratio"):
        vals = [r[key] for r in records]
        print(key, "geomean", float(np.exp(np.mean(np.log(vals)))) if vals else None)


if __name__ == "__main__":
    main()
