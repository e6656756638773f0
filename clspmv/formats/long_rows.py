"""Long rows out of the row-per-work-item formats: a COO tail added after the format's kernel.

A format that gives each row to one work-item (``csr-scalar``, ``csr-blocks``, ``sell``,
``pjds``) or to one small group of them (``csr-vector``, ``csr-aligned``) waits, in the forward
product, for its longest row: on the H200 a row of 4 M entries took 200-800 ms in these formats
against 0.12 ms for the whole matrix in ``csr-merge`` (``reports/2026-11-23-h200-irregular``).
The CSR kernels leave those rows to chunks over their own arrays
(:mod:`~clspmv.formats.csr_chunks`); ``sell`` and ``pjds``, which store no CSR arrays, split
them off: :class:`LongRowSplit` takes the rows longer than a limit out of the format's own arrays
(they become empty rows there, so its kernel writes ``beta * y`` on them) and stores their
entries as row-sorted triplets, the *tail*, which the segmented reduction of
:class:`~clspmv.formats.coo.CooPart` (the COO part of ``hyb``, no atomics) adds to y afterwards
with beta = 1, spreading them evenly over the device whatever their rows.

The parameter ``long_rows`` of these six formats: ``"auto"`` (default) for the limit of
:func:`long_row_limit`, a positive int for that limit (rows with more entries go to the tail, or
the chunks), ``0`` or ``None`` for none. The formats store the limit they used (0: none) as
``params["long_rows"]``, so that converting again with their parameters splits alike.

The transpose product adds the tail with the COO part's atomic transpose; several right-hand
sides run one product per column when there is a tail (the COO part has no block kernel): the
format's ``has_matmat`` is then False on that matrix.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from .base import (
    DEFAULT_WORK_GROUP,
    INDEX_DTYPE,
    Format,
    Layout,
    Triplets,
    entry_rows,
    row_lengths,
)
from .coo import Coo, CooPart
from .layout import LOCKSTEP_SIMD

LONG_ROW_SPREAD = 1.0
"""A row is long when it holds more than ``LONG_ROW_SPREAD * nnz / lanes`` entries, ``lanes``
being ``compute_units * simd_width`` (the work-items a device runs in lockstep at once, one per
lane). Such a row, walked by one work-item, takes about as long as the whole matrix spread over
the device: on the H200 (132 units x 32 lanes = 4224) one work-item walked the 4 M entries of
the arrow matrix's full row at 56 ns per entry (224 ms in ``csr-scalar``), while ``csr-merge``
took 10 ps per entry of the whole matrix, a ratio of about 5600 = 1.3 x 4224. On a CPU (2 cores,
vector width 8) the limit is nnz / 16: only a row with a large share of all the entries, which
would keep one core busy while the other idles, goes to the tail."""

MIN_LONG_ROW = 1024
"""Rows of at most this many entries never go to the tail: below it the tail's two extra
kernels (tens of microseconds to launch) would cost more than the longest row (about 57 us at
56 ns per entry on the H200)."""

TAIL_WORK_GROUP = DEFAULT_WORK_GROUP
"""Smallest work-group size of the tail's kernels on devices of SIMD width at least
:data:`~clspmv.formats.layout.LOCKSTEP_SIMD` (GPUs), whatever the format's (``csr-scalar`` runs
groups of 32 there): the segmented reduction's shares are ``items`` entries per work-item of a
group, each leaving two carries for the next level, so groups of 32 would leave 8 times the
carries of groups of 256."""

AUTO = "auto"
"""The default of ``long_rows``: the limit of :func:`long_row_limit`."""


def long_row_limit(nnz: int, simd_width: int, compute_units: int, lockstep: bool = True) -> int:
    """Longest row a format keeps in its own arrays for a matrix of ``nnz`` entries on a device
    of ``compute_units`` units of ``simd_width`` lanes: ``max(MIN_LONG_ROW, LONG_ROW_SPREAD * nnz
    / lanes)`` with ``lanes = compute_units * simd_width`` (see :data:`LONG_ROW_SPREAD`).
    ``lockstep=False`` is for a format whose work-items do not share SIMD lanes (``csr-blocks``:
    work-groups of 1): on a device of SIMD width below :data:`~clspmv.formats.layout.LOCKSTEP_SIMD`
    (CPUs) its lanes are the compute units alone, as a core walks one of its blocks at a time (on
    the 2-core CPU the tail made ``csr-blocks`` 1.27x slower on an arrow matrix whose long row
    held a third of the entries: two cores were never starved)."""
    wide = lockstep or simd_width >= LOCKSTEP_SIMD
    lanes = max(1, compute_units) * (max(1, simd_width) if wide else 1)
    return max(MIN_LONG_ROW, int(LONG_ROW_SPREAD * nnz / lanes))


def check_long_rows(long_rows: object) -> int | str:
    """``long_rows`` as ``"auto"`` or an int (0: no tail); ValueError for anything else."""
    if long_rows is None:
        return 0
    if long_rows == AUTO:
        return AUTO
    if isinstance(long_rows, (bool, np.bool_)) or not isinstance(long_rows, (int, np.integer)) \
            or long_rows < 0:
        raise ValueError(f"long_rows must be 'auto', a row length >= 1 (longer rows go to a COO "
                         f"tail), or 0 or None for no tail, got {long_rows!r}")
    return int(long_rows)


@dataclass(frozen=True)
class Tail:
    """The split of a matrix: the limit used (0: none) and the long rows' triplets, row-sorted."""

    limit: int
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray


