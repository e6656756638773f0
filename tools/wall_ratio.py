"""Wall time against kernel time in ``clspmv bench`` results (issue 11's CPU targets).

For each results folder (``--out`` of ``clspmv bench ... --baselines mkl``) and each matrix,
the fastest format's kernel and wall time (``M @ x`` from numpy to numpy), their ratio, and its
speedups over MKL; then the geometric means over the matrices. Ratios only: compare runs taken
side by side on a quiet machine::

    clspmv bench --suite cpu --formats ell,ellr,csr-scalar,csr-blocks,csr-merge \\
        --dtype float64 --baselines mkl --no-selection --quiet --out /tmp/cpu
    python tools/wall_ratio.py /tmp/cpu
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from clspmv.bench.records import read_results, results_path


def _geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def summarize(folder: Path) -> None:
    """Print the per-matrix lines and the geometric means of one results folder."""
    records = read_results(results_path(folder))["records"]
    mkl = {(r["matrix"], r["device"]): r["kernel_ms"] for r in records
           if r["format"] == "mkl" and r.get("kernel_ms")}
    best: dict[str, dict] = {}
    for r in records:
        if r["format"] == "mkl" or r.get("status") != "ok" or not r.get("wall_ms"):
            continue
        if r["matrix"] not in best or r["kernel_ms"] < best[r["matrix"]]["kernel_ms"]:
            best[r["matrix"]] = r
    print(f"== {folder}")
    kernel_x, wall_x, ratios = [], [], []
    for matrix, r in best.items():
        ratios.append(r["wall_ms"] / r["kernel_ms"])
        line = (f"  {matrix[:48]:48s} {r['format']:11s} nnz {r['nnz'] / 1e6:5.1f} M  kernel "
                f"{r['kernel_ms']:8.3f}  wall {r['wall_ms']:8.3f}  wall/kernel {ratios[-1]:.3f}")
        base = next((v for (m, _), v in mkl.items() if m == matrix), None)
        if base is not None:
            kernel_x.append(base / r["kernel_ms"])
            wall_x.append(base / r["wall_ms"])
            line += f"  x mkl kernel {kernel_x[-1]:.2f} wall {wall_x[-1]:.2f}"
        print(line)
    means = f"  geomean: fastest wall/kernel {_geomean(ratios):.3f}"
    if kernel_x:
        means += f", x mkl kernel {_geomean(kernel_x):.3f}, x mkl wall {_geomean(wall_x):.3f}"
    print(means)


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["."]:
        summarize(Path(arg))
