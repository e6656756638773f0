"""Issue 45: the halo each rank receives per product (x entries owned by other ranks that its
rows read, float64 bytes) for each partition of the rows, contiguous blocks by entries ("nnz")
against the graph partitioner ("graph", clspmv.distributed.graph: METIS via pymetis). No MPI and
no device: the same blocks DistributedMatrix.from_scipy builds, counted on the host.

    python3 reports/halo_bytes.py OUT.md [--ranks 2,4] MATRIX...

MATRIX: bench sources (gen:poisson2d:k=6400, a .mtx path, ...). METIS on a 200 M-entry matrix
takes minutes and tens of GB; OUT.md's header holds the command line.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from clspmv.bench.sources import resolve
from clspmv.distributed.graph import graph_parts, order, permute
from clspmv.distributed.partition import row_offsets


def halos(csr: sp.csr_matrix, offsets: np.ndarray) -> list[int]:
    """Per block ``offsets[k]:offsets[k + 1]`` (its rows and its x slice): the distinct columns
    outside its slice that its rows read."""
    out = []
    for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        cols = csr.indices[csr.indptr[lo]: csr.indptr[hi]]
        out.append(int(np.unique(cols[(cols < lo) | (cols >= hi)]).size))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--ranks", default="2,4")
    args = parser.parse_args()
    lines = ["# Halo per rank and partition (reports/halo_bytes.py)", "",
             f"    {shlex.join(['python3', *sys.argv])}", "",
             "KiB each rank receives per product (float64), rank 0 first; the total over the "
             "ranks; seconds METIS took.", "",
             "| matrix | ranks | partition | KiB per rank | total KiB | s |",
             "|---|---|---|---|---|---|"]
    for spec in args.matrices:
        csr = resolve(spec, progress=False).load().tocsr()
        csr.sort_indices()
        for ranks in (int(r) for r in args.ranks.split(",")):
            blocks = row_offsets(np.diff(csr.indptr), ranks)
            started = time.perf_counter()
            p, offsets = order(graph_parts(csr, ranks), ranks)
            seconds = time.perf_counter() - started
            for name, counts, s in (("nnz", halos(csr, blocks), ""),
                                    ("graph", halos(permute(csr, p), offsets), f"{seconds:.1f}")):
                kib = [8 * c / 2**10 for c in counts]
                lines.append(f"| {spec} | {ranks} | {name} | "
                             f"{', '.join(f'{v:.1f}' for v in kib)} | {sum(kib):.1f} | {s} |")
            print(lines[-2], lines[-1], sep="\n", flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
