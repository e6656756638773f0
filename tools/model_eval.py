"""Compare format="auto" with the fastest measured format on a suite's matrices.

    python tools/model_eval.py --suite cpu --device cpu [--dtype float64] [--calibrate]

Per matrix: every format's measured kernel time (OpenCL profiling events, median of 5 after a
warm-up, through clspmv.formats.convert + DeviceMatrix.upload), its predicted time, auto's choice
and its measured time relative to the fastest; then the geometric mean and worst of those ratios,
the model's median |predicted - measured| / measured and the Spearman rank correlation of
predicted and measured times (per matrix, then their median).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from scipy.stats import spearmanr

import clspmv
from clspmv.bench.generators import generate
from clspmv.bench.suites import suite
from clspmv.errors import UnsuitableFormatError
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.matrix import canonical_csr
from clspmv.model import select
from clspmv.model.store import calibration
from clspmv.precision import resolve


def kernel_s(M: clspmv.DeviceMatrix, x, y, repeat: int = 5) -> float:
    M.matvec(x, y)
    samples = []
    for _ in range(repeat):
        M.matvec(x, y)
        cl.wait_for_events(M.last_events)
        samples.append(sum(e.profile.end - e.profile.start for e in M.last_events) * 1e-9)
    return statistics.median(samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="cpu")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--calibrate", action="store_true", help="force a new calibration")
    parser.add_argument("--out", default=None, help="JSON file for the records")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    t0 = time.perf_counter()
    cal = calibration(device, force=args.calibrate)
    print(f"calibration: {cal.kind}, {cal.seconds:.1f} s measured "
          f"({time.perf_counter() - t0:.1f} s here)")
    precision = resolve(args.dtype, np.float64)
    records = []
    for spec in suite(args.suite):
        csr = canonical_csr(generate(spec), precision.value)
        t = time.perf_counter()
        canonical_csr(csr, precision.value)
        csr_ms = (time.perf_counter() - t) * 1e3
        sel = select(csr, device, precision, calibration_=cal)
        x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
        y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
        measured = {}
        for name in FORMAT_CLASSES:
            try:
                fmt = convert(csr, name, FORMAT_CLASSES[name].layout_for(device), precision)
            except UnsuitableFormatError:
                continue
            M = clspmv.DeviceMatrix.upload(fmt, device)
            measured[name] = kernel_s(M, x, y)
            del M
        pred = {k: p.kernel_s for k, p in sel.predictions.items() if p.kernel_s is not None}
        common = [k for k in measured if k in pred]
        fastest = min(measured, key=measured.get)
        rel = [abs(pred[k] - measured[k]) / measured[k] for k in common]
        rho = spearmanr([pred[k] for k in common], [measured[k] for k in common]).statistic
        rec = {"matrix": spec, "entries": int(csr.nnz), "auto": sel.format, "fastest": fastest,
               "ratio": measured[fastest] / measured[sel.format],
               "median_rel_error": float(np.median(rel)), "spearman": float(rho),
               "selection_ms": sel.cost_ms, "csr_conversion_ms": csr_ms,
               "measured_ms": {k: v * 1e3 for k, v in measured.items()},
               "predicted_ms": {k: v * 1e3 for k, v in pred.items()}}
        records.append(rec)
        print(f"{spec:48s} auto={sel.format:12s} fastest={fastest:12s} "
              f"ratio={rec['ratio']:.3f} err={rec['median_rel_error']:.2f} rho={rho:.2f} "
              f"select={sel.cost_ms:.1f} ms csr={csr_ms:.1f} ms", flush=True)
    ratios = [r["ratio"] for r in records]
    errors = [e for r in records for k in r["measured_ms"] if k in r["predicted_ms"]
              for e in [abs(r["predicted_ms"][k] - r["measured_ms"][k]) / r["measured_ms"][k]]]
    print(f"geometric mean {float(np.exp(np.mean(np.log(ratios)))):.3f}, worst {min(ratios):.3f}, "
          f"within 5 %: {sum(q >= 0.95 for q in ratios)}/{len(ratios)}; model: median rel. error "
          f"{float(np.median(errors)):.3f}, median Spearman "
          f"{float(np.median([r['spearman'] for r in records])):.2f}")
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"calibration": cal.to_json(), "records": records}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
