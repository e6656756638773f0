"""Issue 11's figures from ``clspmv bench`` results files: per device, value type and suite
(``irregular``, ``anchors``) the fastest clspmv format against cuSPARSE or MKL, whichever ran
(geometric mean and lowest), COO over the best CSR kernel and HYB over the better of its ELL and
CSR counterparts (highest), each format's slowest time over the fastest format's, and the wall
time of the fastest format's ``M @ x`` from numpy over its kernel time; then per matrix the
ratio and the fastest format. A run whose cuSPARSE times include the host's part of cupy's call
(made before commit 8a3badd: its methodology says so, see ``clspmv.report.compat.LEGACY_KERNEL``)
is named first: its ratios favour clspmv.

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
    times: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    walls: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    baseline: dict[tuple[str, str, str], dict[str, float]] = defaultdict(dict)
    for path in args.results:
        data = read_results(path)
        runs = data.get("meta", {}).get("runs", [])
        old = sum(LEGACY_KERNEL in upgrade_meta(run).get("method", []) for run in runs)
        if old:
            print(f"{path}: {old} of {len(runs)} runs timed cuSPARSE with cupy's host time "
                  "(before commit 8a3badd): their x cuSPARSE ratios favour clspmv")
        records = [r for r in data["records"]
                   if r.get("status") == "ok" and r.get("operation") == "spmv"]
        here: dict[tuple[str, str], set[str]] = defaultdict(set)  # this file's devices
        for r in records:
            if r["kind"] == "format":
                key = (r["device"], r["matrix"], r["dtype"])
                times[key][r["format"]] = r["kernel_ms"]
                here[(r["matrix"], r["dtype"])].add(r["device"])
                if r.get("wall_ms") and r.get("device_type") == "cpu":  # a GPU's adds PCIe
                    walls[key][r["format"]] = r["wall_ms"]
        for r in records:
            if r["kind"] == "baseline" and r["format"] in ("cusparse", "mkl"):
                for device in here[(r["matrix"], r["dtype"])]:
                    baseline[(device, r["matrix"], r["dtype"])][r["format"]] = r["kernel_ms"]
    for device in sorted({d for d, _, _ in times}):
        for dtype in ("float64", "float32"):
            for name in ("irregular", "anchors"):
                members = set(suite(name))
                rows = [(m, t) for (d, m, ty), t in times.items()
                        if d == device and ty == dtype and m in members]
                if rows:
                    summarize(device, dtype, name, rows, walls, baseline)


def summarize(device: str, dtype: str, name: str, rows: list[tuple[str, dict[str, float]]],
              walls: dict, baseline: dict) -> None:
    """One suite's lines (see the module docstring)."""
    fastest = {m: min(t, key=t.get) for m, t in rows}
    coo = [t["coo"] / min(t[c] for c in CSR_KERNELS if c in t) for _, t in rows if "coo" in t]
    hyb = [t["hyb"] / min(t[c] for c in HYB_COUNTERPARTS if c in t) for _, t in rows
           if "hyb" in t]
    print(f"{device}, {dtype}, {name} ({len(rows)} matrices): coo / best CSR at most "
          f"{max(coo, default=float('nan')):.2f}; hyb / better counterpart at most "
          f"{max(hyb, default=float('nan')):.2f}")
    for base in ("cusparse", "mkl"):
        speedup = [(m, baseline[(device, m, dtype)][base] / t[fastest[m]]) for m, t in rows
                   if base in baseline[(device, m, dtype)]]
        if speedup:
            s = np.array([v for _, v in speedup])
            print(f"    x {base} (kernel): geometric mean {np.exp(np.mean(np.log(s))):.3f}, "
                  f"lowest {s.min():.3f}")
    worst: dict[str, tuple[float, str]] = {}
    for m, t in rows:
        for f, v in t.items():
            if v / t[fastest[m]] > worst.get(f, (0.0, ""))[0]:
                worst[f] = (v / t[fastest[m]], m)
    print("    slowest / fastest: " + ", ".join(
        f"{f} {v:.1f}" for f, (v, _) in sorted(worst.items(), key=lambda kv: -kv[1][0])))
    for m, t in rows:
        wall = walls[(device, m, dtype)].get(fastest[m])
        ratio = f"wall/kernel {wall / t[fastest[m]]:.3f}" if wall else ""
        bases = " ".join(f"{baseline[(device, m, dtype)][b] / t[fastest[m]]:6.3f} x {b}"
                         for b in ("cusparse", "mkl") if b in baseline[(device, m, dtype)])
        print(f"    {m[:56]:56s} {fastest[m]:13s} {bases} {ratio}")

if __name__ == "__main__":
    main()
