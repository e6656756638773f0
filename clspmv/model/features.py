"""Features of a CSR matrix (or of a block of its rows) that the time models read, and the
formats' refusals, computed with numpy in about one pass over the row pointers and a sample of
the column indices.

The features are what the kernels pay for: the slots each format stores (entries plus its
padding: ELL pads every row to the longest, SELL-C-sigma / pJDS each slice of C rows to its own
longest row, ``csr-aligned`` every row to 16, HYB its ELL part to the width K, DIA every occupied
diagonal to the row count; each padded format counts its own,
:meth:`~clspmv.formats.costs.FormatCosts.slots`, from a :class:`~clspmv.formats.costs.RowShape`
of the row lengths), the rows, the longest row (the critical path of a row-per-work-item
kernel), and the gathers from x: the distinct cache lines of x touched per block of rows
(:data:`ROW_BLOCK` rows, about one work-group) and not by the block before it, estimated on a
sample of blocks.

Formats with a COO tail of long rows (:mod:`clspmv.formats.long_rows`, :data:`SPLIT_FORMATS`)
are two parts: given the device's compute units, the features count the rows beyond the default
limit of each (:attr:`Features.splits`: the tail's rows and entries, the main part's longest
row and padding); :func:`main_part` and :func:`tail_part` give the features of each, and the
predicted time of such a format is its own model on the main part plus its tail format's
(``coo``) on the tail (:func:`clspmv.model.predict.kernel_time`).

The model names no format: what a format costs (its slots, bytes, launches, work-items,
refusals) it says through the hooks of :class:`~clspmv.formats.costs.FormatCosts`, and the
functions here ask the class registered under the name they are given.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import scipy.sparse as sp

from ..formats import SINGLE_FORMATS, FormatNames, format_class
from ..formats.base import INDEX_LIMIT
from ..formats.bsr import block_tiling
from ..formats.costs import RowShape
from ..formats.hyb import ell_share
from ..formats.layout import LOCKSTEP_SIMD, VECTOR_BYTES, lane_width, vectorised_items
from ..formats.long_rows import long_row_limit
from .rowlengths import HistogramShape, LengthHistogram, lane_padding, length_changes
from .sampling import LINE_BYTES, exact_diagonals, sample_rows, sampled_diagonals, x_locality

SPLIT_FORMATS = FormatNames(lambda cls: cls.splits_long_rows)
"""The formats that move rows beyond their ``long_rows`` limit to a COO tail (a live view of
the registry)."""


def padded_slots(shape: RowShape, names: Iterable[str] | None = None) -> dict[str, int]:
    """Slots (entries plus padding) of every padded format of ``names`` (default: the single
    formats) for rows of ``shape``, as each format counts them
    (:meth:`~clspmv.formats.costs.FormatCosts.slots`)."""
    classes = [format_class(name) for name in (SINGLE_FORMATS if names is None else names)]
    return {cls.name: cls.slots(shape) for cls in classes if cls.padded}


@dataclass(frozen=True)
class Split:
    """A split format's default split of a matrix: its limit, the tail's rows and entries, the
    main part's longest row and slots (entries plus padding)."""

    limit: int
    tail_rows: int
    tail_entries: int
    main_max_row: int
    main_slots: int


