"""sell and pjds with a work-item per slice (``slice_items=True``) against a work-item per row
(``slice_items=False``), every other parameter the default, on the matrices of the named suites.

    python reports/experiments/2026-11-29-sell-slice-items/ab.py --suite offsuite --suite cpu \
        --device 1:0 --dtype float64 --rounds 11

Per matrix and format both variants are converted and checked against scipy, then timed in
alternating rounds (one product of each per round, device vectors, wall time to the end of the
product); the medians and their ratio (row kernel / slice kernel: above 1 the slice kernel is
faster) are printed, with the geometric mean per format at the end.
"""
import argparse
import time

import numpy as np
import pyopencl.array as cla

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import suite


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", action="append", required=True)
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"device {dev.name} ({dev.driver_version}), dtype {args.dtype}, rounds {args.rounds}")
    ratios: dict[str, list[float]] = {"sell": [], "pjds": []}
    specs = [s for name in args.suite for s in suite(name)]
    for source in resolve_all(specs, progress=False):
        A = source.load().astype(np.float64).tocsr()
        x = np.random.default_rng(0).standard_normal(A.shape[1])
        ref = A @ x
        line = [f"{source.name[:48]:48s} {A.nnz / 1e6:6.2f} M"]
        for fmt in ("sell", "pjds"):
            runs = {}
            for slices in (False, True):
                M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=args.dtype,
                                                   slice_items=slices)
                xd = cla.to_device(dev.queue, x.astype(M.dtype))
                yd = cla.zeros(dev.queue, A.shape[0], M.dtype)
                M.matvec(xd, yd)
                err = np.max(np.abs(yd.get() - ref)) / max(np.max(np.abs(ref)), 1e-300)
                assert err < (1e-5 if M.dtype == np.float32 else 1e-12), (fmt, slices, err)

                def run(M=M, xd=xd, yd=yd) -> None:
                    M.matvec(xd, yd)
                    dev.queue.finish()
                runs[slices] = run
            times = {k: [] for k in runs}
            for _ in range(args.rounds):
                for k, f in runs.items():
                    t = time.perf_counter()
                    f()
                    times[k].append(time.perf_counter() - t)
            rows, slice_ = np.median(times[False]), np.median(times[True])
            ratios[fmt].append(rows / slice_)
            line.append(f"{fmt} rows {rows * 1e3:8.3f} slices {slice_ * 1e3:8.3f} "
                        f"x{rows / slice_:5.2f}")
        print("  ".join(line), flush=True)
    for fmt, r in ratios.items():
        print(f"{fmt}: geometric mean x{np.exp(np.mean(np.log(r))):.2f}, "
              f"range {min(r):.2f}-{max(r):.2f} over {len(r)} matrices")


main()
