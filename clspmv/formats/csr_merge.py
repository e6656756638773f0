"""``csr-merge``: plain CSR arrays walked along the merge path, equal work per share.

The idea is merge-based CSR (D. Merrill and M. Garland, "Merge-based Parallel Sparse
Matrix-Vector Multiplication", SC 2016). The product merges two sorted lists: the row ends
``row_ptr[1..m]`` and the entry indices ``0..nnz-1``; each step of the merge either consumes an
entry (adds ``val * x[col]`` to the running sum) or a row end (the row is complete). The path
has ``m + nnz`` steps; cutting it into shares of equal length gives every share the same
number of rows plus entries, whatever the row lengths: a row of millions of entries spreads over
as many shares as its length asks for, and runs of empty rows cost their row ends only.

Share ``s`` starts at diagonal ``d = s * L`` of the merge grid; its coordinates (rows consumed,
entries consumed) are found by a binary search on that diagonal: row end ``r`` lies at path
position ``row_ptr[r + 1] + r``, so the share starts after the row ends before ``d`` among
those positions (:func:`merge_path`; the host does this once, at conversion, all the shares'
searches a step at a time).

Each share sums its entries and writes every row that starts and ends inside it directly
(``y = alpha * sum + beta * y``). Rows that cross a share boundary are *split*: every share
writes its partial sum of the row it ends in (its *carry*) and, when it starts inside a row that
ends inside it, the partial of that row (its *head*) to a small buffer; a second kernel
(``csr_merge_fixup``) adds, for each split row, the carries of the shares it crosses and the
head of the share it ends in, in a fixed order, and stores y once (no atomics: deterministic,
rounded once from the sums' type). The host lists the split rows and their shares
(:func:`split_rows`); those with at most :data:`FIXUP_SERIAL` carries (nearly all: a row crossing
a boundary between two shares) get one work-item each, the others, behind them, a launch of
their own with :func:`fixup_lanes` work-items per row, so that a row crossing thousands of shares
is summed by a tree.

Two kernels walk the shares (parameter ``staged``):

* ``staged=True`` (GPUs; the default where the SIMD width is at least
  :data:`~clspmv.formats.layout.LOCKSTEP_SIMD`, i.e. on warp/wavefront devices: the Layout
  carries no device type, and CPUs report their float vector width, at most 16): a share is a
  *tile* of ``WG * items`` path steps, one per work-group. The group loads its tile's products
  ``val * x[col]`` and row ends into local memory with consecutive, coalesced loads (``items``
  loads in flight per work-item, as in csr-adaptive), each work-item then finds its own
  ``items`` steps by a binary search in local memory and walks them, and a segmented scan over
  the work-items' carries in local memory completes the rows that cross work-items. ``items``
  defaults to what :data:`~clspmv.formats.csr_chunks.MAX_LOAD_BYTES` of entries allows (8 in
  float64, 16 in float32), halved while the tile would take more than half the local memory.
* ``staged=False`` (CPUs): ``shares`` contiguous chunks of the path, one work-item (and one
  work-group) each, walked in plain sequential loops; by default as many as csr-blocks makes
  blocks (:data:`~clspmv.formats.csr_blocks.BLOCKS_PER_UNIT` per compute unit, at least
  :data:`~clspmv.formats.csr_blocks.MIN_BLOCK_ENTRIES` path steps each).

The transpose (A^T x, atomic) and several-right-hand-sides (A X) products run the ``csr``
kernels of ``csr.cl`` on the same arrays, one work-item per row on the chunk path and
``threads_per_row`` from the mean row length on the staged one (as csr-adaptive does).

As a block of a larger matrix (``row0``, a column map: :mod:`clspmv.formats.base`) every kernel
(tiles, chunks, fix-ups) shifts y by ``row0`` once and reads x through the map; the shares, the
split rows and the buffer of carries and heads are the block's own, in its own row numbers.
Traits: no atomics in the forward product, stored zeros kept, no padding (the
:class:`~clspmv.formats.csr.CsrFamily` defaults); ``threads_per_row`` is not a parameter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from ..device import Device
from .base import INDEX_DTYPE, Layout, scalar
from .checks import check_int
from .conversion import check_flag
from .csr import CsrFamily, mean_row_threads
from .csr_blocks import BLOCKS_PER_UNIT, MIN_BLOCK_ENTRIES, count_below
from .csr_chunks import MAX_LOAD_BYTES, SUM_BYTES
from .csr_store import CsrStore

if TYPE_CHECKING:
    from ..model.features import Features

FIXUP_SERIAL = 8
"""Split rows with at most this many carries are summed by one work-item in the fix-up."""

CHUNK_WORK_GROUP = 1
"""Work-items per work-group of the chunk kernel (``staged=False``): each chunk a group of its
own, as csr-blocks does for PoCL's dynamic scheduling."""


