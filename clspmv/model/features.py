"""Features of a CSR matrix (or of a block of its rows) that the time models read, and the
formats' refusals, computed with numpy in about one pass over the row pointers and a sample of
the column indices.

The features are what the kernels pay for: the slots each format stores (entries plus its
padding: ELL pads every row to the longest, SELL-C-sigma / pJDS each slice of C rows to its own
longest row, ``csr-aligned`` every row to 16, HYB its ELL part to the width K, DIA every occupied
diagonal to the row count), the rows, the longest row (the critical path of a row-per-work-item
kernel), and the gathers from x: the distinct cache lines of x touched per block of rows
(:data:`ROW_BLOCK` rows, about one work-group) and not by the block before it, estimated on a
sample of blocks.

Formats with a COO tail of long rows (:mod:`clspmv.formats.long_rows`, :data:`SPLIT_FORMATS`)
are two parts: given the device's compute units, the features count the rows beyond the default
limit of each (:attr:`Features.splits`: the tail's rows and entries, the main part's longest
row and padding); :func:`main_part` and :func:`tail_part` give the features of each, and the
predicted time of such a format is its own model on the main part plus ``coo``'s on the tail
(:func:`clspmv.model.predict.kernel_time`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..errors import UnsuitableFormatError
from ..formats import FORMAT_CLASSES
from ..formats.base import (
    INDEX_DTYPE,
    INDEX_LIMIT,
    check_padding,
    round_up,
)
from ..formats.csr import ALIGNMENT, VECTOR_WIDTHS, threads_for_mean_length
from ..formats.ell import ellr_t_threads
from ..formats.hyb import ell_share
from ..formats.layout import LOCKSTEP_SIMD
from ..formats.long_rows import long_row_limit
from ..formats.sell import SIGMA_PADDING_SLACK
from .rowlengths import LengthHistogram, lane_padding, length_changes
from .sampling import LINE_BYTES, exact_diagonals, sample_rows, sampled_diagonals, x_locality

PADDED_FORMATS = ("csr-aligned", "ell", "ellr", "ellr-t", "sell", "pjds", "hyb", "dia")

SPLIT_FORMATS = tuple(name for name, cls in FORMAT_CLASSES.items()
                      if getattr(cls, "splits_long_rows", False))
"""The formats that move rows beyond their ``long_rows`` limit to a COO tail."""


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
    """Padding slots of the rows taken in order in groups of :attr:`simd_width`, each group
    padded to its longest row: what a kernel of one row per work-item pays on SIMD lanes (a
    group of lanes runs as long as its longest row; PoCL vectorises work-items this way, a GPU
    runs a warp this way)."""
    length_changes: int = 0
    """Rows whose length differs from the lengths of both rows before them
    (:func:`clspmv.model.rowlengths.length_changes`): on a CPU each ends its row's loop with a
    branch the predictor misses, which also cuts short the overlap of the next rows' work
    (2-core Zen 5, PoCL 3.1, 0.9 M entries in the cache: csr-blocks 155 us on rows of 9
    entries, 484 us on rows of Poisson lengths of mean 9)."""
    splits: dict[str, Split] = field(default_factory=dict)
    """The COO tail of each of the :data:`SPLIT_FORMATS` that has one by default on the device
    (none when the compute units are not known)."""

    def slots_of(self, fmt: str) -> int:
        """Slots format ``fmt`` stores (entries plus its padding)."""
        return self.slots.get(fmt, self.entries)

    def as_dict(self) -> dict[str, object]:
        """The features as a plain dict (JSON-ready)."""
        return asdict(self)


def with_exact_diagonals(f: Features, csr: sp.csr_matrix) -> Features:
    """``f`` with DIA's slots from :func:`exact_diagonals` (a no-op when already exact)."""
    if f.diagonals_exact:
        return f
    diags, crossed = exact_diagonals(csr)
    slots = {**f.slots, "dia": diags * round_up(f.rows, f.simd_width)}
    return replace(f, diagonals=diags, diagonal_rows=crossed, diagonals_exact=True, slots=slots)


