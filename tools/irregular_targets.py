"""Issue 11's GPU figures from ``clspmv bench`` results files: per value type and suite
(``irregular``, ``anchors``) the fastest clspmv format against cuSPARSE (geometric mean and
lowest), COO over the best CSR kernel and HYB over the better of its ELL and CSR counterparts
(highest), then per matrix the ratio and the fastest format. A run whose cuSPARSE times include
the host's part of cupy's call (made before commit 8a3badd: its methodology says so, see
``clspmv.report.compat.LEGACY_KERNEL``) is named first: its ratios favour clspmv.

    python tools/irregular_targets.py reports/2026-11-25-h100-xcache/results.json.gz
"""

from __future__ import annotations

import argparse
from collections import defaultdict

import numpy as np

from clspmv.bench.records import read_results
from clspmv.bench.suites import suite
from clspmv.report.compat import LEGACY_KERNEL, upgrade_meta

CSR_KERNELS = ("csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks", "csr-merge")
HYB_COUNTERPARTS = ("ell", "ellr", "csr-scalar", "csr-vector", "csr-adaptive")
"""HYB's ELL part and the CSR kernels its COO part competes with."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+",
                        help="results.json (or .json.gz) files of clspmv bench")
    args = parser.parse_args()
    times: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    cusparse: dict[tuple[str, str], float] = {}
    for path in args.results:
        data = read_results(path)
        runs = data.get("meta", {}).get("runs", [])
        old = sum(LEGACY_KERNEL in upgrade_meta(run).get("method", []) for run in runs)
        if old:
            print(f"{path}: {old} of {len(runs)} runs timed cuSPARSE with cupy's host time "
                  "(before commit 8a3badd): their x cuSPARSE ratios favour clspmv")
        for r in data["records"]:
            if r.get("status") != "ok" or r.get("operation") != "spmv":
                continue
            key = (r["matrix"], r["dtype"])
            if r["kind"] == "format":
                times[key][r["format"]] = r["kernel_ms"]
            elif r["kind"] == "baseline" and r["format"] == "cusparse":
                cusparse[key] = r["kernel_ms"]
    for dtype in ("float64", "float32"):
        for name in ("irregular", "anchors"):
            members = set(suite(name))
            rows = [(m, t) for (m, d), t in times.items()
                    if d == dtype and m in members and (m, d) in cusparse]
            if not rows:
                continue
            speedup = [cusparse[(m, dtype)] / min(t.values()) for m, t in rows]
            coo = [t["coo"] / min(t[c] for c in CSR_KERNELS if c in t) for _, t in rows
                   if "coo" in t]
            hyb = [t["hyb"] / min(t[c] for c in HYB_COUNTERPARTS if c in t) for _, t in rows
                   if "hyb" in t]
            print(f"{dtype} {name} ({len(rows)} matrices): x cuSPARSE geometric mean "
                  f"{np.exp(np.mean(np.log(speedup))):.3f}, lowest {min(speedup):.3f}; "
                  f"coo / best CSR at most {max(coo, default=float('nan')):.2f}; "
                  f"hyb / better counterpart at most {max(hyb, default=float('nan')):.2f}")
            for (m, t), s in zip(rows, speedup, strict=True):
                print(f"    {m[:56]:56s} {s:6.3f} x cuSPARSE ({min(t, key=t.get)})")


if __name__ == "__main__":
    main()