@dataclass(frozen=True)
class Features:
    """Features of a block of rows of a CSR matrix for one value size and SIMD width."""

    rows: int
    cols: int
    entries: int
    itemsize: int
    simd_width: int
    empty_rows: int
    mean_row: float
    max_row: int
    std_row: float
    x_lines: float
    """Estimated cache lines of x gathered per block of :data:`ROW_BLOCK` rows, summed over the
    blocks: the distinct lines a block reads that the block before it did not read (those are
    still cached), the gathers from x that no neighbouring entry already brought in."""
    near_fraction: float
    """Share of the entries whose column is within one cache line of the previous entry of the
    same row (1 for dense rows, ~0 for random columns)."""
    mean_distance: float
    """Mean |column - row| over the sampled entries (column spread)."""
    x_scattered: float = 0.0
    """Of :attr:`x_lines`, those whose preceding line of x the block (or the block before it)
    does not read: gathers that are no part of a stream (random columns), each a trip to memory
    once x outgrows the cache (:func:`clspmv.model.sampling.x_locality`)."""
    slots: dict[str, int] = field(default_factory=dict)
    """Stored slots (entries plus padding) per padded format; the others store ``entries``."""
    diagonals: int = 0
    """Occupied diagonals (DIA); of a sample of rows unless :attr:`diagonals_exact`."""
    diagonal_rows: int = 0
    """The rows those diagonals cross inside the matrix
    (:func:`clspmv.model.sampling.diagonal_rows`): the slots DIA's kernel reads, fewer than it
    stores (:attr:`diagonals` times the rows) where diagonals run off the matrix, as a
    periodic lattice's wrapped ones do."""
    diagonals_exact: bool = True
    hyb_width: int = 0
    lane_padding: int = 0
    """Padding slots of the rows taken in order in groups of :func:`lane_width` (the SIMD width,
    or a vector's values where the device vectorises across work-items), each group padded to
    its longest row: what a kernel of one row per work-item pays on SIMD lanes (a group of lanes
    runs as long as its longest row; PoCL vectorises work-items this way, a GPU runs a warp this
    way, Intel's CPU runtime a vector of them)."""
    length_changes: int = 0
    """Rows whose length differs from the lengths of both rows before them
    (:func:`clspmv.model.rowlengths.length_changes`): on a CPU each ends its row's loop with a
    branch the predictor misses, which also cuts short the overlap of the next rows' work
    (2-core Zen 5, PoCL 3.1, 0.9 M entries in the cache: csr-blocks 155 us on rows of 9
    entries, 484 us on rows of Poisson lengths of mean 9)."""
    splits: dict[str, Split] = field(default_factory=dict)
    """The COO tail of each of the :data:`SPLIT_FORMATS` that has one by default on the device
    (none when the compute units are not known)."""
    block_size: int = 1
    """The side of the square blocks that store the matrix in the fewest bytes (1: no dense
    blocks), and :attr:`block_fill` the share of their slots the entries fill, estimated on a
    sample of block rows (:func:`clspmv.formats.bsr.block_tiling`, the ``bsr`` format's own
    choice)."""
    block_fill: float = 1.0

    def slots_of(self, fmt: str) -> int:
        """Slots format ``fmt`` stores (entries plus its padding)."""
        return self.slots.get(fmt, self.entries)

    def as_dict(self) -> dict[str, object]:
        """The features as a plain dict (JSON-ready)."""
        return asdict(self)


def diagonal_formats(names: Iterable[str] | None = None) -> tuple[str, ...]:
    """Those of ``names`` (default: the single formats) whose slots grow with the occupied
    diagonals, which :func:`features` counts on a sample of rows
    (:attr:`~clspmv.formats.costs.FormatCosts.counts_diagonals`)."""
    return tuple(name for name in (SINGLE_FORMATS if names is None else names)
                 if format_class(name).counts_diagonals)


def with_exact_diagonals(f: Features, csr: sp.csr_matrix) -> Features:
    """``f`` (the features of ``csr``) with the occupied diagonals counted exactly
    (:func:`exact_diagonals`) and the slots of :func:`diagonal_formats` counted again from them
    (a no-op when already exact)."""
    if f.diagonals_exact:
        return f
    diags, crossed = exact_diagonals(csr)
    shape = _shape(LengthHistogram.of(np.diff(csr.indptr).astype(np.int64)), f.simd_width,
                   f.itemsize, diags)
    slots = {**f.slots, **padded_slots(shape, diagonal_formats())}
    return replace(f, diagonals=diags, diagonal_rows=crossed, diagonals_exact=True, slots=slots)


def _shape(hist: LengthHistogram, simd_width: int, itemsize: int, diagonals: int
           ) -> HistogramShape:
    """The row shape of ``hist`` on a device of ``simd_width`` for values of ``itemsize``."""
    share = ell_share(simd_width >= LOCKSTEP_SIMD, itemsize)
    return HistogramShape(hist, simd_width, share, diagonals)


