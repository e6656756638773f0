"""Experiment: kernel time of formats over grids of their parameters, next to cuSPARSE.

For each ``gen:`` spec, every variant (a format with one combination of the grid's values) is
converted and timed with :func:`strips_eval.timed` (least summed kernel ms of a product over
interleaved rounds), with cuSPARSE's kernel time (cupy, where present) beside it. Prints one
JSON line per matrix: variant -> ms, and cuSPARSE ms.

Usage: ``python tools/param_sweep.py DEVICE_SPEC [--float32] --grid GRID [--grid GRID ...]
SPEC ...`` with ``GRID`` = ``format`` or ``format:name=v1|v2,name=v1|v2`` (values parsed as
Python literals), e.g. ``--grid coo:items=4|8|16,work_group_size=128|256 --grid csr-adaptive``.
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json

import numpy as np
from strips_eval import build, timed

import clspmv
from clspmv.bench.baseline_cusparse import cusparse_product
from clspmv.bench.generators import generate


def variants(grid: str) -> list[tuple[str, dict[str, object]]]:
    """(format, params) for every combination of ``grid``'s values."""
    fmt, _, rest = grid.partition(":")
    if not rest:
        return [(fmt, {})]
    names, values = [], []
    for item in rest.split(","):
        name, _, vals = item.partition("=")
        names.append(name)
        values.append([ast.literal_eval(v) for v in vals.split("|")])
    return [(fmt, dict(zip(names, combo, strict=True))) for combo in itertools.product(*values)]


def label(fmt: str, params: dict[str, object]) -> str:
    return fmt + "".join(f" {k}={v}" for k, v in params.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--grid", action="append", required=True)
    parser.add_argument("--float32", action="store_true")
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    dtype = np.float32 if args.float32 else np.float64
    for spec in args.specs:
        A = generate(spec)
        mats = {}
        for grid in args.grid:
            for fmt, params in variants(grid):
                try:
                    M = build(A, fmt, dev, dtype, **params)
                except ValueError as err:  # a combination the format refuses
                    print(json.dumps({"spec": spec, "skipped": label(fmt, params),
                                      "why": str(err)}), flush=True)
                    continue
                if M is not None:
                    mats[label(fmt, params)] = M
        times = timed(mats, A.shape, dev, dtype)
        x = np.random.default_rng(0).standard_normal(A.shape[1]).astype(dtype)
        cusparse = cusparse_product(A.astype(dtype), x)
        print(json.dumps({"spec": spec, "nnz": A.nnz, "dtype": np.dtype(dtype).name,
                          "device": dev.name, "times_ms": times,
                          "cusparse_ms": cusparse.timing.min_ms if cusparse.timing else None,
                          "cusparse_absent": cusparse.reason}), flush=True)
        del mats


if __name__ == "__main__":
    main()
