"""Compare format="auto" with the fastest measured format on a suite's matrices, for one or
several calibrations side by side on the same measurements.

    python tools/model_eval.py --suite cpu --device cpu [--dtype float64] [--calibrate]
        [--calibration A.json B.json] [--out measured.json] [--measured measured.json]

Per matrix: every format's measured kernel time (OpenCL profiling events, the fastest of 9
after a warm-up, in rounds over the formats as the calibration measures them:
clspmv.model.probes.kernel_times, through
clspmv.formats.convert + Format.upload; the fastest, not the median, because on a shared CPU a
product that loses a core to another process runs up to twice as long), its predicted time
under each calibration, auto's choice and its measured time relative to the fastest; then per
calibration the geometric mean and worst of those ratios, how many are within 5 % of the
fastest (the tie tolerance of the bench's Selection section), the model's median |predicted -
measured| / measured (per matrix, then the median of those, as the Selection section) and the
Spearman rank correlation of predicted and measured times (per matrix, then their median).

``--trial`` adds, per calibration, auto with a trial on the device (``select(..., trial=True)``,
:mod:`clspmv.model.trial`: the likeliest formats converted and timed there, the fastest taken),
its choice judged in the same measured times as the model's alone (``LABEL+trial``; needs the
device, not ``--device facts``).

``--agreement A.json B.json`` needs no calibration and no device: two ``--out`` files of the same
suite measured at different times, each run's fastest format judged in the other run (the same
ratio, worst and share within 5 % as for auto): the best any selector can score against one
measurement when the machine's noise moves the fastest format between runs.

``--calibration`` evaluates stored calibration files (``clspmv calibrate`` writes them into
``CLSPMV_CACHE_DIR``) instead of the device's current one; ``--out`` stores the measurements and
``--measured`` reuses them (no timing: the predictions of other calibrations on the same
measured times, the side-by-side comparison of two models). ``--refit`` fits the stored
calibrations again, in this checkout's model form, to the measurements they hold
(clspmv.model.calibrate.refit). ``--bench`` takes the measured times from the Selection records
of ``clspmv bench`` results files instead (every matrix they hold, in their value type); with
``--device facts`` no device is needed: the device facts stored in the (first) calibration
stand in, so a GPU's measurements are replayed on any machine:

    python tools/model_eval.py --device facts --refit --calibration cal.json \
        --bench reports/<dir>/anchors64.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyopencl.array as cl_array
from scipy.stats import spearmanr

import clspmv
from clspmv.bench.records import read_results
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import shared_matrices, suite
from clspmv.errors import UnsuitableFormatError
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, convert
from clspmv.matrix import canonical_csr
from clspmv.model import select
from clspmv.model.probes import kernel_times
from clspmv.model.store import calibration
from clspmv.model.timemodel import Calibration
from clspmv.precision import resolve

TIE = 0.05
REPEAT = 9
calibrate_mod = importlib.import_module("clspmv.model.calibrate")


def _uploaded(csr, device, precision, name: str):
    """``csr`` in format ``name``, uploaded as from_scipy uploads its own copy (``owned``: csr
    is this script's own), or None where the format refuses it."""
    try:
        fmt = convert(csr, name, FORMAT_CLASSES[name].layout_for(device), precision, owned=True)
    except UnsuitableFormatError:
        return None
    fmt.upload(device)
    return fmt


def measure(csr, device, precision, separately: bool = False) -> dict[str, float]:
    """Measured kernel ms of every single format that accepts ``csr``: all uploaded at once and
    timed in rounds over them, or with ``separately`` one format on the device at a time (a
    matrix whose formats do not fit the device together: the GPU anchors on a CPU), in two
    passes over the formats in opposite orders, the faster of each format's two timings kept."""
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
    y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
    if not separately:
        uploaded = {name: fmt for name in SINGLE_FORMATS
                    if (fmt := _uploaded(csr, device, precision, name)) is not None}
        return {name: s * 1e3 for name, s in kernel_times(uploaded, x, y, REPEAT).items()}
    best: dict[str, float] = {}
    for order in (SINGLE_FORMATS, SINGLE_FORMATS[::-1]):
        for name in order:
            fmt = _uploaded(csr, device, precision, name)
            if fmt is not None:
                ms = kernel_times({name: fmt}, x, y, REPEAT)[name] * 1e3
                best[name] = min(best.get(name, np.inf), ms)
            del fmt  # its device buffers, before the next format's
    return {name: best[name] for name in SINGLE_FORMATS if name in best}


def evaluate(csr, device, precision, cal: Calibration, measured: dict[str, float],
             trial: bool = False) -> dict[str, object]:
    # owned: csr is this script's own copy, as from_scipy's canonical one is to its trial
    sel = select(csr, device, precision, calibration_=cal, trial=trial, owned=True)
    pred = {k: p.kernel_s * 1e3 for k, p in sel.predictions.items() if p.kernel_s is not None}
    common = [k for k in measured if k in pred]
    fastest = min(measured, key=measured.get)
    rel = [abs(pred[k] - measured[k]) / measured[k] for k in common]
    rho = (float(spearmanr([pred[k] for k in common], [measured[k] for k in common]).statistic)
           if len(common) >= 3 else float("nan"))
    return {"auto": sel.format, "fastest": fastest,
            "ratio": measured[fastest] / measured[sel.format] if sel.format in measured else 0.0,
            "median_rel_error": float(np.median(rel)), "spearman": rho,
            "selection_ms": sel.cost_ms, "predicted_ms": pred, "trial_ms": sel.trial_ms,
            "trial_s": sel.trial_s}


def facts_device(cal: Calibration) -> SimpleNamespace:
    """A stand-in of the device ``cal`` measured, from the facts its measurements store (what
    the selection reads: SIMD width, compute units, work-group limit, cache)."""
    facts = (cal.measurements or {}).get("facts")
    if not facts:
        raise SystemExit(f"calibration of {cal.device} stores no device facts (measure again)")
    return SimpleNamespace(name=cal.device, max_work_group_size=1024, **facts)


def bench_measurements(paths: list[str]) -> list[tuple[str, str, dict[str, float]]]:
    """(matrix, value type, format -> measured kernel ms) of the Selection records of bench
    results files (plain or gzipped)."""
    out = []
    for path in paths:
        for rec in read_results(path)["records"]:  # results.json or results.json.gz
            if rec.get("format") == "auto" and rec.get("measured_ms"):
                out.append((rec["matrix"], rec["dtype"], rec["measured_ms"]))
    return out


def summary(records: list[dict[str, object]]) -> str:
    ratios = [r["ratio"] for r in records]
    within = sum(q >= 1 / (1 + TIE) for q in ratios)
    rhos = [r["spearman"] for r in records if r["spearman"] == r["spearman"]]
    return (f"geometric mean {float(np.exp(np.mean(np.log(np.maximum(ratios, 1e-9))))):.3f}, "
            f"worst {min(ratios):.3f}, within 5 %: {within}/{len(ratios)} "
            f"({100 * within / len(ratios):.0f} %); model: median of per-matrix median rel. "
            f"error {float(np.median([r['median_rel_error'] for r in records])):.3f}, "
            f"median Spearman {float(np.median(rhos)) if rhos else float('nan'):.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="cpu")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--calibrate", action="store_true", help="force a new calibration")
    parser.add_argument("--calibration", nargs="+", default=None,
                        help="calibration JSON files to evaluate side by side")
    parser.add_argument("--measured", default=None, help="reuse this --out file's measurements")
    parser.add_argument("--out", default=None, help="JSON file for the records")
    parser.add_argument("--measure-only", action="store_true",
                        help="measure and write --out, no predictions (no calibration needed)")
    parser.add_argument("--refit", action="store_true",
                        help="fit the --calibration files again to their stored measurements")
    parser.add_argument("--bench", nargs="+", default=None,
                        help="measured times from these bench results files' Selection records")
    parser.add_argument("--trial", action="store_true",
                        help="auto with a trial on the device (clspmv.model.trial): its choice "
                             "judged in the measured times, beside the model's alone")
    parser.add_argument("--separately", action="store_true",
                        help="time one format on the device at a time (matrices whose formats "
                             "do not fit the device together), two passes in opposite orders")
    parser.add_argument("--agreement", nargs=2, default=None, metavar=("A", "B"),
                        help="two --out files: each one's fastest format judged in the other")
    args = parser.parse_args()
    if args.agreement:
        return agreement(*args.agreement)
    if args.measure_only:
        cals = {}
    elif args.calibration:
        cals = {}
        for p in args.calibration:
            data = json.loads(Path(p).read_text())
            cals[Path(p).stem if len(args.calibration) > 1 else "current"] = (
                calibrate_mod.refit_stored(data) if args.refit
                else Calibration.from_json(data, SINGLE_FORMATS))
    else:
        t0 = time.perf_counter()
        cal = calibration(clspmv.select_device(args.device), force=args.calibrate)
        print(f"calibration: {cal.kind}, {cal.seconds:.1f} s measured "
              f"({time.perf_counter() - t0:.1f} s here)")
        cals = {"current": cal}
    device = (facts_device(next(iter(cals.values()))) if args.device == "facts"
              else clspmv.select_device(args.device))
    if args.bench:
        return replay(bench_measurements(args.bench), device, cals)
    precision = resolve(args.dtype, np.float64)
    stored = {}
    if args.measured:
        stored = {r["matrix"]: r["measured_ms"]
                  for r in json.loads(Path(args.measured).read_text())["records"]}
    records: dict[str, list[dict[str, object]]] = {k: [] for k in cals}
    out = []
    for source in resolve_all(list(suite(args.suite)), progress=False):
        csr = canonical_csr(source.load(), precision.value)
        measured = stored.get(source.name) or measure(csr, device, precision, args.separately)
        line = f"{source.name[:52]:52s} fastest={min(measured, key=measured.get):12s}"
        rec = {"matrix": source.name, "entries": int(csr.nnz), "measured_ms": measured}
        for label, cal in cals.items():
            for tried in (False, True) if args.trial else (False,):
                r = evaluate(csr, device, precision, cal, measured, tried)
                key = label + "+trial" if tried else label
                records.setdefault(key, []).append(r)
                rec[key] = r
                line += (f" | {key}: {r['auto']:12s} {r['ratio']:.3f}" + (
                    f" ({r['trial_s']:.2f} s)" if tried else
                    f" err {r['median_rel_error']:.2f} rho {r['spearman']:.2f}"))
        out.append(rec)
        print(line, flush=True)
    for label, recs in records.items():
        if recs:
            print(f"{label}: {summary(recs)}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"calibrations": {k: c.to_json() for k, c in cals.items()},
                       "records": out}, fh, indent=1)
    return 0


