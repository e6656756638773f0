"""tools/adaptive_fill.py: the fill of csr-adaptive's row blocks, from its own partition."""

from __future__ import annotations

import runpy
from pathlib import Path

import numpy as np

from clspmv.bench.generators import generate
from clspmv.formats import csr_adaptive
from clspmv.formats.layout import Layout

TOOL = runpy.run_path(str(Path(__file__).resolve().parent.parent / "tools" / "adaptive_fill.py"))


def fields(line: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in line.split()[1:] if "=" in item and "{" not in item)


def test_fill_counts_the_blocks_entries_over_their_capacity() -> None:
    layout = Layout(simd_width=32, work_group_size=128, compute_units=132, local_memory=49152)
    spec = "gen:arrow:n=20000"
    got = fields(TOOL["fill_line"](spec, 8, layout))
    A = generate(spec.removeprefix("gen:")).tocsr()
    cap = csr_adaptive.max_block_entries(layout, 8)
    parts = csr_adaptive.partition(A.indptr, cap, 128)
    blocks = parts["blocks"].reshape(-1, 4)
    in_blocks = int((blocks[:, 3] - blocks[:, 2]).sum())
    assert int(got["cap"]) == cap and int(got["blocks"]) == len(blocks)
    assert float(got["fill"]) == round(in_blocks / (len(blocks) * cap), 2)
    # the arrow's full row and full column: one row of n entries goes to chunks
    assert int(got["long_rows"]) == 1 and int(got["chunks"]) == -(-20000 // cap)
    assert float(got["in_chunks"]) == round(1 - in_blocks / A.nnz, 2)
    assert np.isclose(float(got["in_chunks"]), 20000 / A.nnz, atol=0.01)
