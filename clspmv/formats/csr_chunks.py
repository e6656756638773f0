"""Long rows cut into chunks of entries: csr-adaptive's chunk path, and the long rows of the
other CSR kernels summed by it over the same arrays.

A row longer than a work-group's block of ``CAP`` entries is cut into chunks of ``CAP`` entries
(:func:`row_chunks`), one work-group each (``csr_adaptive_spmv`` of ``kernels_cl/csr_adaptive.cl``
with zero row blocks), which write their sums to a small buffer; ``csr_adaptive_combine`` adds
each row's chunks in a fixed order and stores ``alpha * sum + beta * y``: no atomics, every ``y``
entry written once. csr-adaptive cuts its own long rows so (:func:`.csr_adaptive.partition`).

:class:`LongRowChunks` gives the other CSR kernels (``csr-scalar``, ``csr-vector``,
``csr-aligned``, ``csr-blocks``) the same path for the rows beyond their ``long_rows`` limit
(:mod:`~clspmv.formats.long_rows` says why and which limit): their forward kernel is built with
``LONG_ROWS`` (``kernels_cl/common.h``) and leaves those rows to the chunks, which read the
shared CSR arrays (:mod:`~clspmv.formats.csr_store`): nothing is copied, and the transpose and
several-right-hand-sides kernels take every row as they are. Each long row is rounded once (one
store of y), as every other row.
"""

from __future__ import annotations

from dataclasses import replace
from typing import ClassVar

import numpy as np
import pyopencl as cl

from ..device import Device
from .base import INDEX_DTYPE, Format, Layout, scalar
from .csr_store import CsrStore
from .long_rows import AUTO, TAIL_WORK_GROUP, check_long_rows, long_row_limit

MAX_LOAD_BYTES = 128
"""Bytes of entries (value and 32-bit column index) one work-item holds in registers while its
loads are in flight: 8 entries in float64, 16 in float32. On the H200, 16 float64 entries a
work-item (2048 per group of 128, or 4096 per group of 256) ran at half the speed of 8 (register
pressure), while 16 float32 entries beat 8 on dense-row matrices. The ``adaptive`` experiment
of ``clspmv bench --sweep`` measures this budget against half of it (``block_entries`` at
:func:`max_block_entries` and at half of that, at every work-group size); larger budgets are
beyond what :meth:`.csr_adaptive.CsrAdaptive.from_csr` accepts."""


ALIGN_ENTRIES = 32
"""On devices running work-items in lockstep (GPUs), with blocks of at least
:data:`MIN_ALIGNED_BLOCK` entries, a row block is loaded from the multiple of 32 entries at or
before its first entry (the entries before it are loaded too, their products never read; the
partition keeps them within the block's ``CAP``) and a long row's chunks after its first start
at such multiples, so that each warp's loads of column indices and values start on a 128-byte
line. Greedy blocks start wherever the rows do, and an unaligned warp load touches one line
more. On the H200 (``reports/2026-11-27-h200-long-short``, aligned against unaligned, same
kernel, 30 alternating rounds): over the irregular and anchors suites, the matrices this was
found on, 0.968x the time in float64 (0.951-0.993) and 0.963x in float32 (0.939-1.001); over the
heldout and offsuite suites, 24 matrices it was not found on, 0.983x (0.950-1.031) and 0.990x
(0.929-1.045; the few slower ones products of 6-30 us); on an H100, 14 of these matrices, 0.968x
(0.948-1.006) and 0.964x (0.930-0.995). Masking the entries before the block instead of loading
them into unread places took the float32 kernel from 32 to 56 registers and made it up to 12 %
slower."""

MIN_ALIGNED_BLOCK = 8 * ALIGN_ENTRIES
"""Smaller blocks (``block_entries``) are not aligned: the offsets would take too much of them
(up to ``ALIGN_ENTRIES - 1`` entries of each block's room)."""


SUM_BYTES = 8
"""Bytes of one product in local memory, for the budget: the sums' type, float64 in float64 and in
``dtype="mixed"`` (whose precision is chosen at upload, after the layout)."""


def max_block_entries(layout: Layout, itemsize: int) -> int:
    """The largest ``CAP``: ``m * WG`` entries, m the largest power of two whose ``m`` entries of
    ``itemsize``-byte values fit :data:`MAX_LOAD_BYTES`, halved while the products and the ``WG``
    reduction values (:data:`SUM_BYTES` each) would take more than half the local memory
    (m >= 1)."""
    wg = layout.work_group_size
    m = 1
    while 2 * m * (itemsize + INDEX_DTYPE.itemsize) <= MAX_LOAD_BYTES:
        m *= 2
    while m > 1 and (m + 1) * wg * SUM_BYTES > layout.local_memory // 2:
        m //= 2
    return m * wg


