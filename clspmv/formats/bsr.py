"""BSR: the matrix as dense square blocks in block-CSR order (scipy's ``bsr_matrix``), one
column index per block instead of one per entry.

Where the entries come in dense blocks (finite elements of several unknowns per node: 3 for
elasticity in 3-D, 5 for compressible flow) a product reads ``b * b`` values and one index per
block, against ``b * b`` values and as many indices in CSR: a third less of the matrix in
float64 for 4x4 blocks, and the entries of x a block multiplies are ``b`` consecutive ones.
Measured on eight block matrices of blocks of 2 to 7 (``reports/experiments/2026-11-29-bsr``,
device-resident vectors, float64): on a 2-core Xeon under PoCL 3.1 (the matrices beyond its
cache) 1.13-1.84 times as fast as the fastest other format on six, 0.92-0.99 with blocks of 2
and 7; on the H200 1.01-1.26 times on seven, 0.82 on 3x3 blocks of 21 M entries; on a 16-core
Xeon under PoCL 5.0 (every matrix in its 300 MB cache) 0.77-1.07 times. Against MKL's optimised
CSR path, which finds no blocks, the 2-core Xeon's products of 4x4 and 5x5 blocks ran 1.43-1.45
times as fast (``reports/2026-11-29-cpu-mkl-optimised-bsr``).

``block_size`` (default: :func:`block_tiling`'s choice) is the side ``b`` of the blocks, 1 to
:data:`MAX_BLOCK`, a divisor of both dimensions (the rows and columns are whole blocks; the
format pads neither). The default is the size of least stored bytes, estimated on a sample of
block rows (:data:`SAMPLE_BLOCK_ROWS`); a matrix without dense blocks is stored in blocks of
one entry (CSR walked by another kernel), and the time model leaves ``bsr`` out for it
(:meth:`Bsr.refusal`). The values inside a block are stored column by column, so that the
kernel's inner loop adds a column of the block times one entry of x to ``b`` consecutive sums:
row by row (the layout scipy keeps) the CPU kernel took 1.8-1.9 times as long on the 2-core
Xeon (``proto.py`` there).

A block's padding holds zeros, which cannot be told from stored zeros: as in ``dia`` explicit
zeros are absent (:meth:`~clspmv.DeviceMatrix.to_scipy` returns none). The kernels multiply the
zeros too, and sum a row again with zeros skipped where its sum is not finite (no NaN from
padding times an infinite x): a test per term or per entry of x cost up to 1.56 times the
kernel's time under PoCL 5.0.

``row_items`` (default: on where the layout is lockstep, i.e. GPUs) launches a work-item per
row, the rows of a block row reading each column of a block side by side; otherwise (CPUs) a
work-item per run of whole block rows (:func:`~clspmv.formats.csr_blocks.row_blocks`, balanced
by blocks, :data:`~clspmv.formats.csr_blocks.BLOCKS_PER_UNIT` runs per compute unit), each
block's sums in registers. The transpose product runs a work-item per row, adding to y
atomically; several right-hand sides run one product per column.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .base import INDEX_DTYPE, Format, Layout, Triplets, check_padding, scalar
from .checks import check_int
from .conversion import check_flag
from .costs import padding_refusal
from .csr_blocks import block_count, row_blocks

if TYPE_CHECKING:
    from ..model.features import Features

MAX_BLOCK = 8
"""The largest block side the kernels are built for (the block's sums stay in registers)."""

SAMPLE_BLOCK_ROWS = 512
"""Block rows (evenly spread) on which :func:`block_tiling` counts the blocks of each size."""
SAMPLE_ENTRIES = 1 << 16
"""Most block columns :func:`sampled_fill` sorts to count those the rows of a block row share
(beyond, the block rows holding the most count each row's own: a sample holding a row of
millions of scattered entries took seconds to count at each size)."""


@dataclass(frozen=True)
class Tiling:
    """A matrix cut into square blocks: their side and the share of their slots the entries fill
    (1 for dense blocks; estimated on a sample of block rows)."""

    size: int
    fill: float

    def blocks(self, entries: int) -> int:
        """The blocks that hold ``entries`` entries at this fill."""
        return int(round(entries / (self.fill * self.size * self.size))) if entries else 0


def stored_bytes(blocks: int, size: int, rows: int, itemsize: int) -> int:
    """Bytes of ``blocks`` blocks of side ``size`` over ``rows`` rows, values of ``itemsize``:
    each block's values and column index, and the block row pointers."""
    return blocks * (size ** 2 * itemsize + INDEX_DTYPE.itemsize) + (
        rows // size + 1) * INDEX_DTYPE.itemsize


def tiling_bytes(tiling: Tiling, rows: int, entries: int, itemsize: int) -> int:
    """:func:`stored_bytes` of a matrix of ``rows`` rows and ``entries`` entries in ``tiling``'s
    blocks."""
    return stored_bytes(tiling.blocks(entries), tiling.size, rows, itemsize)


def block_sizes(shape: tuple[int, int]) -> tuple[int, ...]:
    """The block sides a matrix of ``shape`` can take: 1 to :data:`MAX_BLOCK`, dividing both
    dimensions (1 alone for a matrix without rows or columns)."""
    m, n = shape
    if m == 0 or n == 0:
        return (1,)
    return tuple(b for b in range(1, MAX_BLOCK + 1) if m % b == 0 and n % b == 0)


def sampled_fill(csr: sp.csr_matrix, size: int) -> float:
    """The share of the slots of ``size`` x ``size`` blocks that the entries of the canonical
    (sorted) ``csr`` fill, counted on :data:`SAMPLE_BLOCK_ROWS` block rows spread evenly (all of
    them in a smaller matrix). A block row's blocks are the distinct block columns of its rows'
    entries: each row's own (its sorted columns' runs) found in one pass, then merged across
    the rows of each block row, but for the block rows holding the most row-wise block columns
    beyond :data:`SAMPLE_ENTRIES`, which count their rows' sum (an upper bound, near the count
    where long rows scatter)."""
    if size == 1 or csr.nnz == 0:
        return 1.0
    block_rows = csr.shape[0] // size
    picked = np.unique(np.linspace(0, block_rows - 1, min(block_rows, SAMPLE_BLOCK_ROWS)
                                   ).astype(np.int64))
    rows = (picked[:, None] * size + np.arange(size)).ravel()
    starts, ends = csr.indptr[rows].astype(np.int64), csr.indptr[rows + 1].astype(np.int64)
    lengths = ends - starts
    total = int(lengths.sum())
    if total == 0:
        return 1.0
    offsets = np.cumsum(lengths) - lengths  # each row's first entry in the sample
    where = np.repeat(starts - offsets, lengths) + np.arange(total)
    columns = csr.indices[where] // size
    first = np.ones(total, bool)  # the first entry of a row's run of one block column
    first[1:] = columns[1:] != columns[:-1]
    first[offsets[lengths > 0]] = True
    owner = np.repeat(np.repeat(np.arange(picked.size, dtype=np.int64), size), lengths)[first]
    columns = columns[first]
    per_block_row = np.bincount(owner, minlength=picked.size)
    order = np.argsort(per_block_row, kind="stable")
    merged = np.zeros(picked.size, bool)  # the block rows whose rows' columns are merged
    merged[order[np.cumsum(per_block_row[order]) <= SAMPLE_ENTRIES]] = True
    keep = merged[owner]
    keys = owner[keep] * (csr.shape[1] // size + 1) + columns[keep]
    blocks = np.unique(keys).size + int(per_block_row[~merged].sum())
    return total / (blocks * size * size)


def block_tiling(csr: sp.csr_matrix) -> Tiling:
    """The block side of least stored bytes for ``csr`` (:func:`tiling_bytes`) among
    :func:`block_sizes`, with its fill: the default of :meth:`Bsr.from_csr` and what the time
    model reads (:attr:`clspmv.model.features.Features.block_size`)."""
    m = csr.shape[0]
    best = Tiling(1, 1.0)
    best_bytes = tiling_bytes(best, m, csr.nnz, csr.dtype.itemsize)
    for size in block_sizes(csr.shape)[1:]:
        tiling = Tiling(size, sampled_fill(csr, size))
        stored = tiling_bytes(tiling, m, csr.nnz, csr.dtype.itemsize)
        if stored < best_bytes:
            best, best_bytes = tiling, stored
    return best


def check_block_size(block_size: object, shape: tuple[int, int]) -> int:
    """``block_size`` checked against ``shape``: an int of :func:`block_sizes`."""
    size = check_int("block_size", block_size)
    allowed = block_sizes(shape)
    if size not in allowed:
        raise ValueError(f"block_size {size} does not suit a {shape[0]}x{shape[1]} matrix: the "
                         f"blocks must tile both dimensions and be at most {MAX_BLOCK}; it can "
                         f"take {', '.join(map(str, allowed))}")
    return size


class Bsr(Format):
    """Dense square blocks in block-CSR order (see the module docstring)."""

    name = "bsr"
    kernel_file = "bsr.cl"
    zeros_absent = True
    trial_family = "bsr"
    conversion_kind = "layout"
    probed_in = ("quick cpu blocks",)  # no other probe matrix has blocks
    beyond_cache_like = "csr-blocks"
    """Its rows of blocks are CSR's rows: it took the median of the large probes' ratios until a
    band's ``dia`` joined them (1.9 under PyPI's PoCL 3.0 on the 2-core Zen 4, whose ``dia``
    runs 32-byte vectors), with which auto took a CSR kernel on block matrices that ``bsr`` ran
    1.4-1.5x faster; replayed with ``csr-blocks``' ratio, it took ``bsr`` on both, and no other
    choice moved on that calibration, the Debian PoCL's or Intel's runtime's
    (``reports/2026-11-30-cpu-mkl-optimised-ell-scattered``)."""
    borrows_prior = True  # added after the prior's sources were measured
    lockstep_rows = False  # the CPU kernel's work-groups of one work-item share no lanes

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        """The blocks' values and column indices at the features' block size and fill
        (:attr:`~clspmv.model.features.Features.block_size`), and the block row pointers."""
        return tiling_bytes(Tiling(f.block_size, f.block_fill), f.rows, f.entries, f.itemsize)

    @classmethod
    def refusal(cls, f: Features, work_group_size: int) -> str | None:
        """For the model: no block size above 1 stores fewer bytes (the format would walk CSR's
        entries one by one; ``from_csr`` still stores such a matrix, in blocks of one entry,
        when asked for ``bsr``). The default block size stores at most CSR's bytes, so the
        padding bound that ``from_csr`` checks refuses only a ``block_size`` given by the caller
        (``pads`` is False: by default ``bsr`` takes every matrix)."""
        if f.block_size < 2:
            return (f"format {cls.name!r} finds no dense blocks in this matrix: its blocks would "
                    "be single entries")
        return padding_refusal(cls.name, cls.matrix_bytes(f), f)

    @classmethod
    def chosen_params(cls, f: Features) -> dict[str, object]:
        """The features' block size (:func:`block_tiling`'s, which the conversion would
        otherwise compute again: 3-20 ms on the suites' matrices of 5-30 M entries, measured on
        the 2-core Xeon, more on matrices with rows of millions of entries)."""
        return {"block_size": f.block_size}

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, block_size: int | None = None,
                 row_items: bool | None = None) -> Bsr:
        """``block_size``: the blocks' side (a divisor of both dimensions, at most
        :data:`MAX_BLOCK`), or None for :func:`block_tiling`'s; ``row_items``: True or False,
        or None for on where ``layout`` is lockstep."""
        size = (block_tiling(csr).size if block_size is None
                else check_block_size(block_size, csr.shape))
        per_row = check_flag("row_items", row_items, layout.lockstep)
        blocked = csr.tobsr(blocksize=(size, size)) if size > 1 else csr
        n_blocks = blocked.indices.size
        check_padding(cls.name, stored_bytes(n_blocks, size, csr.shape[0], csr.dtype.itemsize),
                      csr)
        # each block column by column (scipy keeps them row by row)
        values = blocked.data.reshape(n_blocks, size, size).transpose(0, 2, 1)
        arrays = {"block_ptr": blocked.indptr.astype(INDEX_DTYPE),
                  "block_col": blocked.indices.astype(INDEX_DTYPE),
                  "val": np.ascontiguousarray(values, csr.dtype).reshape(-1)}
        params = {"block_size": size, "row_items": int(per_row)}
        if not per_row:  # runs of block rows balanced by blocks, as csr-blocks' by entries
            runs = block_count(csr.shape[0] // size, csr.nnz, layout.compute_units)
            arrays["runs"] = row_blocks(arrays["block_ptr"], runs)
            params["runs"] = runs
        return cls(csr.shape, csr.dtype, layout, arrays, **params)

    def prepare_kernels(self) -> None:
        size = self.params["block_size"]
        if self.params["row_items"]:
            self._kernel = self.kernel(self.kernel_file, "bsr_spmv", BS=size)
        else:
            self._kernel = self.kernel(self.kernel_file, "bsr_spmv_runs", wg=1, BS=size)

    def _args(self) -> tuple[object, ...]:
        b = self.buffers
        return (scalar(self.shape[0]), b.get("runs", b["block_ptr"]), b["block_ptr"],
                b["block_col"], b["val"])

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        if self.params["row_items"]:
            ev = self.run(queue, self._kernel, self.shape[0], *self._args(), x, y, alpha, beta,
                          row0=row0)
        else:
            runs = self.params["runs"]
            ev = self.run(queue, self._kernel, runs, *self._args(), x, y, alpha, beta,
                          scalar(runs), wg=1, row0=row0)
        return [ev] if ev else []

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        kern = self.lazy_kernel("t", self.kernel_file, "bsr_spmv_t", atomics=True,
                                BS=self.params["block_size"])
        events = [self.scale_y_t(queue, y, beta),
                  self.run(queue, kern, self.shape[0], *self._args(), x, y, alpha, row0=row0)]
        return [e for e in events if e is not None]

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        size = self.params["block_size"]
        ptr = arrays["block_ptr"].astype(np.int64)
        block_row = np.repeat(np.arange(ptr.size - 1, dtype=np.int64), np.diff(ptr))
        values = arrays["val"].reshape(-1, size, size)  # block, column, row
        block, col, row = np.nonzero(values)
        rows = block_row[block] * size + row
        cols = arrays["block_col"].astype(np.int64)[block] * size + col
        return rows, cols, values[block, col, row]
