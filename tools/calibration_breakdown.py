"""Where the host time of a calibration goes (issue 10's budget), per benchmark matrix: making it
(:func:`clspmv.model.benchmarks.benchmark_matrices`, all at once), canonical CSR, the model's
features, the conversions into every format that accepts it and their uploads, as
:func:`clspmv.model.calibrate.measure` does them (kernels built beforehand, untimed; no products).

The matrices and layouts are those of the device facts given (default: the H200's, as NVIDIA's
OpenCL reports them), whatever device the uploads go to, so a CPU shows the host side of a GPU's
calibration. Run it under the measurement lock on a shared machine::

    flock /tmp/clspmv-measure.lock python tools/calibration_breakdown.py --device 1:0
"""

from __future__ import annotations

import argparse
import time
from types import SimpleNamespace

import numpy as np
from tabulate import tabulate

from clspmv.canonical import canonical_csr
from clspmv.device import select_device
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, convert
from clspmv.formats.layout import Layout
from clspmv.model.benchmarks import benchmark_matrices
from clspmv.model.features import features, refusal, with_exact_diagonals
from clspmv.precision import resolve


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="1:0", help="device of the uploads (default 1:0)")
    ap.add_argument("--type", default="gpu")
    ap.add_argument("--simd-width", type=int, default=32)
    ap.add_argument("--compute-units", type=int, default=132)
    ap.add_argument("--cache-bytes", type=int, default=4 << 20)
    ap.add_argument("--local-memory", type=int, default=48 << 10)
    args = ap.parse_args()
    device = select_device(args.device)
    facts = SimpleNamespace(type=args.type, simd_width=args.simd_width,
                            compute_units=args.compute_units, cache_bytes=args.cache_bytes)
    precision = resolve(np.float64, np.float64)
    t0 = time.perf_counter()
    mats = benchmark_matrices(facts)
    totals = {"generate": time.perf_counter() - t0}
    per_format: dict[str, float] = {}
    rows = []
    for key, matrix in mats.items():
        t0 = time.perf_counter()
        csr = canonical_csr(matrix, precision.value)
        t1 = time.perf_counter()
        feats = with_exact_diagonals(features(csr, args.simd_width), csr)
        t2 = time.perf_counter()
        conv = upload = 0.0
        for name in SINGLE_FORMATS:
            if refusal(name, feats) is not None:
                continue
            cls = FORMAT_CLASSES[name]
            wg = min(cls.default_work_group(args.type), device.max_work_group_size)
            layout = Layout(args.simd_width, wg, args.compute_units, args.local_memory)
            own = {"long_rows": 0} if getattr(cls, "splits_long_rows", False) else {}
            convert(csr[:64], name, layout, precision, **own).compile(device)
            t3 = time.perf_counter()
            fmt = convert(csr, name, layout, precision, owned=True, **own)
            t4 = time.perf_counter()
            fmt.upload(device)
            device.queue.finish()
            upload += time.perf_counter() - t4
            conv += t4 - t3
            per_format[name] = per_format.get(name, 0.0) + t4 - t3
            del fmt
        rows.append([key, csr.nnz, t1 - t0, t2 - t1, conv, upload])
        for label, value in zip(("canonical", "features", "convert", "upload"), rows[-1][2:],
                                strict=True):
            totals[label] = totals.get(label, 0.0) + value
    print(tabulate(rows, ["matrix", "entries", "canonical s", "features s", "convert s",
                          "upload s"], floatfmt=".3f"))
    print("convert s per format:", ", ".join(
        f"{n} {s:.2f}" for n, s in sorted(per_format.items(), key=lambda kv: -kv[1])))
    print("total s:", ", ".join(f"{k} {v:.2f}" for k, v in totals.items()),
          f"(all {sum(totals.values()):.2f})")


if __name__ == "__main__":
    main()