def align_of(layout: Layout, cap: int) -> int:
    """The alignment of the blocks' loads (:data:`ALIGN_ENTRIES`; 1 for none) on ``layout``
    with blocks of ``cap`` entries."""
    return ALIGN_ENTRIES if layout.lockstep and cap >= MIN_ALIGNED_BLOCK else 1


def row_chunks(begin: np.ndarray, end: np.ndarray, cap: int, align: int = 1
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunks of the rows whose entries are ``begin[l] .. end[l]-1``: steps of ``cap``
    (rounded down to a multiple of ``align``) from the multiple of ``align`` at or before the
    row's first entry, the first chunk as full as its offset allows, the others aligned
    (:data:`ALIGN_ENTRIES`). Returns (first entry, end entry) of every chunk, grouped by row in
    the rows' order, and ``ptr``: row l's chunks are ``ptr[l] .. ptr[l+1]-1`` (int64)."""
    begin = np.asarray(begin, np.int64)
    end = np.asarray(end, np.int64)
    step = cap - cap % align
    skew = begin % align
    counts = -(-(end - begin + skew) // step)
    ptr = np.zeros(begin.size + 1, np.int64)
    np.cumsum(counts, out=ptr[1:])
    row = np.repeat(np.arange(begin.size, dtype=np.int64), counts)
    base = (begin - skew)[row] + step * (np.arange(row.size, dtype=np.int64) - ptr[:-1][row])
    return np.maximum(base, begin[row]), np.minimum(base + step, end[row]), ptr


def rows_longer(row_ptr: np.ndarray, limit: int) -> np.ndarray:
    """The rows (ascending, int64) of more than ``limit`` entries of the CSR ``row_ptr``.

    They are looked for in the windows of rows holding more than ``limit`` entries together
    alone, windows of a quarter of ``limit`` entries on average: on most matrices a few
    windows, not every row's length (which was most of csr-scalar's conversion of a 9 M-row GPU
    layout, 14 ms here; the windows' sums take well under 1)."""
    rows = row_ptr.size - 1
    entries = int(row_ptr[-1] - row_ptr[0]) if rows > 0 else 0
    if entries <= limit:
        return np.zeros(0, np.int64)
    step = max(1, limit * rows // (4 * entries))
    bounds = np.r_[np.arange(0, rows, step), rows]
    full = bounds[:-1][np.diff(row_ptr[bounds]) > limit]
    candidates = (full[:, None] + np.arange(step)).ravel()
    candidates = candidates[candidates < rows]
    return candidates[row_ptr[candidates + 1] - row_ptr[candidates] > limit]


def interleave(*arrays: np.ndarray) -> np.ndarray:
    """``arrays`` side by side, element after element, in the kernels' index type."""
    return np.stack(arrays, axis=1).ravel().astype(INDEX_DTYPE)


def chunk_layout(layout: Layout) -> Layout:
    """The layout of the long rows' chunk kernels: ``layout``, its work-groups raised to
    :data:`~clspmv.formats.long_rows.TAIL_WORK_GROUP` on lockstep devices (``csr-scalar`` runs
    groups of 32 there: chunks of 256 entries would leave a row of millions thousands of
    chunks to combine)."""
    if layout.lockstep and layout.work_group_size < TAIL_WORK_GROUP:
        return replace(layout, work_group_size=TAIL_WORK_GROUP)
    return layout


class LongRowChunks(Format):
    """Mixin of the CSR kernels that leave their long rows to chunks (see the module
    docstring). Their ``from_store`` calls :meth:`attach_long_rows`; the forward kernel takes
    :meth:`long_row_defines` and :meth:`long_row_args`, and :meth:`long_row_product` runs after
    it."""

    splits_long_rows: ClassVar[bool] = True
    tail_format: ClassVar[type[Format]]
    """csr-adaptive (set in :mod:`.csr_adaptive`, which imports this module): the long rows run
    its chunk path, so the time model costs them with its model."""

    def attach_long_rows(self, store: CsrStore, long_rows: object,
                         lengths: np.ndarray | None = None, granule: int = 1) -> LongRowChunks:
        """Find the rows of ``store`` beyond the ``long_rows`` parameter's limit and store
        their chunks; returns self. ``lengths``: the rows' entries where ``store`` pads each
        to a multiple of ``granule`` slots (``csr-aligned``): the kernel sees the stored
        lengths only, so the rows beyond the limit rounded up to a multiple of ``granule`` are
        the long ones there."""
        given = check_long_rows(long_rows)
        layout = self.layout
        if given == AUTO:
            entries = store.nnz if lengths is None else int(lengths.sum())
            limit = long_row_limit(entries, layout.simd_width, layout.compute_units,
                                   self.lockstep_rows)
        else:
            limit = int(given)
        self.params["long_rows"] = limit
        kernel_limit = -(-limit // granule) * granule
        rows = rows_longer(store.row_ptr, kernel_limit) if limit else np.zeros(0, np.int64)
        self.params["long_count"] = int(rows.size)
        if not rows.size:
            return self
        chunked = chunk_layout(layout)
        cap = max_block_entries(chunked, store.dtype.itemsize)
        align = align_of(chunked, cap)
        begin = store.row_ptr[rows].astype(np.int64)
        end = store.row_ptr[rows + 1] if lengths is None else begin + lengths[rows]
        first, last, ptr = row_chunks(begin, end, cap, align)
        self.params.update(long_limit=kernel_limit, long_nnz=int((end - begin).sum()),
                           long_chunks=int(first.size),
                           long_cap=cap, long_align=align, long_wg=chunked.work_group_size)
        self.add_arrays({"long_row": rows.astype(INDEX_DTYPE), "long_ptr": ptr.astype(INDEX_DTYPE),
                         "long_chunk": interleave(first, last)})
        self.own_nbytes += self.long_partial_bytes(self.dtype)
        return self

    @property
    def tail_nnz(self) -> int:
        """Entries of the long rows (0 when no row is long), as
        :attr:`.long_rows.LongRowSplit.tail_nnz` counts those of its tail."""
        return int(self.params.get("long_nnz", 0))

    def long_partial_bytes(self, dtype: np.dtype) -> int:
        """Bytes of the chunks' sums in ``dtype``."""
        return self.params.get("long_chunks", 0) * dtype.itemsize

    def long_row_defines(self) -> dict[str, object]:
        """The forward kernel's ``LONG_ROWS`` where the matrix has long rows."""
        return {"LONG_ROWS": 1} if self.params.get("long_count") else {}

    def long_row_args(self) -> tuple[object, ...]:
        """The forward kernel's last argument where it has ``LONG_ROWS``: the longest row it
        sums."""
        return (scalar(self.params["long_limit"]),) if self.params.get("long_count") else ()

    def upload(self, device: Device) -> None:
        super().upload(device)
        if self.params.get("long_count"):
            # counted in the value type at conversion; "mixed" sums them in float64
            self.own_nbytes += (self.long_partial_bytes(self.accumulate)
                                - self.long_partial_bytes(self.dtype))
            self.scratch_buffer("long_partial", self.long_partial_bytes(self.accumulate))

    def prepare_long_rows(self) -> None:
        """Build the chunks' kernels (none without long rows)."""
        p = self.params
        if not p.get("long_count"):
            return
        wg, cap, align = p["long_wg"], p["long_cap"], p["long_align"]
        self._long_chunks = self.kernel("csr_adaptive.cl", "csr_adaptive_spmv", wg=wg, CAP=cap,
                                        ALIGN=align)
        self._long_combine = self.kernel("csr_adaptive.cl", "csr_adaptive_combine", wg=wg,
                                         CAP=cap, ALIGN=align)

    def long_row_product(self, queue: cl.CommandQueue, x: cl.Buffer | None, y: cl.Buffer,
                         alpha: np.generic, beta: np.generic, row0: int) -> list[cl.Event]:
        """Enqueue y = alpha * A x + beta * y on the long rows (the chunks, then their sums)."""
        p, b = self.params, self.buffers
        if not p.get("long_count"):
            return []
        wg = p["long_wg"]
        chunks = b["long_chunk"]  # the row blocks' arguments, unread with zero blocks
        events = [self.run(queue, self._long_chunks, p["long_chunks"] * wg, scalar(0),
                           b["row_ptr"], b["col"], b["val"], chunks, chunks, chunks, x, y,
                           b["long_partial"], alpha, beta, wg=wg, row0=row0),
                  self.run(queue, self._long_combine, p["long_count"] * wg,
                           scalar(p["long_count"]), b["long_row"], b["long_ptr"],
                           b["long_partial"], y, alpha, beta, wg=wg, row0=row0)]
        return [e for e in events if e is not None]
