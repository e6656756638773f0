"""ELLPACK family: column-major padded rows (``ell``), plus row lengths (``ellr``, ELLPACK-R),
plus T work-items per row (``ellr-t``). See ``ellpack-r.txt`` sections 3-4.

All three share one layout function and one kernel (``kernels_cl/ell.cl``): slot j of row r is
stored at ``(j // T) * n_pad * T + r * T + j % T`` with ``n_pad`` the row count padded to the
device's SIMD width, so neighbouring work-items read neighbouring addresses. ``row_major=True``
stores the rows one after the other instead, slot j of row r at ``r * width + j`` (the
untransposed ELLPACK arrays of ``openmp-vs-cuda.txt``, Table 3; the kernels' ``ROW_MAJOR``).
``unroll`` (1, 2, 4 or 8) is the kernels' ``UNROLL``: it chooses the kernel only, and
:meth:`~clspmv.formats.base.Format.retuned` changes it on the uploaded arrays.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Layout,
    Triplets,
    check_padding,
    check_threads,
    check_unroll,
    entry_index,
    position_in_row,
    round_up,
    row_lengths,
    scalar,
)
from .conversion import check_flag, positions_in_runs
from .costs import RowShape, padded_row_count, slot_bytes
from .row_kernels import RowKernels

if TYPE_CHECKING:
    from ..model.features import Features

ELLR_T_WIDTHS = (2, 4, 8, 16, 32)
NEIGHBOUR_ROWS = 8
"""Rows side by side whose entries at one slot :func:`scattered_rows` compares: a CPU's vector of
doubles (8 work-items of a 64-byte vector; the implementations that report a SIMD width of 1 say
nothing of their vectors)."""
SCATTERED_LINES = 0.5
"""Cache lines of x per entry from which the entries of :data:`NEIGHBOUR_ROWS` rows at one slot
count as scattered: about 0.18 on bands, stencils, lattices and block matrices (neighbouring rows
read neighbouring columns), about 1 on rows of random columns, Chung-Lu, R-MAT and power-law
graphs, 0.42 on a stack of R-MAT graphs."""
SAMPLE_BLOCKS = 256
"""Blocks of :data:`NEIGHBOUR_ROWS` rows, evenly spread, that :func:`scattered_rows` reads."""
SAMPLE_SLOTS = 64
"""Slots of a row at most that :func:`scattered_rows` reads (its cost stays a few milliseconds
on rows of thousands of entries)."""
LINE_ENTRIES = 8
"""Entries of x per cache line (64 bytes of float64) in :func:`scattered_rows`."""


ELL_BEYOND_CACHE_LIKE = "csr-blocks"
"""Whose correction beyond the cache the ELL layouts (``ell``, ``ellr``, ``ellr-t``, ``hyb``)
take in the quick calibration (:attr:`~clspmv.formats.costs.FormatCosts.beyond_cache_like`).
The large probes' rows are scattered, which the ELL layouts store in an order of their own
(:mod:`clspmv.ell_order`): timed there, ``ellr``'s ratio was of one order and was taken by
every ELL matrix. On the 2-core Zen 4 (Debian's PoCL 3.1) it was 2.5 in the default order and
1.0 in the measured row-major one, against 1.26 for ``csr-blocks``, and with 1.0 auto took
``ellr`` or ``hyb`` on block matrices, lattices and R-MAT graphs at 0.46-0.85 of the fastest;
``csr-blocks``' ratio, replayed on that calibration with the search times of two runs, took
auto / fastest from 0.782 to 0.884 (``reports/2026-11-30-cpu-mkl-optimised-ell-scattered``)."""


def scattered_rows(csr: sp.csr_matrix) -> bool:
    """Whether the rows of ``csr`` read scattered columns of x: at one slot, the entries of
    :data:`NEIGHBOUR_ROWS` rows side by side (what column-major ELL gathers into one vector) lie
    on at least :data:`SCATTERED_LINES` distinct cache lines of x per entry, over
    :data:`SAMPLE_BLOCKS` blocks of rows evenly spread (their first :data:`SAMPLE_SLOTS` slots).
    Those rows take the device's scattered order (:attr:`Layout.scattered_row_major_width`)."""
    m = csr.shape[0]
    if csr.nnz == 0:
        return False
    blocks = min(SAMPLE_BLOCKS, max(m // NEIGHBOUR_ROWS, 1))
    starts = np.unique(np.linspace(0, max(m - NEIGHBOUR_ROWS, 0), blocks).astype(np.int64))
    rows = (starts[:, None] + np.arange(NEIGHBOUR_ROWS)).ravel()
    block = np.repeat(np.arange(starts.size, dtype=np.int64), NEIGHBOUR_ROWS)[rows < m]
    rows = rows[rows < m]
    first = csr.indptr[rows].astype(np.int64)
    taken = np.minimum(csr.indptr[rows + 1] - first, SAMPLE_SLOTS)
    entries = int(taken.sum())
    if entries == 0:
        return False
    of_entry = np.repeat(np.arange(rows.size), taken)
    slot = positions_in_runs(taken)
    line = csr.indices[first[of_entry] + slot].astype(np.int64) // LINE_ENTRIES
    lines_per_slot = csr.shape[1] // LINE_ENTRIES + 1
    key = (block[of_entry] * SAMPLE_SLOTS + slot) * lines_per_slot + line
    return np.unique(key).size >= SCATTERED_LINES * entries


def row_major_layout(row_major: object, layout: Layout, width: int, csr: sp.csr_matrix
                     ) -> bool:
    """Whether the ELL layout of ``csr``'s rows, ``width`` slots long, is stored row-major:
    ``row_major`` when given (:func:`~clspmv.formats.conversion.check_flag`), else (None) when
    work-items do not run in lockstep and the rows are at least as long as the device's measured
    order says (:mod:`clspmv.ell_order`): :attr:`Layout.scattered_row_major_width` for rows of
    scattered columns (:func:`scattered_rows`), :attr:`Layout.row_major_width` for others."""
    regular, scattered = layout.row_major_width, layout.scattered_row_major_width
    # the matrix is read only where the two orders of rows disagree on rows this long
    read = (not layout.lockstep and row_major is None
            and min(regular, scattered) <= width < max(regular, scattered))
    threshold = scattered if read and scattered_rows(csr) else regular
    return check_flag("row_major", row_major, not layout.lockstep and width >= threshold)


def ell_slots(n_pad: int, width: int, threads: int, row_major: bool = False) -> int:
    """Number of slots of an ELL layout (rows padded to n_pad; column-major: width rounded up
    to T)."""
    return n_pad * (width if row_major else round_up(width, threads))


def ell_where(csr: sp.csr_matrix, n_pad: int, threads: int,
              row_major_width: int | None = None) -> np.ndarray:
    """Array index of every stored entry of ``csr`` (slot ``p`` of row ``r``) in the column-major
    T-lane layout, ``(p // T) * n_pad * T + r * T + p % T``, or in the row-major layout of rows
    ``row_major_width`` slots long, ``r * width + p``, when that is given (int64)."""
    rows = np.arange(csr.shape[0], dtype=np.int64)
    if row_major_width is not None:
        return entry_index(csr, rows * row_major_width)
    if threads == 1:
        return entry_index(csr, rows, n_pad)
    where = entry_index(csr, rows * threads)  # r * T + p
    step = position_in_row(csr) // threads
    step *= (n_pad - 1) * threads
    where += step
    return where


def ell_arrays(
    csr: sp.csr_matrix, n_pad: int, width: int, threads: int, keep: np.ndarray | None = None,
    where: np.ndarray | None = None, row_major: bool = False,
) -> dict[str, np.ndarray]:
    """``col``/``val`` of the ELL layout holding the entries selected by ``keep`` (default: all).

    ``where`` is :func:`ell_where` of ``csr`` (all its entries) when the caller has it already.
    Empty slots hold column -1 (the ``ell`` kernel adds nothing for it) and value 0.
    ``row_major``: rows one after the other, ``width`` slots each.
    """
    if where is None:
        where = ell_where(csr, n_pad, threads, width if row_major else None)
    cols, vals = csr.indices, csr.data
    if keep is not None:
        where, cols, vals = where[keep], cols[keep], vals[keep]
    size = ell_slots(n_pad, width, threads, row_major)
    col = np.full(size, -1, INDEX_DTYPE)
    val = np.zeros(size, csr.dtype)
    col[where] = cols
    val[where] = vals
    return {"col": col, "val": val}


def ell_triplets(col: np.ndarray, val: np.ndarray, n_pad: int, threads: int,
                 row_major_width: int | None = None) -> Triplets:
    """Inverse of :func:`ell_arrays`: the entries of the non-empty slots (``row_major_width``:
    the width of a row-major layout)."""
    where = np.flatnonzero(col >= 0)
    if row_major_width is not None:
        rows = where // max(row_major_width, 1)
    else:
        rows = (where % (n_pad * threads)) // threads
    return rows, col[where], val[where]


def ellr_t_threads(mean: float) -> int:
    """Work-items per row for ELLR-T: about one per four entries of the mean row, 2..32."""
    quarter = max(mean / 4.0, 1.0)
    return max(t for t in ELLR_T_WIDTHS if t <= max(quarter, ELLR_T_WIDTHS[0]))


class EllFamily(RowKernels):
    """The ELLPACK family: padded ``col``/``val`` (column-major, T lanes, or row-major) plus row
    lengths where :attr:`row_lengths_used`, and the ``ell_*`` kernels. Its :meth:`from_csr` serves
    ``ell`` and ``ellr`` (one work-item per row); ``ellr-t`` adds ``threads_per_row``."""

    pads = True
    stream_float32 = True
    kernel_file = "ell.cl"
    family = "ell"
    row_lengths_used = True
    kernel_options = ("unroll",)
    trial_family = "ell"
    conversion_kind = "layout"
    padded = True
    beyond_cache_like = ELL_BEYOND_CACHE_LIKE

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """Every row (padded to C rows) to the longest."""
        return round_up(shape.rows, shape.simd_width) * shape.longest

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        row_len = padded_row_count(f) * 4 if cls.row_lengths_used else 0
        return f.slots_of(cls.name) * slot_bytes(f) + row_len

    @classmethod
    def padded_bytes(cls, f: Features) -> int:
        return f.slots_of(cls.name) * (f.itemsize + 4) + padded_row_count(f) * 4

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, unroll: int = 1,
                 row_major: bool | None = None) -> EllFamily:
        """``row_major``: True or False, or None for :func:`row_major_layout`'s rule."""
        return cls._build(csr, layout, 1, unroll, row_major)

    @classmethod
    def _build(cls, csr: sp.csr_matrix, layout: Layout, threads: int, unroll: int,
               row_major: bool | None) -> EllFamily:
        unroll = check_unroll(unroll)
        lengths = row_lengths(csr)
        width = int(lengths.max()) if lengths.size else 0
        row_major = row_major_layout(row_major, layout, width, csr)
        n_pad = round_up(csr.shape[0], layout.simd_width)
        slots = ell_slots(n_pad, width, threads, row_major)
        check_padding(cls.name, slots * (csr.dtype.itemsize + 4) + n_pad * 4, csr)
        arrays = ell_arrays(csr, n_pad, width, threads, row_major=row_major)
        if cls.row_lengths_used:
            arrays["row_len"] = np.zeros(n_pad, INDEX_DTYPE)
            arrays["row_len"][: csr.shape[0]] = lengths
        return cls(csr.shape, csr.dtype, layout, arrays, n_pad=n_pad, width=width,
                   threads_per_row=threads, unroll=unroll, row_major=int(row_major))

    def defines(self) -> dict[str, object]:
        defines = self.row_loop_defines()
        if self.row_lengths_used:
            defines["ROW_LENGTHS"] = 1
        if self.params.get("row_major", 0):
            defines["ROW_MAJOR"] = 1
        return defines

    def matrix_args(self) -> tuple[int, tuple[object, ...]]:
        p, b = self.params, self.buffers
        n = self.shape[0]
        row_len = b.get("row_len", b["col"])  # unused by the kernels without ROW_LENGTHS
        return n * p["threads_per_row"], (scalar(n), scalar(p["n_pad"]), scalar(p["width"]),
                                          row_len, b["col"], b["val"])

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        p = self.params
        return ell_triplets(arrays["col"], arrays["val"], p["n_pad"], p["threads_per_row"],
                            p["width"] if p.get("row_major") else None)


class Ell(EllFamily):
    """ELLPACK: column-major, padded to the longest row, no row lengths."""

    name = "ell"
    row_lengths_used = False
    even_loops = True  # every row runs to the longest
    walks_longest = True


class EllR(EllFamily):
    """ELLPACK-R: ELLPACK plus each row's length, so every work-item stops at its own row's end."""

    name = "ellr"
    # the padded layout (the ELL order probe's, taking row_major)
    probed_in = ("ell order", "quick cpu", "quick gpu")


class EllRT(EllFamily):
    """ELLR-T: ELLPACK-R with T work-items per row (T from the mean row length unless given)."""

    name = "ellr-t"
    thread_widths = ELLR_T_WIDTHS

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """Every row to the longest rounded up to the work-items per row (from the mean)."""
        mean = shape.entries / shape.rows if shape.rows else 0.0
        return round_up(shape.rows, shape.simd_width) * round_up(shape.longest,
                                                                 ellr_t_threads(mean))

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        return ellr_t_threads(f.mean_row)

    @classmethod
    def refusal(cls, f: Features, work_group_size: int) -> str | None:
        """The padding bound, and more work-items per row than the work-group holds."""
        why = super().refusal(f, work_group_size)
        threads = cls.threads_per_row(f)
        if why is None and threads > work_group_size:
            why = (f"format {cls.name!r} shares each row among {threads} work-items, more than "
                   f"the work-group size {work_group_size}")
        return why

    @classmethod
    def from_csr(
        cls, csr: sp.csr_matrix, layout: Layout, threads_per_row: int | None = None,
        unroll: int = 1, row_major: bool = False,
    ) -> EllRT:
        if threads_per_row is None:
            threads_per_row = ellr_t_threads(csr.nnz / csr.shape[0] if csr.shape[0] else 0.0)
        threads_per_row = check_threads(threads_per_row, ELLR_T_WIDTHS, layout)
        return cls._build(csr, layout, threads_per_row, unroll, row_major)