def _padded_slots(hist: LengthHistogram, c: int) -> dict[str, int]:
    """Slots of the formats padded per row (csr-aligned) or per slice (sell, pjds) for the row
    lengths of ``hist``."""
    nnz = hist.entries
    pjds_pad = hist.sorted_padding(c)
    # sell's window (choose_sigma) pads at most SIGMA_PADDING_SLACK * entries beyond pJDS:
    # counted at half that, instead of the sorts choose_sigma makes
    sell_pad = pjds_pad if hist.constant else pjds_pad + int(SIGMA_PADDING_SLACK * nnz / 2)
    return {"csr-aligned": hist.aligned(ALIGNMENT), "sell": nnz + sell_pad,
            "pjds": nnz + pjds_pad}


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
    n_pad = round_up(m, c)
    longest = hist.longest
    k = hist.hyb_width(ell_share(c >= LOCKSTEP_SIMD, csr.dtype.itemsize))
    threads = ellr_t_threads(nnz / m if m else 0.0)
    sample = sample_rows(csr) if nnz else ()
    diags, crossed, exact = sampled_diagonals(csr, sample)
    slots = {
        **_padded_slots(hist, c),
        "ell": n_pad * longest,
        "ellr": n_pad * longest,
        "ellr-t": n_pad * round_up(longest, threads),
        "hyb": n_pad * k + hist.beyond(k),
        "dia": diags * n_pad,
    }
    splits = {} if compute_units is None else _splits(hist, c, compute_units)
    line_entries = max(1, LINE_BYTES // csr.dtype.itemsize)
    gathered, scattered, near, distance = x_locality(csr, line_entries, sample)
    return Features(
        rows=m, cols=n, entries=nnz, itemsize=csr.dtype.itemsize, simd_width=c,
        empty_rows=hist.empty_rows, mean_row=nnz / m if m else 0.0,
        max_row=longest, std_row=hist.std(), x_lines=gathered, x_scattered=scattered,
        near_fraction=near, mean_distance=distance, slots=slots, diagonals=diags,
        diagonal_rows=crossed, diagonals_exact=exact,
        hyb_width=k, lane_padding=lane_padding(lengths, c, nnz),
        length_changes=length_changes(lengths), splits=splits,
    )


def _splits(hist: LengthHistogram, c: int, compute_units: int) -> dict[str, Split]:
    """:attr:`Features.splits` for the row lengths of ``hist`` on a device of ``compute_units``
    units of SIMD width ``c``."""
    nnz = hist.entries
    out: dict[str, Split] = {}
    by_limit: dict[int, tuple[int, int, int, dict[str, int]]] = {}
    for fmt in SPLIT_FORMATS:
        limit = long_row_limit(nnz, c, compute_units, FORMAT_CLASSES[fmt].lockstep_rows)
        if limit not in by_limit:
            rows, entries = hist.rows_beyond(limit)
            main = hist.without_beyond(limit) if rows else hist
            by_limit[limit] = (rows, entries, main.longest if rows else 0,
                               _padded_slots(main, c) if rows else {})
        rows, entries, longest, slots = by_limit[limit]
        if rows:
            out[fmt] = Split(limit, rows, entries, longest, slots.get(fmt, nnz - entries))
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
    if fmt in ("csr-vector", "csr-adaptive"):
        return threads_for_mean_length(f.mean_row, VECTOR_WIDTHS)
    if fmt == "ellr-t":
        return ellr_t_threads(f.mean_row)
    if fmt == "csr-aligned":
        return ALIGNMENT
    return 1


def matrix_bytes(fmt: str, f: Features) -> int:
    """Device bytes of the matrix in ``fmt`` that its product reads (values and indices of the
    slots plus the per-row arrays), as the formats lay them out (DIA: of its diagonals only the
    stretches inside the matrix, :attr:`Features.diagonal_rows`): of the main part only for
    features of :func:`main_part` (:func:`total_bytes` adds a split format's tail)."""
    slot = f.itemsize + INDEX_DTYPE.itemsize
    n_pad = round_up(f.rows, f.simd_width)
    if fmt == "dia":  # the slots its kernel reads, not the padding beyond the matrix
        return f.diagonal_rows * f.itemsize + f.diagonals * 4
    if fmt == "coo":
        return f.entries * (slot + 4)
    if fmt == "hyb":
        return f.slots_of(fmt) * slot + (f.slots_of(fmt) - n_pad * f.hyb_width) * 4
    if fmt == "ell":
        return f.slots_of(fmt) * slot
    if fmt in ("ellr", "ellr-t"):
        return f.slots_of(fmt) * slot + n_pad * 4
    if fmt in ("sell", "pjds"):
        return f.slots_of(fmt) * slot + n_pad * 8 + (n_pad // f.simd_width + 1) * 4
    return f.slots_of(fmt) * slot + (f.rows + 1) * 4  # the CSR family


def total_bytes(fmt: str, f: Features) -> int:
    """:func:`matrix_bytes` of ``fmt``, a split format's main part and COO tail both."""
    tail = tail_part(fmt, f)
    return (matrix_bytes(fmt, main_part(fmt, f))
            + (matrix_bytes("coo", tail) if tail is not None else 0))


def _stand_in(f: Features) -> SimpleNamespace:
    """What :func:`clspmv.formats.base.check_padding` reads of a CSR matrix."""
    return SimpleNamespace(nnz=f.entries, shape=(f.rows, f.cols),
                           data=np.empty(0, np.dtype(f"f{f.itemsize}")))


def refusal(fmt: str, f: Features, work_group_size: int = 256) -> str | None:
    """Why ``fmt`` refuses a matrix of features ``f`` (the message the format itself raises), or
    None when it accepts it. Mirrors the formats' checks: the padding bound of
    :func:`~clspmv.formats.base.check_padding` (ELL family and DIA), the 32-bit index limit of
    every array, and the work-items per row of ``ellr-t`` against the work-group size."""
    f = main_part(fmt, f)
    slots = f.slots_of(fmt)
    if slots > INDEX_LIMIT - f.simd_width * 32:
        return (f"format {fmt!r} would store {slots} slots, beyond the 32-bit index type of the "
                "kernels")
    try:
        if fmt in ("ell", "ellr", "ellr-t"):
            n_pad = round_up(f.rows, f.simd_width)
            check_padding(fmt, slots * (f.itemsize + 4) + n_pad * 4, _stand_in(f))
        elif fmt == "dia":
            check_padding(fmt, slots * f.itemsize + f.diagonals * 4, _stand_in(f))
    except UnsuitableFormatError as err:
        return str(err)
    if fmt == "ellr-t" and threads_per_row(fmt, f) > work_group_size:
        return (f"format 'ellr-t' shares each row among {threads_per_row(fmt, f)} work-items, "
                f"more than the work-group size {work_group_size}")
    return None


__all__ = ["SPLIT_FORMATS", "Features", "Split", "exact_diagonals", "features", "main_part",
           "matrix_bytes", "refusal", "tail_part", "threads_per_row", "total_bytes",
           "with_exact_diagonals"]