def features(csr: sp.csr_matrix, simd_width: int, rows: slice | None = None,
             compute_units: int | None = None) -> Features:
    """Features of the canonical CSR matrix ``csr`` (or of its block of ``rows``, a slice) for a
    device of SIMD width ``simd_width`` (the formats' C) and, where given, ``compute_units``
    (without them the split formats' tail of long rows is not counted)."""
    if rows is not None:
        csr = csr[rows]
    m, n = csr.shape
    lengths = np.diff(csr.indptr).astype(np.int64)
    hist = LengthHistogram.of(lengths)
    nnz = int(csr.nnz)
    c = simd_width
    longest = hist.longest
    sample = sample_rows(csr) if nnz else ()
    diags, crossed, exact = sampled_diagonals(csr, sample)
    shape = _shape(hist, c, csr.dtype.itemsize, diags)
    slots = padded_slots(shape)
    splits = {} if compute_units is None else _splits(shape, compute_units)
    line_entries = max(1, LINE_BYTES // csr.dtype.itemsize)
    gathered, scattered, near, distance = x_locality(csr, line_entries, sample)
    tiling = block_tiling(csr)
    return Features(
        rows=m, cols=n, entries=nnz, itemsize=csr.dtype.itemsize, simd_width=c,
        empty_rows=hist.empty_rows, mean_row=nnz / m if m else 0.0,
        max_row=longest, std_row=hist.std(), x_lines=gathered, x_scattered=scattered,
        near_fraction=near, mean_distance=distance, slots=slots, diagonals=diags,
        diagonal_rows=crossed, diagonals_exact=exact,
        hyb_width=shape.hyb_width,
        lane_padding=lane_padding(lengths, lane_width(c, csr.dtype.itemsize), nnz),
        length_changes=length_changes(lengths), splits=splits, block_size=tiling.size,
        block_fill=tiling.fill,
    )


def _splits(shape: HistogramShape, compute_units: int) -> dict[str, Split]:
    """:attr:`Features.splits` for the rows of ``shape`` on a device of ``compute_units``
    units (the main part's slots as each format counts them, on the rows it keeps)."""
    hist, c = shape.hist, shape.simd_width
    out: dict[str, Split] = {}
    by_limit: dict[int, tuple[int, int, HistogramShape | None]] = {}
    for fmt in SPLIT_FORMATS:
        cls = format_class(fmt)
        limit = long_row_limit(hist.entries, c, compute_units, cls.lockstep_rows)
        if limit not in by_limit:
            rows, entries = hist.rows_beyond(limit)
            main = (HistogramShape(hist.without_beyond(limit), c, shape.share, shape.diagonals)
                    if rows else None)
            by_limit[limit] = (rows, entries, main)
        rows, entries, main = by_limit[limit]
        if main is not None:
            out[fmt] = Split(limit, rows, entries, main.longest, cls.slots(main))
    return out


def main_part(fmt: str, f: Features) -> Features:
    """Features of what ``fmt``'s own kernel walks: for a split format with a tail, the matrix
    with the rows of its tail (:attr:`Features.splits`) emptied; else ``f``."""
    split = f.splits.get(fmt)
    if split is None:
        return f
    entries = f.entries - split.tail_entries
    return replace(f, entries=entries, empty_rows=f.empty_rows + split.tail_rows,
                   mean_row=entries / f.rows, max_row=split.main_max_row,
                   x_lines=f.x_lines * entries / f.entries,
                   x_scattered=f.x_scattered * entries / f.entries,
                   slots={**f.slots, fmt: split.main_slots}, splits={})


def tail_part(fmt: str, f: Features) -> Features | None:
    """Features of ``fmt``'s COO tail (its long rows alone, as ``coo`` stores them), or None
    when ``fmt`` has none for ``f``."""
    split = f.splits.get(fmt)
    if split is None:
        return None
    return replace(f, rows=split.tail_rows, entries=split.tail_entries, empty_rows=0,
                   mean_row=split.tail_entries / split.tail_rows,
                   x_lines=f.x_lines * split.tail_entries / f.entries,
                   x_scattered=f.x_scattered * split.tail_entries / f.entries, slots={},
                   diagonals=0, diagonal_rows=0,
                   hyb_width=0, length_changes=0, splits={})


def threads_per_row(fmt: str, f: Features) -> int:
    """Work-items sharing a row in ``fmt``'s default layout (1 for one row per work-item)."""
    return format_class(fmt).threads_per_row(f)


def matrix_bytes(fmt: str, f: Features) -> int:
    """Device bytes of the matrix in ``fmt`` that its product reads (values and indices of the
    slots plus the per-row arrays), as the format lays them out
    (:meth:`~clspmv.formats.costs.FormatCosts.matrix_bytes`): of the main part only for
    features of :func:`main_part` (:func:`total_bytes` adds a split format's tail)."""
    return format_class(fmt).matrix_bytes(f)


def total_bytes(fmt: str, f: Features) -> int:
    """:func:`matrix_bytes` of ``fmt``, a split format's main part and tail both."""
    tail = tail_part(fmt, f)
    main = matrix_bytes(fmt, main_part(fmt, f))
    if tail is None:
        return main
    return main + format_class(fmt).tail_format.matrix_bytes(tail)  # type: ignore[union-attr]


def refusal(fmt: str, f: Features, work_group_size: int = 256) -> str | None:
    """Why ``fmt`` refuses a matrix of features ``f`` (the message the format itself raises), or
    None when it accepts it: the 32-bit index limit of every array, then the format's own
    checks (:meth:`~clspmv.formats.costs.FormatCosts.refusal`: the padding bound of
    :func:`~clspmv.formats.base.check_padding` for the ELLPACK family and DIA, the work-items
    per row of ``ellr-t`` against the work-group size)."""
    f = main_part(fmt, f)
    slots = f.slots_of(fmt)
    if slots > INDEX_LIMIT - f.simd_width * 32:
        return (f"format {fmt!r} would store {slots} slots, beyond the 32-bit index type of the "
                "kernels")
    return format_class(fmt).refusal(f, work_group_size)


__all__ = ["SPLIT_FORMATS", "VECTOR_BYTES", "Features", "Split", "diagonal_formats",
           "exact_diagonals", "features", "lane_width", "main_part", "matrix_bytes",
           "padded_slots", "refusal", "tail_part", "threads_per_row", "total_bytes",
           "vectorised_items", "with_exact_diagonals"]
