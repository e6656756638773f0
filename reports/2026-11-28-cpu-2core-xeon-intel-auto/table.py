"""The before/after table of one or more runs of auto_before_after.py (their results.json):
per matrix auto's choice and auto ÷ fastest before and after, per suite the geometric means."""

from __future__ import annotations

import json
import math
import sys

from clspmv.bench.suites import suite

SUITES = {"offsuite": "held out", "cpu": "tuned on"}


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def main(paths: list[str]) -> None:
    runs = [{r["matrix"]: r for r in json.load(open(p))["records"]} for p in paths]
    head = "| suite | matrix | nnz | " + " | ".join(
        f"run {i + 1}: fastest (ms) | before | after" for i in range(len(runs))) + " |"
    print(head)
    print("|" + "---|" * (3 + 3 * len(runs)))
    for name, what in SUITES.items():
        for m in suite(name):
            cells = []
            for run in runs:
                r = run[m]
                cells += [f"{r['fastest']} ({r['median_ms'][r['fastest']]:.3f})",
                          f"{r['before']} {r['before_ratio']:.2f}",
                          f"{r['after']} {r['after_ratio']:.2f}"]
            nnz = runs[0][m]["nnz"] / 1e6
            print(f"| {name} ({what}) | {m} | {nnz:.2f} M | " + " | ".join(cells) + " |")
    print()
    for name, what in SUITES.items():
        parts = []
        for i, run in enumerate(runs):
            rs = [run[m] for m in suite(name)]
            parts.append(f"run {i + 1}: before {geomean([r['before_ratio'] for r in rs]):.3f}, "
                         f"after {geomean([r['after_ratio'] for r in rs]):.3f}")
        print(f"* {name} ({what}, {len(suite(name))} matrices), geometric mean of auto ÷ fastest: "
              + "; ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1:])
