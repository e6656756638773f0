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
  ones; on CPUs, which run a work-group's work-items one after another, always one). On GPUs
  the work-groups have :data:`GPU_WORK_GROUP` work-items.
* **Long rows** (more than ``CAP`` entries) are cut into chunks of ``CAP`` entries, one
  work-group each, which write their sums to a small buffer; a second, small kernel adds each
  row's chunks in order and stores ``alpha * sum + beta * y``. There are no atomic adds: every
  ``y`` entry is written once and the result is the same on every run.

The partition packs rows greedily: a block starts at a row and takes the following rows while
they keep it within ``CAP`` entries and ``CAP`` rows (so blocks are nearly full whatever the
row lengths, and a row of up to ``CAP`` entries shares its block with its neighbours); a row
longer than ``CAP`` ends the block before it and is cut into chunks. On GPUs the blocks' loads
start at multiples of :data:`ALIGN_ENTRIES` entries, and a block's room is ``CAP`` less its
first entry's offset from the multiple before it. The blocks are found by a walk, one step
(a binary search for the block's end) per block: :func:`block_starts`. Long rows are cut into
chunks by :func:`~clspmv.formats.csr_chunks.row_chunks`, which the other CSR kernels' long rows
share (:mod:`~clspmv.formats.csr_chunks`).

``split_rows=True`` cuts the entries into tiles of ``CAP`` instead, rows and all
(:mod:`.adaptive_split`): every tile full, the rows crossing a tile's ends summed in pieces and
added by a second kernel. On the H200 (``reports/2026-11-26-adaptive-split``) that was 2-5 %
faster on power-law, graph and random matrices and 1-6 % slower on dense-row, stencil and block
matrices in float32 (the second kernel's launch and pieces); it is off by default.

Transpose products and several right-hand sides run the ``csr`` kernels (``csr_spmv_t``,
``csr_matmat``) on the same arrays, with ``threads_per_row`` from the mean row length as in
``csr-vector`` (at most the work-group size).
"""

from __future__ import annotations

import bisect
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from ..device import Device
from .adaptive_split import split_partition
from .base import INDEX_DTYPE, Layout, scalar
from .checks import check_int
from .conversion import check_flag
from .csr import VECTOR_WIDTHS, CsrFamily, mean_row_threads, threads_for_mean_length
from .csr_chunks import (  # the block geometry, shared with the chunks of long rows
    ALIGN_ENTRIES,
    MAX_LOAD_BYTES,
    MIN_ALIGNED_BLOCK,
    SUM_BYTES,
    LongRowChunks,
    align_of,
    interleave,
    max_block_entries,
    row_chunks,
)
from .csr_store import CsrStore

if TYPE_CHECKING:
    from ..model.features import Features

GPU_WORK_GROUP = 128
"""Work-group size of csr-adaptive on GPUs: on the H200, groups of 128 beat 256 by 5-10 % on
power-law matrices and matched it elsewhere; 512 was 10-30 % slower. The ``adaptive``
experiment of ``clspmv bench --sweep`` reproduces the comparison (work-groups of 32 to 512, each
at two block sizes; its findings give the best configuration against these defaults)."""


PRELOAD_PASSES = 4
"""On devices running work-items in lockstep (GPUs), each work-item of a row block loads the row
pointers of its rows in the block's first 4 passes (``WG / lanes`` rows a pass) before the
barrier, at once, instead of one load at the start of each pass (``-DPRELOAD``). On the H200
(``reports/2026-11-27-h200-long-short/passes3.jsonl``, 14 matrices, together with no barrier
between passes summed by warp shuffles) 0.983x the time in float64 (0.965-1.012) and 0.956x in
float32 (0.848-0.993); 8 passes' pointers were slower in float32 (registers), the barrier alone
about as fast; on an H100 0.984x and 0.963x. On CPUs, which run a work-group's work-items one
after another, one pass's pointers (``-DPRELOAD=1``): on the 2-core Zen 5 (cpu suite, against
the kernel before, whose passes sat in one loop) that was 0.80x the time in float64 and 0.94x in
float32 with PoCL 3.1, 0.88x and 0.99x with PoCL 3.0; 4 passes' 0.97x and 1.02x, 0.91x and
1.02x."""


LANE_SUMS = 4
"""Running sums of each work-item summing a row of a block from local memory (``-DLANE_SUMS``),
added in a fixed order at the end: one sum waits for each local load before the next; four keep
four in flight. On the H200 (``reports/2026-11-27-h200-long-short/sums.jsonl``, against one sum,
30 alternating rounds): the irregular suite, which this was found on, 0.988x the time in float64
(0.971-1.024) and 0.994x in float32 (0.988-1.008); the heldout and offsuite suites, 24 matrices
it was not, 0.985x (0.913-1.036) and 0.959x (0.797-1.024); two sums or eight were slower than
four. On the 2-core Zen 5 (cpu suite): 0.927x float64 and 0.973x float32 with PoCL 3.1, 0.940x
and 0.986x with PoCL 3.0."""


LANE_STEP_COST = 2
"""Cost of one step of a tree reduction (a barrier and a local add), in serial local adds."""
PASS_COST = 16
"""Cost of one pass over rows (row pointers from global memory, the store of y), in serial local
adds. On the H200 (``reports/2026-11-26-h200-partition/passcost-probe.txt``, 16 matrices of
12-41 M entries in both value types) 16 against the earlier 4 made 13 products 0.2-1.4 % faster
and none more than 0.1 % slower; 64 was no better, and 1000 (the fewest passes, one work-item per
row wherever the rows fit one pass) up to 16 % slower."""


def block_lanes(lengths: np.ndarray, first: np.ndarray, end: np.ndarray, wg: int,
                lockstep: bool = True) -> np.ndarray:
    """Work-items per row for each row block (rows ``first[b] .. end[b]-1``), the power of two
    ``L <= wg`` that minimises the block's estimated summing time; 1 everywhere unless the
    device runs work-items in ``lockstep`` (:attr:`Layout.lockstep`).

    A CPU (PoCL) runs a work-group's work-items one after another, so a pass takes the sum of
    the work-items' adds, not the longest, and every tree step is one more loop over the
    work-group: one work-item per row does the fewest. On the 2-core CPU
    (``reports/2026-11-26-h200-partition/cpu-passcost-pocl31.txt``, ``-pocl30.txt``) it made
    the products up to 3.3x (PoCL 3.1) and 4.5x (PoCL 3.0) faster than the lanes of the model
    below, and at most 1.7 % slower (two of 24 products).

    The work-group sums ``wg / L`` rows at a time (a pass); a pass lasts as long as its longest
    row, ``ceil(longest / L)`` local adds, plus ``log2 L`` tree steps when ``L > 1``
    (:data:`LANE_STEP_COST` each) and :data:`PASS_COST`. One long row among short ones thus gets
    the block more lanes, many short rows one lane each: the number of work-items per row is
    chosen per block from its own row lengths (vectorised over blocks, one pass per candidate).
    """
    counts = end - first
    nb = counts.size
    if nb == 0 or not lockstep:
        return np.ones(nb, np.int64)
    if wg & (wg - 1):
        raise ValueError(f"work-group size must be a power of two, got {wg}")
    # passes of k = wg / lanes rows, from k = 1 (lanes = wg) up: the longest row of each pass of
    # 2k rows is the larger of its two passes of k (each block's passes start at its first row),
    # so every candidate costs half the one before (about two passes over the rows in all, not
    # one per candidate: 9 on GPUs)
    pass_block = np.repeat(np.arange(nb, dtype=np.int64), counts)
    pass_index = np.arange(pass_block.size, dtype=np.int64) - np.repeat(
        np.cumsum(counts) - counts, counts)
    longest = lengths[np.repeat(first, counts) + pass_index]
    best_cost = np.full(nb, np.inf)
    best = np.ones(nb, np.int64)
    k = 1
    while True:
        lanes = wg // k
        cost = -(-longest // lanes) + LANE_STEP_COST * (lanes.bit_length() - 1) + PASS_COST
        total = np.bincount(pass_block, weights=cost, minlength=nb)
        better = total <= best_cost  # ties to the fewer lanes, as k grows
        best_cost[better], best[better] = total[better], lanes
        if k == wg:
            return best
        starts = np.flatnonzero((pass_index & 1) == 0)
        longest = np.maximum.reduceat(longest, starts)
        pass_block, pass_index = pass_block[starts], pass_index[starts] >> 1
        k *= 2


def block_starts(row_ptr: np.ndarray, cap: int, align: int = 1) -> np.ndarray:
    """The first row of every greedy block of rows (see the module docstring), then the number
    of rows: each block takes rows while they keep it within ``cap`` entries, less its first
    entry's offset from the multiple of ``align`` (a power of two, as :func:`partition` checks)
    before it (:data:`ALIGN_ENTRIES`), and ``cap`` rows; a row that does not fit alone is a
    block of its own.

    On the H200 (``reports/2026-11-26-h200-partition/greedy-probe.txt``, 20 matrices of 12-78 M
    entries in both value types) these blocks beat the earlier windows (blocks cut at every
    multiple of 3/4 ``cap`` entries and around every row of more than ``cap / 4``, which had a
    block of its own: 40-45 % full on power-law matrices) by 1-9 % in float64 (27-point
    stencil 9 %, R-MAT 1.4-3.5 %) and were within 1.7 % in float32, where they lost most."""
    n = row_ptr.size - 1
    # a walk, one step per block: where a block starts depends on where the previous one ended.
    # The end of the block starting at row r: the last row end within its room (the end at most
    # r's first entry rounded down to a multiple of align, plus cap), at least one row (a long
    # row alone), at most cap rows. It is searched for at the blocks' starts only, by the
    # standard library's bisect among the cap row ends after r on a memoryview (Python ints, no
    # numpy call per step), in a loop of the fewest Python operations: about 0.5 us a block on
    # a 2-core Xeon (0.8 before), 21-26 ms for the 45 k blocks of a 45 M-entry GPU layout.
    # Exact ways in numpy were slower: on rows of equal length the walks from different rows
    # never meet, so every row (or multiple of align) is a possible start and needs a search of
    # its own (a searchsorted of the 1.4 M multiples of 32 of that layout alone took 30 ms).
    ends = memoryview(np.ascontiguousarray(row_ptr))
    keep = -align  # x & keep: x rounded down to a multiple of align (a power of two)
    search = bisect.bisect_right
    starts: list[int] = []
    append = starts.append
    r = 0
    tail = n - cap  # from there a block's cap rows reach past the last row
    while r < n:
        append(r)
        end = search(ends, (ends[r] & keep) + cap, r + 1, r + cap + 1 if r < tail else n + 1)
        r = end - 1 if end > r + 1 else r + 1
    append(n)
    return np.asarray(starts, np.int64)


def partition(row_ptr: np.ndarray, cap: int, wg: int, lockstep: bool = True, align: int = 1,
              lanes: bool = True) -> dict[str, np.ndarray]:
    """Row blocks and long-row chunks of the rows of ``row_ptr`` (see the module docstring),
    each one's entries within ``cap`` less its first entry's offset from the multiple of
    ``align`` before it, which the kernel loads from (:data:`ALIGN_ENTRIES`; 1: no offsets).

    Returns int32 arrays: ``blocks`` (first row, end row, first entry and end entry of each
    block, interleaved: the kernel reads a block's entry range without its row pointers),
    ``block_lanes`` (work-items per row of each block for work-groups of ``wg`` on a device
    running them in ``lockstep`` or not, see :func:`block_lanes`),
    ``chunks`` (first entry and end entry of each chunk, interleaved, grouped by long row in
    row order), ``long_rows`` (the rows longer than ``cap``) and ``long_ptr`` (chunks
    ``long_ptr[l] .. long_ptr[l+1]-1`` belong to ``long_rows[l]``). ``lanes=False`` leaves
    ``block_lanes`` out (the device computes them at the upload, :class:`CsrAdaptive`).
    """
    if cap < 2:
        raise ValueError(f"block_entries must be at least 2, got {cap}")
    if align & (align - 1) or not 1 <= align < cap:
        raise ValueError(f"align must be a power of two below block_entries {cap}, got {align}")
    row_ptr = np.asarray(row_ptr)
    bounds = block_starts(row_ptr, cap, align)
    first, end = bounds[:-1], bounds[1:]
    begin = row_ptr[first].astype(np.int64)  # the pointers at the blocks alone, not every row's
    short = row_ptr[first + 1] - begin + begin % align <= cap
    long_rows = first[~short]
    chunk_start, chunk_end, long_ptr = row_chunks(begin[~short], row_ptr[long_rows + 1],
                                                  cap, align)
    first, end, begin = first[short], end[short], begin[short]
    parts = {"blocks": interleave(first, end, begin, row_ptr[end]),
             "chunks": interleave(chunk_start, chunk_end),
             "long_rows": long_rows.astype(INDEX_DTYPE),
             "long_ptr": long_ptr.astype(INDEX_DTYPE)}
    if lanes:
        parts["block_lanes"] = block_lanes(np.diff(row_ptr), first, end, wg,
                                           lockstep).astype(INDEX_DTYPE)
    return parts


class CsrAdaptive(CsrFamily):
    """CSR with row blocks of at most ``block_entries`` entries per work-group and long rows
    split across work-groups (CSR-Adaptive)."""

    name = "csr-adaptive"
    kernel_options = ()  # the partition depends on the work-group size: convert again instead
    gpu_work_group = GPU_WORK_GROUP
    adaptive_file = "csr_adaptive.cl"

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        return threads_for_mean_length(f.mean_row, VECTOR_WIDTHS)

    @classmethod
    def _model_layout(cls, layout: Layout) -> Layout:
        """``layout`` with the work-group the format takes there by default: its
        :data:`GPU_WORK_GROUP` where work-items run in lockstep."""
        return replace(layout, work_group_size=GPU_WORK_GROUP) if layout.lockstep else layout

    @classmethod
    def launches(cls, f: Features, layout: Layout) -> int:
        """The blocks' kernel, and the long rows' second where a row outgrows a block."""
        return 1 + (f.max_row > max_block_entries(cls._model_layout(layout), f.itemsize))

    @classmethod
    def work_items(cls, f: Features, layout: Layout) -> float:
        """Row blocks times the work-group: greedy blocks end at ``CAP`` entries, less about
        half a row of mean length and, aligned, half the alignment, or at ``CAP`` rows,
        whichever comes first."""
        layout = cls._model_layout(layout)
        cap = max_block_entries(layout, f.itemsize)
        half_row = min(f.entries / max(f.rows, 1), cap) / 2
        half_skew = (align_of(layout, cap) - 1) / 2  # the room an aligned block loses
        return max(f.entries / (cap - half_row - half_skew), f.rows / cap) \
            * layout.work_group_size

    @classmethod
    def from_store(cls, store: CsrStore, layout: Layout, block_entries: int | None = None,
                   split_rows: bool | None = None) -> CsrAdaptive:
        """``split_rows``: tiles of ``block_entries`` entries whatever the rows
        (:mod:`.adaptive_split`) instead of greedy blocks of whole rows; True or False, or None
        for off."""
        limit = max_block_entries(layout, store.dtype.itemsize)
        cap = limit if block_entries is None else check_int("block_entries", block_entries)
        if not 2 <= cap <= limit:
            raise ValueError(
                f"block_entries must be between 2 and {limit} (the products of a row block must "
                f"fit half the {layout.local_memory} bytes of local memory with work-groups of "
                f"{layout.work_group_size}), got {block_entries}")
        split = check_flag("split_rows", split_rows, False)
        align = 1 if split else align_of(layout, cap)  # tiles start at multiples of cap
        if split:
            parts = split_partition(store.row_ptr, cap)
            counts = parts.pop("block_counts")
            firsts = np.cumsum(counts) - counts
            parts["block_lanes"] = block_lanes(parts.pop("clipped"), firsts, firsts + counts,
                                               layout.work_group_size,
                                               layout.lockstep).astype(INDEX_DTYPE)
            pieces = parts.pop("pieces")
            counts_of = {"blocks": parts["blocks"].size // 6,
                         "chunks": parts["chunks"].size // 3,
                         "split": parts["split_rows"].size}
        else:
            # in lockstep (GPU) layouts the lanes of every block are chosen by the device at the
            # upload, from the row pointers it holds: on the host that walk over every row was
            # most of the conversion (2.1 s of an H100 layout's 45 M entries)
            parts = partition(store.row_ptr, cap, layout.work_group_size, layout.lockstep, align,
                              lanes=not layout.lockstep)
            pieces = parts["chunks"].size // 2
            counts_of = {"blocks": parts["blocks"].size // 4, "chunks": pieces, "split": 0}
        fmt = cls.on_store(store, layout, parts,
                           threads_per_row=min(mean_row_threads(store.nnz, store.shape[0]),
                                               layout.work_group_size),
                           block_entries=cap, long_row_count=parts["long_rows"].size, pieces=pieces,
                           split_rows=int(split), align=align,
                           lanes_on_device=int("block_lanes" not in parts), **counts_of)
        fmt.own_nbytes += fmt.partial_bytes()  # in the value type until the upload says otherwise
        if fmt.params["lanes_on_device"]:
            fmt.own_nbytes += fmt.lanes_bytes()
        return fmt

    def lanes_bytes(self) -> int:
        """Bytes of the device buffer of the blocks' lanes chosen at the upload (at least one
        index)."""
        return max(1, self.params["blocks"]) * np.dtype(INDEX_DTYPE).itemsize

    def partial_bytes(self) -> int:
        """Bytes of the device buffer receiving the chunks' sums (at least one value of the sums'
        type; before the upload the value type's)."""
        return max(1, self.params["pieces"]) * self.accumulate.itemsize

    def upload(self, device: Device) -> None:
        super().upload(device)
        # from_csr counted the partial sums in the value type; "mixed" sums them in float64
        self.own_nbytes += max(1, self.params["pieces"]) * (self.accumulate.itemsize
                                                         - self.dtype.itemsize)
        self.scratch_buffer("partial", self.partial_bytes())
        if self.params["lanes_on_device"]:
            b = self.buffers
            b["block_lanes"] = cl.Buffer(device.context, cl.mem_flags.READ_WRITE,
                                         self.lanes_bytes())
            kern = self.kernel(self.adaptive_file, "csr_adaptive_lanes",
                               **self.adaptive_defines())
            blocks = self.params["blocks"]
            self.run(device.queue, kern, blocks, scalar(blocks), b["row_ptr"], b["blocks"],
                     b["block_lanes"])
            device.queue.finish()

    def adaptive_defines(self) -> dict[str, object]:
        """The build definitions of the ``csr_adaptive.cl`` kernels (one program: the lanes'
        cost model's constants too)."""
        defines: dict[str, object] = {
            "CAP": self.params["block_entries"], "ALIGN": self.params["align"],
            "PRELOAD": PRELOAD_PASSES if self.layout.lockstep else 1, "LANE_SUMS": LANE_SUMS,
            "LANE_STEP_COST": LANE_STEP_COST, "PASS_COST": PASS_COST}
        if self.params["split_rows"]:
            defines["SPLIT_ROWS"] = 1
        return defines

    def prepare_kernels(self) -> None:
        defines = self.adaptive_defines()
        if self.params["split_rows"]:
            self._combine_short = self.kernel(self.adaptive_file, "csr_adaptive_combine_short",
                                              **defines)
        self._spmv = self.kernel(self.adaptive_file, "csr_adaptive_spmv", **defines)
        self._combine = self.kernel(self.adaptive_file, "csr_adaptive_combine", **defines)

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        p, b = self.params, self.buffers
        groups = p["blocks"] + p["chunks"]
        events = [self.run(queue, self._spmv, groups * self.layout.work_group_size,
                           scalar(p["blocks"]), b["row_ptr"], b["col"], b["val"], b["blocks"],
                           b["block_lanes"], b["chunks"], x, y, b["partial"], alpha, beta,
                           row0=row0)]
        if p["long_row_count"]:
            events.append(self.run(queue, self._combine,  # a work-group per long row
                                   p["long_row_count"] * self.layout.work_group_size,
                                   scalar(p["long_row_count"]),
                                   b["long_rows"], b["long_ptr"], b["partial"], y, alpha, beta,
                                   row0=row0))
        if p["split"]:
            events.append(self.run(queue, self._combine_short, p["split"],
                                   scalar(p["split"]), b["split_rows"], b["split_ptr"],
                                   b["partial"], y, alpha, beta, row0=row0))
        return [e for e in events if e is not None]


LongRowChunks.tail_format = CsrAdaptive

__all__ = ["ALIGN_ENTRIES", "GPU_WORK_GROUP", "LANE_SUMS", "MAX_LOAD_BYTES", "MIN_ALIGNED_BLOCK",
           "PRELOAD_PASSES", "SUM_BYTES", "CsrAdaptive", "align_of", "block_lanes", "block_starts",
           "max_block_entries", "partition"]
