"""How full csr-adaptive's row blocks are (host side only, no device): for each generator spec,
the partition :func:`clspmv.formats.csr_adaptive.partition` makes for a GPU's work-groups, and
how many of the entries go to long-row chunks instead.

A block's work-group loads its entries with a fixed chain of dependent loads, whatever their
number, so where products are latency-bound the bytes a block moves per product scale with its
fill (its entries over the block's capacity). The earlier partition (blocks cut at windows of 3/4
of a block and around every row of more than a quarter block) filled 45 % of the blocks on a
power-law matrix, 42 % on R-MAT and 73 % on a 27-point stencil
(``reports/2026-11-25-h200-shuffle/adaptive-fill.txt``); the greedy blocks fill 87 %, 86 % and
98 %. On the H200 that made the stencil's products 9 % faster but the power-law and R-MAT ones
only 1-2 %: their time goes to the gathers from x
(``reports/2026-11-26-h200-partition/tiles-probe.txt``).

    python tools/adaptive_fill.py gen:powerlaw:n=2000000,k=21,local=0.7,seed=1 gen:stencil27:k=100
"""

from __future__ import annotations

import argparse

import numpy as np

from clspmv.bench.generators import generate
from clspmv.formats import csr_adaptive
from clspmv.formats.layout import Layout


def fill_line(spec: str, itemsize: int, layout: Layout) -> str:
    """One matrix's line (see the module docstring)."""
    A = generate(spec.removeprefix("gen:")).tocsr()
    cap = csr_adaptive.max_block_entries(layout, itemsize)
    parts = csr_adaptive.partition(A.indptr, cap, layout.work_group_size)
    blocks = parts["blocks"].reshape(-1, 4)
    entries = blocks[:, 3] - blocks[:, 2]
    counts = np.bincount(np.log2(parts["block_lanes"]).astype(int))
    by_lanes = {1 << i: int(c) for i, c in enumerate(counts)}
    return (f"{spec} nnz={A.nnz} cap={cap} blocks={len(blocks)} "
            f"fill={entries.sum() / (len(blocks) * cap):.2f} "
            f"under_quarter={np.mean(entries < cap / 4):.2f} "
            f"chunks={parts['chunks'].size // 2} long_rows={parts['long_rows'].size} "
            f"in_chunks={1 - entries.sum() / max(A.nnz, 1):.2f} "
            f"blocks_by_lanes={by_lanes}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("specs", nargs="+", help="generator specs, e.g. gen:stencil27:k=100")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    parser.add_argument("--work-group", type=int, default=csr_adaptive.GPU_WORK_GROUP)
    parser.add_argument("--local-memory", type=int, default=49152,
                        help="bytes of local memory per work-group (default: the H200's)")
    args = parser.parse_args()
    # simd width and compute units do not shape csr-adaptive's partition
    layout = Layout(simd_width=32, work_group_size=args.work_group, compute_units=132,
                    local_memory=args.local_memory)
    for spec in args.specs:
        print(fill_line(spec, np.dtype(args.dtype).itemsize, layout), flush=True)


if __name__ == "__main__":
    main()
