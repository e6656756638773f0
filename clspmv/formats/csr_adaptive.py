"""csr-adaptive: plain CSR arrays plus a host-made partition of the rows into balanced work.

The idea is CSR-Adaptive (J. L. Greathouse and M. Daga, "Efficient Sparse Matrix-Vector
Multiplication on GPUs using the CSR Storage Format", SC 2014): the speed of a CSR kernel that
maps rows to threads depends on how long the rows are, so instead the work is cut into pieces of
about equal size on the host, once, and each piece gets one work-group.

* **Row blocks.** Runs of consecutive rows holding at most ``CAP`` entries (and at most ``CAP``
  rows). ``CAP`` is ``m`` times the work-group size: each work-item loads ``m`` entries (8 in
  float64, 16 in float32: :data:`MAX_LOAD_BYTES`) into registers before it gathers from x, all
  loads in flight at once, and the group's products, plus the reduction's scratch, take at most
  half the device's local memory (so that two groups can share one compute unit's). A
  work-group streams its block's ``val[e] * x[col[e]]`` into local memory with consecutive,
  coalesced loads whatever the row lengths, then sums each row from there with a number of
  work-items per row chosen on the host for that block alone (:func:`block_lanes`: the power of
  two minimising a cost model of the block's passes, its longest rows and the tree steps; one
  work-item per row, serially, for blocks of many short rows, many for a long row among short
  ones). On GPUs the work-groups have :data:`GPU_WORK_GROUP` work-items.
* **Long rows** (more than ``CAP`` entries) are cut into chunks of ``CAP`` entries, one
  work-group each, which write their sums to a small buffer; a second, small kernel adds each
  row's chunks in order and stores ``alpha * sum + beta * y``. There are no atomic adds: every
  ``y`` entry is written once and the result is the same on every run.

The partition is vectorised (no loop over rows or blocks): with ``T = CAP // ALONE_SHARE`` and
``W = CAP - T``, a block starts at the first row starting at or after each multiple of ``W``
entries, at every ``CAP``-th row, and before and after every row longer than ``T`` (such a row
is a block of its own, or chunks). The rows of any other block start within one window of ``W``
entries and none is longer than ``T``, so the block holds fewer than ``W + T = CAP`` entries;
blocks hold about ``W`` entries on average (:data:`ALONE_SHARE`).

Transpose products and several right-hand sides run the ``csr`` kernels (``csr_spmv_t``,
``csr_matmat``) on the same arrays, with ``threads_per_row`` from the mean row length as in
``csr-vector``.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from .base import INDEX_DTYPE, Layout, scalar
from .csr import CsrFamily, csr_arrays, mean_row_threads

MAX_LOAD_BYTES = 128
"""Bytes of entries (value and 32-bit column index) one work-item holds in registers while its
loads are in flight: 8 entries in float64, 16 in float32. On the H200, 16 float64 entries a
work-item (2048 per group of 128, or 4096 per group of 256) ran at half the speed of 8 (register
pressure), while 16 float32 entries beat 8 on dense-row matrices. The ``adaptive`` experiment
of ``clspmv bench --sweep`` measures this budget against half of it (``block_entries`` at
:func:`max_block_entries` and at half of that, at every work-group size); larger budgets are
beyond what :meth:`CsrAdaptive.from_csr` accepts."""

GPU_WORK_GROUP = 128
"""Work-group size of csr-adaptive on GPUs: on the H200, groups of 128 beat 256 by 5-10 % on
power-law matrices and matched it elsewhere; 512 was 10-30 % slower. The ``adaptive``
experiment of ``clspmv bench --sweep`` reproduces the comparison (work-groups of 32 to 512, each
at two block sizes; its findings give the best configuration against these defaults)."""


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


ALONE_SHARE = 4
"""Rows longer than ``CAP // ALONE_SHARE`` entries get a row block (or chunks) of their own, and
the other blocks are cut at windows of ``CAP - CAP // ALONE_SHARE`` entries, so that blocks are
about 3/4 full on average. With 2 (windows of half a block, the first partition) blocks held
about ``CAP / 2`` entries: each work-item had half its register loads in flight, and a group's
fixed steps (row pointers, the barrier, the per-row sums) were spread over half as many
entries. On the H200 (``tools/adaptive_ab.py``, the 7 matrices of 32-41 M entries of the
``irregular`` suite and anchors' R-MAT, both value types, work-groups of 128): 4 against 2 was
1.3 % faster in geometric mean (8 % on dense rows, 2 % on power-law rows, at most 1.3 % slower),
8 against 2 0.4 %."""

LANE_STEP_COST = 2
"""Cost of one step of a tree reduction (a barrier and a local add), in serial local adds."""
PASS_COST = 4
"""Cost of one pass over rows (row pointers, the store of y), in serial local adds."""


def block_lanes(lengths: np.ndarray, first: np.ndarray, end: np.ndarray, wg: int) -> np.ndarray:
    """Work-items per row for each row block (rows ``first[b] .. end[b]-1``), the power of two
    ``L <= wg`` that minimises the block's estimated summing time.

    The work-group sums ``wg / L`` rows at a time (a pass); a pass lasts as long as its longest
    row, ``ceil(longest / L)`` local adds, plus ``log2 L`` tree steps when ``L > 1``
    (:data:`LANE_STEP_COST` each) and :data:`PASS_COST`. One long row among short ones thus gets
    the block more lanes, many short rows one lane each: the number of work-items per row is
    chosen per block from its own row lengths (vectorised over blocks, one pass per candidate).
    """
    counts = end - first
    nb = counts.size
    if nb == 0:
        return np.zeros(0, np.int64)
    block_of_row = np.repeat(np.arange(nb, dtype=np.int64), counts)
    index = np.arange(block_of_row.size, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts,
                                                                    counts)
    row_len = lengths[np.repeat(first, counts) + index]
    best_cost = np.full(nb, np.inf)
    best = np.ones(nb, np.int64)
    lanes, steps = 1, 0
    while lanes <= wg:
        # a pass starts at every (wg / lanes)-th row of a block (its first row included)
        starts = np.flatnonzero(index % (wg // lanes) == 0)
        longest = np.maximum.reduceat(row_len, starts) if starts.size else row_len[:0]
        cost = -(-longest // lanes) + LANE_STEP_COST * steps + PASS_COST
        total = np.bincount(block_of_row[starts], weights=cost, minlength=nb)
        better = total < best_cost
        best_cost[better], best[better] = total[better], lanes
        lanes, steps = 2 * lanes, steps + 1
    return best


def partition(row_ptr: np.ndarray, cap: int, wg: int, pack_medium: bool = False
              ) -> dict[str, np.ndarray]:
    """Row blocks and long-row chunks of the rows of ``row_ptr`` (see the module docstring).

    Returns int32 arrays: ``blocks`` (first row, end row, first entry and end entry of each
    block, interleaved: the kernel reads a block's entry range without its row pointers),
    ``block_lanes`` (work-items per row of each block for work-groups of ``wg``, see
    :func:`block_lanes`),
    ``chunks`` (first entry and end entry of each chunk, interleaved, grouped by long row in
    row order), ``long_rows`` (the rows longer than ``cap``), ``long_ptr`` (chunks
    ``long_ptr[l] .. long_ptr[l+1]-1`` belong to ``long_rows[l]``) and ``medium_rows``: with
    ``pack_medium``, the rows that would have had a block of their own without being long
    (more than ``cap // ALONE_SHARE`` entries, at most ``cap``), taken out of the blocks and
    summed :func:`medium_lanes` work-items each, several to a work-group; else empty.
    """
    if cap < 2:
        raise ValueError(f"block_entries must be at least 2, got {cap}")
    row_ptr = np.asarray(row_ptr, np.int64)
    n = row_ptr.size - 1
    nnz = int(row_ptr[-1])
    lengths = np.diff(row_ptr)
    longest_shared = max(1, cap // ALONE_SHARE)
    window = cap - longest_shared
    alone = np.flatnonzero(lengths > longest_shared)
    starts = np.searchsorted(row_ptr[:-1], np.arange(0, nnz, window, dtype=np.int64), "left")
    bounds = np.unique(np.concatenate([
        [0, n], starts, np.arange(0, n, cap, dtype=np.int64), alone, alone + 1]))
    first, end = bounds[:-1], bounds[1:]
    short = lengths[first] <= cap
    long_rows = first[~short]
    counts = -(-lengths[long_rows] // cap)
    long_ptr = np.zeros(long_rows.size + 1, np.int64)
    np.cumsum(counts, out=long_ptr[1:])
    chunk_rows = np.repeat(long_rows, counts)
    chunk_start = row_ptr[chunk_rows] + cap * (
        np.arange(chunk_rows.size, dtype=np.int64) - np.repeat(long_ptr[:-1], counts))
    chunk_end = np.minimum(chunk_start + cap, row_ptr[chunk_rows + 1])

    blocks_first, blocks_end = first[short], end[short]
    medium = np.zeros(0, np.int64)
    if pack_medium:  # single-row blocks of rows above the shared length
        alone_block = ((blocks_end - blocks_first == 1)
                       & (lengths[blocks_first] > longest_shared))
        medium = blocks_first[alone_block]
        blocks_first, blocks_end = blocks_first[~alone_block], blocks_end[~alone_block]
    lanes = block_lanes(lengths, blocks_first, blocks_end, wg)

    def interleave(*arrays: np.ndarray) -> np.ndarray:
        return np.stack(arrays, axis=1).ravel().astype(INDEX_DTYPE)

    return {"blocks": interleave(blocks_first, blocks_end, row_ptr[blocks_first],
                                 row_ptr[blocks_end]),
            "block_lanes": lanes.astype(INDEX_DTYPE),
            "chunks": interleave(chunk_start, chunk_end),
            "long_rows": long_rows.astype(INDEX_DTYPE),
            "long_ptr": long_ptr.astype(INDEX_DTYPE),
            "medium_rows": medium.astype(INDEX_DTYPE)}


def medium_lanes(wg: int) -> int:
    """Work-items per packed medium row (built into ``csr_adaptive.cl`` as ``MEDIUM_LANES``): a
    warp of 32, or the whole work-group where it is smaller."""
    return min(32, wg)


class CsrAdaptive(CsrFamily):
    """CSR with row blocks of at most ``block_entries`` entries per work-group and long rows
    split across work-groups (CSR-Adaptive)."""

    name = "csr-adaptive"
    kernel_options = ()  # the partition depends on the work-group size: convert again instead
    gpu_work_group = GPU_WORK_GROUP
    adaptive_file = "csr_adaptive.cl"

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, block_entries: int | None = None,
                 pack_medium: bool = False) -> CsrAdaptive:
        limit = max_block_entries(layout, csr.dtype.itemsize)
        cap = limit if block_entries is None else int(block_entries)
        if not 2 <= cap <= limit:
            raise ValueError(
                f"block_entries must be between 2 and {limit} (the products of a row block must "
                f"fit half the {layout.local_memory} bytes of local memory with work-groups of "
                f"{layout.work_group_size}), got {block_entries}")
        arrays = csr_arrays(csr)
        parts = partition(csr.indptr, cap, layout.work_group_size, bool(pack_medium))
        arrays.update(parts)
        per_group = layout.work_group_size // medium_lanes(layout.work_group_size)
        fmt = cls(csr.shape, csr.dtype, layout, arrays, threads_per_row=mean_row_threads(csr),
                  block_entries=cap, blocks=parts["blocks"].size // 4,
                  chunks=parts["chunks"].size // 2, long_rows=parts["long_rows"].size,
                  pack_medium=bool(pack_medium), medium_rows=parts["medium_rows"].size,
                  medium_groups=-(-parts["medium_rows"].size // per_group))
        fmt.nbytes += fmt.partial_bytes()  # in the value type until the upload says otherwise
        return fmt

    def partial_bytes(self) -> int:
        """Bytes of the device buffer receiving the chunks' sums (at least one value of the sums'
        type; before the upload the value type's)."""
        return max(1, self.params["chunks"]) * self.accumulate.itemsize

    def upload(self, device: Device) -> None:
        super().upload(device)
        # from_csr counted the partial sums in the value type; "mixed" sums them in float64
        self.nbytes += max(1, self.params["chunks"]) * (self.accumulate.itemsize
                                                         - self.dtype.itemsize)
        self.buffers["partial"] = cl.Buffer(device.context, cl.mem_flags.READ_WRITE,
                                            self.partial_bytes())

    def prepare_kernels(self) -> None:
        options = {"CAP": self.params["block_entries"],
                   "MEDIUM_LANES": medium_lanes(self.layout.work_group_size)}
        self._spmv = self.kernel(self.adaptive_file, "csr_adaptive_spmv", **options)
        self._combine = self.kernel(self.adaptive_file, "csr_adaptive_combine", **options)

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        p, b = self.params, self.buffers
        groups = p["blocks"] + p["medium_groups"] + p["chunks"]
        events = [self.run(queue, self._spmv, groups * self.layout.work_group_size,
                           scalar(p["blocks"]), scalar(p["medium_groups"]),
                           scalar(p["medium_rows"]), b["row_ptr"], b["col"], b["val"],
                           b["blocks"], b["block_lanes"], b["medium_rows"], b["chunks"], x, y,
                           b["partial"], alpha, beta, row0=row0)]
        if p["long_rows"]:
            events.append(self.run(queue, self._combine,  # a work-group per long row
                                   p["long_rows"] * self.layout.work_group_size,
                                   scalar(p["long_rows"]),
                                   b["long_rows"], b["long_ptr"], b["partial"], y, alpha, beta,
                                   row0=row0))
        return [e for e in events if e is not None]