def split_long_rows(csr: sp.csr_matrix, layout: Layout, long_rows: object = AUTO,
                    lockstep: bool = True) -> tuple[sp.csr_matrix, Tail]:
    """(``csr`` with its long rows emptied, the :class:`Tail` holding their entries) for the
    ``long_rows`` parameter (see the module docstring) on a device of ``layout`` (``lockstep``:
    see :func:`long_row_limit`). ``csr`` itself comes back when no row is long."""
    given = check_long_rows(long_rows)
    limit = (long_row_limit(csr.nnz, layout.simd_width, layout.compute_units, lockstep)
             if given == AUTO else int(given))
    lengths = row_lengths(csr)
    none = np.zeros(0, np.int64)
    if limit == 0 or lengths.size == 0 or lengths.max() <= limit:
        return csr, Tail(limit, none, none.astype(INDEX_DTYPE), np.zeros(0, csr.dtype))
    long_row = lengths > limit
    rows = entry_rows(csr)
    in_tail = long_row[rows]
    kept = np.where(long_row, 0, lengths)
    indptr = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(kept, out=indptr[1:])
    main = sp.csr_matrix((csr.data[~in_tail], csr.indices[~in_tail],
                          indptr.astype(csr.indptr.dtype)), shape=csr.shape)
    main.has_sorted_indices = True  # rows kept whole from a canonical matrix stay sorted
    return main, Tail(limit, rows[in_tail], csr.indices[in_tail], csr.data[in_tail])


class LongRowSplit(Format):
    """Mixin of the formats with a COO tail of long rows (see the module docstring). Their
    ``from_csr`` calls :func:`split_long_rows`, lays out the main part, then
    :meth:`attach_tail`; :meth:`launch`, :meth:`launch_t`, :meth:`to_coo`, :meth:`upload` and
    :meth:`prepare_kernels` add the tail to the format's own (a format overriding ``launch``,
    ``prepare_kernels`` or ``to_coo`` itself calls :meth:`tail_product`, :meth:`prepare_tail` or
    :meth:`with_tail_triplets`)."""

    tail_part = CooPart("tail_")
    forward_roundings = 2  # a long row: beta * y stored by the main kernel, then the tail adds

    splits_long_rows: ClassVar[bool] = True
    tail_format: ClassVar[type[Format]] = Coo

    def attach_tail(self, tail: Tail) -> LongRowSplit:
        """Store ``tail`` (from :func:`split_long_rows`) with this format's arrays; returns
        self."""
        nnz = int(tail.rows.size)
        self.params["long_rows"] = tail.limit
        layout = self.layout
        if layout.lockstep and layout.work_group_size < TAIL_WORK_GROUP:
            layout = replace(layout, work_group_size=TAIL_WORK_GROUP)
            self.params[self.tail_part.prefix + "wg"] = TAIL_WORK_GROUP
        # float64's entries per work-item whatever the value type: a tail is a few rows of many
        # entries, where float32's 8 were 9 % slower than 4 (the arrow matrix,
        # reports/2026-11-26-coo-items), and a matrix keeps its parameters through astype
        self.params.update(self.tail_part.params(nnz, layout, None, None, itemsize=8))
        if nnz:
            self.add_arrays(self.tail_part.arrays(tail.rows, tail.cols, tail.vals))
            self.has_matmat = False  # the COO part has no several-right-hand-sides kernel
        return self

    @property
    def tail_nnz(self) -> int:
        """Entries in the tail (0 when no row went there)."""
        return int(self.params.get(self.tail_part.prefix + "nnz", 0))

    def upload(self, device: Device) -> None:
        super().upload(device)
        if self.tail_nnz:
            self.tail_part.upload(self, device)

    def prepare_tail(self) -> None:
        """Build the tail's forward kernels (none without a tail)."""
        if self.tail_nnz:
            self.tail_part.kernels(self)

    def prepare_kernels(self) -> None:
        super().prepare_kernels()
        self.prepare_tail()

    def tail_product(self, queue: cl.CommandQueue, x: cl.Buffer | None, y: cl.Buffer,
                     alpha: np.generic, row0: int) -> list[cl.Event]:
        """Enqueue y += alpha * tail x on the long rows (after the format's own kernel)."""
        if not self.tail_nnz:
            return []
        return self.tail_part.product(self, queue, x, y, alpha, self.dtype.type(1), row0)

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        return [*super().launch(queue, x, y, alpha, beta, row0),
                *self.tail_product(queue, x, y, alpha, row0)]

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        events = super().launch_t(queue, x, y, alpha, beta, row0)  # scales y by beta
        if self.tail_nnz:
            ev = self.tail_part.product_t(self, queue, x, y, alpha, row0)
            events += [ev] if ev is not None else []
        return events

    def launch_matmat(self, queue, X, Y, strides, alpha, beta, row0=0) -> list[cl.Event]:
        if self.tail_nnz:
            raise NotImplementedError(f"format {self.name!r} with a tail of long rows has no "
                                      "several-right-hand-sides kernel (has_matmat is False)")
        return super().launch_matmat(queue, X, Y, strides, alpha, beta, row0)

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        return self.with_tail_triplets(arrays, *super().to_coo(arrays))

    def with_tail_triplets(self, arrays: dict[str, np.ndarray], rows: np.ndarray,
                           cols: np.ndarray, vals: np.ndarray) -> Triplets:
        """The main part's triplets ``rows, cols, vals`` and the tail's (from ``arrays``)."""
        if not self.tail_nnz:
            return rows, cols, vals
        t_rows, t_cols, t_vals = self.tail_part.triplets(self, arrays)
        return (np.concatenate([rows.astype(np.int64), t_rows.astype(np.int64)]),
                np.concatenate([cols, t_cols]), np.concatenate([vals, t_vals]))