def merge_path(row_ptr: np.ndarray, diagonals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The merge-path coordinates (rows whose end was consumed, entries consumed) at each of
    ``diagonals`` (path positions ``0 .. m + nnz``): row end ``r`` is at position
    ``row_ptr[r + 1] + r``, and it comes before entry ``j`` when ``row_ptr[r + 1] <= j``."""
    row_ptr, diagonals = np.asarray(row_ptr), np.asarray(diagonals, np.int64)
    rows = count_below(lambda r: row_ptr[r + 1] + r, row_ptr.size - 1, diagonals)
    return rows, diagonals - rows


def split_rows(row_ptr: np.ndarray, path_row: np.ndarray, path_entry: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows that cross share boundaries, for the shares starting at
    ``(path_row[s], path_entry[s])`` (``s = 0 .. P``, the last one the path's end).

    Share ``s`` *starts inside* row ``r = path_row[s]`` when it has entries of ``r`` before it.
    The shares starting inside one row are consecutive, ``first .. last``: the row's sum is the
    carries of shares ``first - 1 .. last - 1`` plus the head of share ``last``. Returns int32
    arrays (``rows``, ``carry_first`` = first - 1, ``head_share`` = last)."""
    row_ptr, starts = np.asarray(row_ptr), np.asarray(path_row[:-1], np.int64)
    rows = row_ptr.size - 1
    inside = np.zeros(starts.size, bool)
    live = starts < rows
    inside[live] = np.asarray(path_entry[:-1], np.int64)[live] > row_ptr[starts[live]]
    shares = np.flatnonzero(inside)
    split = starts[shares]
    new = np.r_[True, split[1:] != split[:-1]] if split.size else np.zeros(0, bool)
    heads = np.flatnonzero(new)
    last = shares[np.r_[heads[1:], shares.size] - 1] if heads.size else heads
    return (split[heads].astype(INDEX_DTYPE), (shares[heads] - 1).astype(INDEX_DTYPE),
            last.astype(INDEX_DTYPE))


def fixup_lanes(carry_first: np.ndarray, head_share: np.ndarray, wg: int) -> int:
    """Work-items per split row in the fix-up: the smallest power of two covering the most
    carries any split row has, at most ``wg``."""
    most = int((head_share.astype(np.int64) - carry_first).max(initial=1))
    lanes = 1
    while lanes < most and lanes < wg:
        lanes *= 2
    return lanes


def tile_items(layout: Layout, itemsize: int) -> int:
    """Path steps per work-item of the staged kernel: the largest power of two whose entries
    (value and 32-bit column) fit :data:`MAX_LOAD_BYTES`, halved while the tile's products and
    row ends plus the scan's keys and sums (:data:`SUM_BYTES` per sum) would take more than half
    the local memory."""
    wg = layout.work_group_size
    items = 1
    while 2 * items * (itemsize + INDEX_DTYPE.itemsize) <= MAX_LOAD_BYTES:
        items *= 2
    while items > 1 and (items + 1) * wg * (SUM_BYTES + INDEX_DTYPE.itemsize) \
            > layout.local_memory // 2:
        items //= 2
    return items


def chunk_count(path: int, compute_units: int) -> int:
    """Chunks of the unstaged kernel: BLOCKS_PER_UNIT per compute unit, fewer when chunks would
    get fewer than MIN_BLOCK_ENTRIES path steps, at least one."""
    return max(1, min(BLOCKS_PER_UNIT * max(compute_units, 1), path // MIN_BLOCK_ENTRIES))


class CsrMerge(CsrFamily):
    """CSR cut along the merge path of rows and entries into shares of equal length
    (Merrill & Garland), partial rows combined by a fix-up kernel without atomics."""

    name = "csr-merge"
    probed_in = ("quick cpu",)  # unprobed, CPU choices missed it most (R-MAT)
    stream_float32 = True
    merge_file = "csr_merge.cl"
    forward_atomics = False  # the fix-up kernels complete the split rows: every y written once
    kernel_options = ()  # the shares depend on the work-group size: convert again instead
    conversion_kind = "layout"
    gpu_work_group = 256
    """On the H200 (float64, ``tools/param_sweep.py``), groups of 256 (whose tiles of 4 steps per
    work-item fit half of 48 KiB of local memory) ran 2.1-2.4x faster than groups of 64 or 128
    (8 steps per work-item) on R-MAT, power-law and web-graph matrices of 33-39 M entries, and
    as fast on the arrow matrix."""

    @classmethod
    def launches(cls, f: Features, layout: Layout) -> int:
        """Staged (lockstep devices): the shares, a level of carries where the path outgrows
        one work-group's share, the serial fix-up of a row longer than :data:`FIXUP_SERIAL`
        shares; else the chunks and their fix-up."""
        if not layout.lockstep:
            return 2 if f.rows + f.entries > 1 else 1
        share = layout.work_group_size * tile_items(layout, f.itemsize)
        return (1 + (f.rows + f.entries > share)
                + (f.max_row > FIXUP_SERIAL * share))

    @classmethod
    def work_items(cls, f: Features, layout: Layout) -> float:
        """Staged: the path steps (rows plus entries) over the steps per work-item."""
        if not layout.lockstep:
            return super().work_items(f, layout)
        return (f.rows + f.entries) / tile_items(layout, f.itemsize)

    @classmethod
    def from_store(cls, store: CsrStore, layout: Layout, staged: bool | None = None,
                   items: int | None = None, shares: int | None = None) -> CsrMerge:
        staged = check_flag("staged", staged, layout.lockstep)
        rows, nnz = store.shape[0], store.nnz
        path = rows + nnz
        wg = layout.work_group_size
        if staged:
            if shares is not None:
                raise ValueError("shares applies to staged=False only (the staged kernel's "
                                 "shares are tiles of work_group_size * items path steps)")
            limit = tile_items(layout, store.dtype.itemsize)
            items = limit if items is None else check_int("items", items)
            if not 1 <= items <= limit:
                raise ValueError(
                    f"items must be between 1 and {limit} (a tile of {wg} work-items must fit "
                    f"half the {layout.local_memory} bytes of local memory), got {items}")
            share = wg * items
            count = -(-path // share)
            diagonals = np.minimum(np.arange(count + 1, dtype=np.int64) * share, path)
        else:
            if items is not None:
                raise ValueError("items applies to staged=True only")
            count = (chunk_count(path, layout.compute_units) if shares is None
                     else check_int("shares", shares))
            if count < 1:
                raise ValueError(f"shares must be at least 1, got {shares}")
            count = min(count, max(path, 1))
            diagonals = np.arange(count + 1, dtype=np.int64) * path // count
        if path == 0:
            count, diagonals = 0, np.zeros(1, np.int64)
        path_row, path_entry = merge_path(store.row_ptr, diagonals)
        split, carry_first, head_share = split_rows(store.row_ptr, path_row, path_entry)
        wide = head_share.astype(np.int64) - carry_first > FIXUP_SERIAL
        order = np.r_[np.flatnonzero(~wide), np.flatnonzero(wide)]  # the wide ones last
        arrays = dict(path_row=path_row.astype(INDEX_DTYPE),
                      path_entry=path_entry.astype(INDEX_DTYPE), split_row=split[order],
                      carry_first=carry_first[order], head_share=head_share[order])
        params: dict[str, int] = dict(
            threads_per_row=min(mean_row_threads(nnz, rows), wg) if staged else 1,
            staged=int(staged),
            shares=count, split_rows=split.size, wide_rows=int(wide.sum()),
            fixup_lanes=fixup_lanes(carry_first[wide], head_share[wide], wg))
        if staged:
            params["items"] = items
        fmt = cls.on_store(store, layout, arrays, **params)
        fmt.own_nbytes += fmt.partial_bytes()  # in the value type until the upload says otherwise
        return fmt

    def partial_bytes(self) -> int:
        """Bytes of the device buffer of the shares' carries and heads (two sums per share, at
        least one; before the upload in the value type)."""
        return max(1, 2 * self.params["shares"]) * self.accumulate.itemsize

    def upload(self, device: Device) -> None:
        super().upload(device)
        # from_csr counted the partial sums in the value type; "mixed" sums them in float64
        self.own_nbytes += max(1, 2 * self.params["shares"]) * (self.accumulate.itemsize
                                                             - self.dtype.itemsize)
        self.scratch_buffer("partial", self.partial_bytes())

    def prepare_kernels(self) -> None:
        p = self.params
        if p["staged"]:
            self._walk = self.kernel(self.merge_file, "csr_merge_tiles", ITEMS=p["items"])
        else:
            self._walk = self.kernel(self.merge_file, "csr_merge_chunks", wg=CHUNK_WORK_GROUP)
        self._fixup = self.kernel(self.merge_file, "csr_merge_fixup", LANES=1)
        self._fixup_wide = self.kernel(self.merge_file, "csr_merge_fixup",
                                       LANES=p["fixup_lanes"])

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        p, b = self.params, self.buffers
        wg = self.layout.work_group_size if p["staged"] else CHUNK_WORK_GROUP
        events = [self.run(queue, self._walk, p["shares"] * wg, scalar(p["shares"]),
                           b["row_ptr"], b["col"], b["val"], b["path_row"], b["path_entry"], x,
                           y, b["partial"], alpha, beta, wg=wg, row0=row0)]
        serial = p["split_rows"] - p["wide_rows"]
        fixups = ((self._fixup, 0, serial, 1),
                  (self._fixup_wide, serial, p["wide_rows"], p["fixup_lanes"]))
        for kern, first, rows, lanes in fixups:
            events.append(self.run(queue, kern, rows * lanes, scalar(first),
                                   scalar(first + rows), b["split_row"], b["carry_first"],
                                   b["head_share"], b["partial"], y, alpha, beta, row0=row0))
        return [e for e in events if e is not None]
