"""Read-time benchmark of clspmv.io.read against scipy.io.mmread (issue 14's target: 1.5x).

Generates Matrix Market files of about 5 M, 20 M and 50 M entries in a temporary directory
(never in the repository; ``--dir`` to choose it), then times ``clspmv.io.read``,
``scipy.io.mmread`` (+ ``tocsr`` for a like-for-like CSR result), ``clspmv.io.read_rows`` on a
quarter of the rows and, on the smaller files, the same read with every piece parsed by the
validating reader (no fast path), and prints a table.
A benchmark, not a test: run it on a quiet machine.

    python tools/read_speed.py [--sizes 5,20,50] [--repeat 3] [--validating-max 20]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from tabulate import tabulate

from clspmv import io as mmio
from clspmv.io import reader
from clspmv.io.entries import FOLD_ENTRIES


def generate(path: Path, millions: float, seed: int = 0) -> None:
    """A random n x n general real file of ``millions`` M entries, written by scipy (fast)."""
    n_entries = int(millions * 1_000_000)
    n = max(1000, n_entries // 5)
    rng = np.random.default_rng(seed)
    A = sp.coo_matrix(
        (rng.standard_normal(n_entries), (rng.integers(0, n, n_entries),
                                          rng.integers(0, n, n_entries))),
        shape=(n, n),
    )
    scipy.io.mmwrite(str(path), A, symmetry="general")


def read_validating(path: Path) -> sp.csr_array:
    """``clspmv.io.read(path)`` with every piece parsed by the validating reader."""
    return reader.collect(path, fast=False, fold_at=FOLD_ENTRIES).csr()


def best(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5,20,50", help="millions of entries, comma-separated")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--validating-max", type=float, default=20,
                        help="time the validating reader up to this many M entries")
    parser.add_argument("--dir", default=None, help="directory for the files (default: temp)")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for millions in (float(s) for s in args.sizes.split(",")):
            path = Path(tmp) / f"random-{millions:g}M.mtx"
            generate(path, millions)
            size_mb = os.path.getsize(path) / 1e6
            t_scipy = best(lambda p=path: scipy.io.mmread(str(p)).tocsr(), args.repeat)
            t_clspmv = best(lambda p=path: mmio.read(p), args.repeat)
            quarter = mmio.read_header(path).rows // 4
            t_rows = best(lambda p=path, q=quarter: mmio.read_rows(p, q, 2 * q), 1)
            t_old = (best(lambda p=path: read_validating(p), 1)
                     if millions <= args.validating_max else float("nan"))
            rows.append([f"{millions:g} M", f"{size_mb:.0f}", f"{t_scipy:.2f}", f"{t_clspmv:.2f}",
                         f"{t_clspmv / t_scipy:.2f}x", f"{t_rows:.2f}", f"{t_old:.2f}"])
            print(tabulate([rows[-1]], tablefmt="plain"), flush=True)
            path.unlink()
    print()
    headers = ["entries", "MB", "scipy.io.mmread+tocsr s", "clspmv.io.read s", "ratio",
               "read_rows 1/4 s", "validating only s"]
    print(tabulate(rows, headers=headers, tablefmt="github"))


if __name__ == "__main__":
    main()
