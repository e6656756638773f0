"""``csr-blocks``: the CSR arrays plus row blocks balanced by entries, one work-item per block.

Shaped for CPUs (PoCL): each work-item walks one contiguous block of whole rows in a sequential
loop (kernels_cl/csr_blocks.cl) that takes ``unroll`` entries a step (one of
:data:`~clspmv.formats.base.UNROLL_FACTORS`) as vectors and adds their dot product (SIMD
multiplies; default :data:`DEFAULT_UNROLL`).
Work-groups hold :data:`BLOCK_WORK_GROUP` work-item and there are :data:`BLOCKS_PER_UNIT` blocks
per compute unit (fewer for small matrices: at least :data:`MIN_BLOCK_ENTRIES` entries a block),
so that PoCL's dynamic scheduling of work-groups evens out the cores while each work-group
amortises its start. A block is at most its share of
the entries plus one row: a row is never split, so a single row holding most entries would be one
block's work; rows longer than ``long_rows`` (:mod:`~clspmv.formats.long_rows`) are skipped by
the blocks and summed in chunks (:mod:`~clspmv.formats.csr_chunks`), and the blocks are balanced
over the rest.

The transpose (A^T x) and several-right-hand-sides (A X) products run ``csr-scalar``'s kernels of
``csr.cl`` on the same CSR arrays (one work-item per row): they are inherited from the CSR
family, only the forward product is new.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyopencl as cl

from .base import INDEX_DTYPE, Layout, check_unroll, scalar
from .checks import check_int
from .csr import CsrRows
from .csr_store import CsrStore
from .long_rows import AUTO

BLOCKS_PER_UNIT = 16
"""Blocks per compute unit: enough for dynamic scheduling to balance the cores."""
MIN_BLOCK_ENTRIES = 2048
"""Fewest entries a block is given when the matrix is too small for all the blocks."""
BLOCK_WORK_GROUP = 1
"""Work-items per work-group of the forward kernel: each block is a work-group of its own."""
DEFAULT_UNROLL = 1
"""Entries a step by default: one. Measured side by side on the 2-core Zen 4 (float64, 15 matrices
of 0.6-7 M entries in no suite): with PoCL 3.0 (the ``pocl`` extra) steps of 4 took 1.3 to 1.8
times as long as steps of 1 on every matrix; with PoCL 3.1 they took 8 to 32 % longer on
power-law, R-MAT and Chung-Lu rows (a vector part and a remainder of varying lengths per row)
and 5 to 11 % less on rows of equal length. (Before, the unroll followed the mean row length, up
to 4.)"""


def block_count(rows: int, entries: int, compute_units: int) -> int:
    """Blocks for a matrix of ``rows`` and ``entries`` on ``compute_units`` cores: BLOCKS_PER_UNIT
    per unit, fewer when blocks would get less than MIN_BLOCK_ENTRIES entries, at least one
    (when there are rows: empty rows still get y = beta y) and at most one per row."""
    wanted = min(BLOCKS_PER_UNIT * max(compute_units, 1), entries // MIN_BLOCK_ENTRIES)
    return min(rows, max(1, wanted))


def count_below(key: Callable[[np.ndarray], np.ndarray], size: int, targets: np.ndarray
                ) -> np.ndarray:
    """For each of ``targets``, how many of ``size`` nondecreasing values are below it (numpy's
    ``searchsorted``, side left), the value of index ``i`` being ``key(i)`` (for arrays of
    indices): a binary search per target, all targets a step at a time (int64).

    The formats' metadata is a few thousand splits of the rows: searchsorted would need the
    values at every row, an array of m made at each conversion (40 of the 65 ms of csr-merge's
    9 M-row GPU layout, 14 of csr-blocks' 31 with long rows, here), where ``key`` is read at
    the probes of each target alone: first every ``stride``-th value, as many as targets
    (those below a target bracket its count within ``stride``), then ~log2(stride) more."""
    targets = np.asarray(targets)
    stride = max(1, size // max(targets.size, 1))
    below = np.searchsorted(key(np.arange(stride - 1, size, stride)), targets, "left")
    found = below * stride  # values below the target found so far
    span = np.minimum(stride - 1, size - found)  # values left to search, after those
    while span.any():
        half = span >> 1
        probe = found + half
        below = (span > 0) & (key(np.minimum(probe, max(size - 1, 0))) < targets)
        found = np.where(below, probe + 1, found)
        span = np.where(below, span - half - 1, half)
    return found


def row_blocks(row_ptr: np.ndarray, blocks: int, skipped: np.ndarray | None = None
               ) -> np.ndarray:
    """``blocks + 1`` row boundaries: block b holds rows ``[out[b], out[b + 1])``. Boundary b is
    the first row starting at or after entry ``b * nnz / blocks``, so every row is in exactly one
    block, blocks may be empty (behind a long row) and each holds at most its share of the
    entries plus one row. ``blocks`` is between 1 and the number of rows (0 without rows).
    ``skipped``: rows (ascending) whose entries do not count (the long rows, summed apart): the
    entries and starts are then those of the other rows."""
    rows = row_ptr.size - 1
    if not min(rows, 1) <= blocks <= rows:
        raise ValueError(f"blocks must be between 1 and the {rows} rows, got {blocks}")
    skipped = np.zeros(0, np.int64) if skipped is None else skipped
    # the entries of the skipped rows before each of them, and before the end
    before = np.zeros(skipped.size + 1, np.int64)
    np.cumsum(row_ptr[skipped + 1] - row_ptr[skipped], out=before[1:])

    def start(r: np.ndarray) -> np.ndarray:  # row r's start without the skipped rows' entries
        return row_ptr[r] - before[np.searchsorted(skipped, r, "left")]

    total = int(start(np.array([rows]))[0])
    targets = np.arange(1, blocks, dtype=np.float64) * (float(total) / max(blocks, 1))
    # the first start at or after a target is the first at or after its ceiling
    inner = np.minimum(count_below(start, rows + 1, np.ceil(targets).astype(np.int64)), rows)
    return np.concatenate(([0], inner, [rows][:blocks])).astype(INDEX_DTYPE)


class CsrBlocks(CsrRows):
    """CSR walked in row blocks balanced by entries, one work-item per block (for CPUs); rows
    beyond ``long_rows`` summed in chunks (:mod:`~clspmv.formats.csr_chunks`)."""

    name = "csr-blocks"
    # the usual fastest CSR kernel on CPUs
    probed_in = ("quick cpu", "quick cpu large", "quick cpu large shared")
    lockstep_rows = False  # work-groups of 1: on CPUs a long row matters beyond nnz / cores

    @classmethod
    def from_store(cls, store: CsrStore, layout: Layout, blocks: int | None = None,
                   unroll: int | None = None, long_rows: int | str | None = AUTO) -> CsrBlocks:
        rows = store.shape[0]
        if blocks is not None and check_int("blocks", blocks) < 1:
            raise ValueError(f"blocks must be at least 1, got {blocks}")
        unroll = check_unroll(DEFAULT_UNROLL if unroll is None else unroll)
        fmt = cls.on_store(store, layout, {}, threads_per_row=1, unroll=unroll)
        fmt.attach_long_rows(store, long_rows)
        if blocks is None:  # the blocks balanced over the rows that are not long
            blocks = block_count(rows, store.nnz - fmt.tail_nnz, layout.compute_units)
        blocks = min(blocks, rows)  # at most one block per row
        fmt.params["blocks"] = blocks
        long = fmt.host["long_row"] if fmt.params["long_count"] else None
        fmt.add_arrays({"block_row": row_blocks(store.row_ptr, blocks, long)})
        return fmt

    def prepare_kernels(self) -> None:
        self._kernel = self.kernel("csr_blocks.cl", "csr_blocks_spmv", wg=BLOCK_WORK_GROUP,
                                   UNROLL=self.params["unroll"], **self.long_row_defines())
        self.prepare_long_rows()

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        b = self.buffers
        blocks = self.params["blocks"]
        ev = self.run(queue, self._kernel, blocks, scalar(blocks), b["block_row"], b["row_ptr"],
                      b["col"], b["val"], x, y, alpha, beta, *self.long_row_args(),
                      wg=BLOCK_WORK_GROUP, row0=row0)
        return [e for e in (ev,) if e is not None] + self.long_row_product(queue, x, y, alpha,
                                                                            beta, row0)