def agreement(path_a: str, path_b: str) -> int:
    """Print each run's fastest format judged in the other run (see the module docstring)."""
    runs = [{r["matrix"]: r["measured_ms"] for r in json.loads(Path(p).read_text())["records"]}
            for p in (path_a, path_b)]
    ratios = []
    for name in (m for m in runs[0] if m in runs[1]):
        a, b = runs[0][name], runs[1][name]
        fa, fb = min(a, key=a.get), min(b, key=b.get)
        pair = (min(b.values()) / b[fa], min(a.values()) / a[fb])
        ratios += pair
        print(f"{name[:52]:52s} A: {fa:12s} B: {fb:12s} A's in B {pair[0]:.3f}  "
              f"B's in A {pair[1]:.3f}")
    r = np.array(ratios)
    within = int(np.count_nonzero(r >= 1 / (1 + TIE)))
    print(f"one run's fastest in the other: geometric mean {np.exp(np.log(r).mean()):.3f}, "
          f"worst {r.min():.3f}, within 5 %: {within}/{r.size} ({100 * within / r.size:.0f} %)")
    return 0


def replay(runs: list[tuple[str, str, dict[str, float]]], device, cals: dict[str, Calibration]
           ) -> int:
    """Print :func:`evaluate` of every calibration on measured times of bench records."""
    by_dtype: dict[str, dict[str, list[dict[str, object]]]] = {}
    for name, dtype, measured in runs:
        precision = resolve(dtype, np.float64)
        real = shared_matrices() / f"{name}.mtx.gz"  # the real suite's records name the file
        source = resolve_all([str(real) if real.exists() else name], progress=False)[0]
        csr = canonical_csr(source.load(), precision.value)
        line = f"{dtype[-2:]} {name[:50]:50s} fastest={min(measured, key=measured.get):12s}"
        for label, cal in cals.items():
            r = evaluate(csr, device, precision, cal, measured)
            by_dtype.setdefault(dtype, {}).setdefault(label, []).append(r)
            line += (f" | {label}: {r['auto']:12s} {r['ratio']:.3f} err "
                     f"{r['median_rel_error']:.2f} rho {r['spearman']:.2f}")
        print(line, flush=True)
    for dtype, per_cal in by_dtype.items():
        for label, recs in per_cal.items():
            print(f"{dtype} {label}: {summary(recs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
