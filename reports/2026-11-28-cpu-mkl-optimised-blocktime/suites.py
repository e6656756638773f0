"""Per suite geometric means of tools/cpu_vs_mkl.py runs (records[*].median): x MKL optimised in
the rounds and in a row, x MKL plain, x scipy, auto / fastest; the README's table::

    python suites.py FOLDER [FOLDER ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from clspmv.bench.suites import suite

KEYS = ("x_mkl_optimised", "x_mkl_optimised_in_a_row", "x_mkl", "x_scipy", "auto_over_fastest")


def main() -> None:
    print("| run | suite | x MKL optimised (worst) | in a row (worst) | x MKL plain | x scipy | "
          "auto / fastest (worst) |\n|---|---|---|---|---|---|---|")
    for folder in sys.argv[1:]:
        records = json.loads((Path(folder) / "results.json").read_text())["records"]
        for name in ("offsuite", "cpu"):
            med = [r["median"] for r in records if r["matrix"] in set(suite(name))]
            if not med:
                continue
            cell = {}
            for k in KEYS:
                v = np.array([m[k] for m in med])
                cell[k] = f"{np.exp(np.mean(np.log(v))):.2f}", f"{v.min():.2f}"
            both = {k: f"{g} ({w})" for k, (g, w) in cell.items()}
            print(f"| {Path(folder).name} | {name} ({len(med)}) | {both['x_mkl_optimised']} | "
                  f"{both['x_mkl_optimised_in_a_row']} | {cell['x_mkl'][0]} | "
                  f"{cell['x_scipy'][0]} | {both['auto_over_fastest']} |")


if __name__ == "__main__":
    main()
