"""Geometric means per suite of one or more cpu_vs_mkl.py results.json (records[*].median), as in
the summary's table::

    python geomeans.py FOLDER [FOLDER ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from clspmv.bench.suites import suite

KEYS = ("x_mkl_optimised", "x_mkl", "x_mkl_best", "x_scipy", "auto_over_fastest")


def geomean(values: list[float]) -> float:
    return float(np.exp(np.mean(np.log(values))))


def main() -> None:
    suites = {name: set(suite(name)) for name in ("offsuite", "cpu")}
    for folder in sys.argv[1:]:
        data = json.loads((Path(folder) / "results.json").read_text())
        for name, members in suites.items():
            recs = [r for r in data["records"] if r["matrix"] in members]
            if not recs:
                continue
            med = [r["median"] for r in recs]
            worst = min(recs, key=lambda r: r["median"]["x_mkl_optimised"])
            worst_auto = min(recs, key=lambda r: r["median"]["auto_over_fastest"])
            g = {k: geomean([m[k] for m in med]) for k in KEYS}
            print(f"{folder} {name} ({len(recs)}): x MKL opt {g['x_mkl_optimised']:.2f} "
                  f"(worst {worst['median']['x_mkl_optimised']:.2f} {worst['matrix']}) | "
                  f"x MKL plain {g['x_mkl']:.2f} | x MKL best {g['x_mkl_best']:.2f} | "
                  f"x scipy {g['x_scipy']:.2f} | auto/fastest {g['auto_over_fastest']:.2f} "
                  f"(worst {worst_auto['median']['auto_over_fastest']:.2f} "
                  f"{worst_auto['matrix']})")


if __name__ == "__main__":
    main()
