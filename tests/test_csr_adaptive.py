"""csr-adaptive: the host partition into row blocks and long-row chunks, the choice of the block
size from local memory, and products at the partition's edges against scipy (``oracle.py``).

The format's ordinary products, transpose products and several right-hand sides are covered by
the suites parametrised over ``clspmv.FORMATS``; this file checks what is particular to it."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import clspmv
from clspmv.formats.base import Layout
from clspmv.formats.csr_adaptive import (
    ALIGN_ENTRIES,
    LANE_STEP_COST,
    LANE_SUMS,
    PASS_COST,
    PRELOAD_PASSES,
    CsrAdaptive,
    block_lanes,
    max_block_entries,
    partition,
)

from oracle import products_match


def row_ptr_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64))])


def assert_partition(lengths, cap: int, wg: int = 8, align: int = 1) -> dict[str, np.ndarray]:
    """Every row in exactly one block or one set of chunks; blocks of at most ``cap`` entries,
    less the first entry's offset from the multiple of ``align`` before it (its skew), and
    ``cap`` rows, each as full as greedy packing makes it (the next row would take it over
    that or ``cap`` rows, or is long, or there is none); exactly the rows that do not fit alone
    chunked, each into consecutive non-empty chunks covering the row, within ``cap`` with their
    skew, all but the first starting at a multiple of ``align``."""
    lengths = np.asarray(lengths, np.int64)
    row_ptr = row_ptr_of(lengths)
    p = partition(row_ptr, cap, wg, align=align)
    assert all(a.dtype == np.int32 for a in p.values())
    blocks = p["blocks"].reshape(-1, 4).astype(np.int64)
    chunks = p["chunks"].reshape(-1, 2).astype(np.int64)
    long_rows, long_ptr = p["long_rows"], p["long_ptr"]
    seen = np.zeros(lengths.size, np.int64)
    first, end = blocks[:, 0], blocks[:, 1]
    np.testing.assert_array_equal(blocks[:, 2], row_ptr[first])
    np.testing.assert_array_equal(blocks[:, 3], row_ptr[end])
    assert (end > first).all()
    assert (end - first <= cap).all()
    lanes = p["block_lanes"]
    assert lanes.size == first.size and ((lanes & (lanes - 1)) == 0).all()
    assert ((lanes >= 1) & (lanes <= wg)).all()
    room = cap - row_ptr[first] % align
    assert (row_ptr[end] - row_ptr[first] <= room).all()
    more = end < lengths.size  # blocks followed by a row: it did not fit
    assert ((row_ptr[end[more] + 1] - row_ptr[first[more]] > room[more])
            | (end[more] + 1 - first[more] > cap)).all()
    np.add.at(seen, np.repeat(first, end - first) + np.arange(int((end - first).sum()))
              - np.repeat(np.cumsum(end - first) - (end - first), end - first), 1)
    np.testing.assert_array_equal(long_rows, np.flatnonzero(lengths + row_ptr[:-1] % align > cap))
    seen[long_rows] += 1
    assert (seen == 1).all(), "a row is in no block or in two"
    assert long_ptr[0] == 0 and long_ptr[-1] == chunks.shape[0]
    for i, row in enumerate(long_rows):
        mine = chunks[long_ptr[i]:long_ptr[i + 1]]
        assert mine[0, 0] == row_ptr[row] and mine[-1, 1] == row_ptr[row + 1]
        np.testing.assert_array_equal(mine[1:, 0], mine[:-1, 1])
        sizes = mine[:, 1] - mine[:, 0]
        assert (sizes > 0).all() and (sizes + mine[:, 0] % align <= cap).all()
        assert (mine[1:, 0] % align == 0).all()
    return p


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 5), st.integers(0, 70)), max_size=300),
       st.integers(2, 40))
def test_partition_invariants(lengths: list[int], cap: int) -> None:
    assert_partition(lengths, cap)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 5), st.integers(0, 70)), max_size=300),
       st.integers(1, 5), st.integers(1, 40))
def test_aligned_partition_invariants(lengths: list[int], log_align: int, extra: int) -> None:
    align = 1 << log_align
    assert_partition(lengths, align + extra, align=align)


def test_aligned_blocks_and_chunks() -> None:
    # blocks of 16 entries loaded from multiples of 8: row 0 (entries 0-2) and row 1 (3-42, skew
    # 3) do not fit together; row 1 is long: 13 entries to entry 16, then 16, then 11; row 2
    # (43-47, skew 3) and row 3 (48-55) fit in 13; row 4 (56-64, skew 0) fits 16 alone
    p = assert_partition([3, 40, 5, 8, 9], 16, align=8)
    assert p["blocks"].reshape(-1, 4).tolist() == [[0, 1, 0, 3], [2, 4, 43, 56], [4, 5, 56, 65]]
    assert p["chunks"].reshape(-1, 2).tolist() == [[3, 16], [16, 32], [32, 43]]
    for bad in (3, 16, 32):
        with pytest.raises(ValueError, match=f"align must be a power of two below block_entries "
                                             f"16, got {bad}"):
            partition(row_ptr_of([1, 2]), 16, 8, align=bad)


@pytest.mark.parametrize("cap", [2, 16, 2048])
def test_partition_edges(cap: int) -> None:
    # no rows, all rows empty (blocks of at most cap rows), a row of exactly cap entries (one
    # block of its own), cap + 1 (two chunks: cap and 1), one huge row among short ones
    assert partition(row_ptr_of([]), cap, 256)["blocks"].size == 0
    p = assert_partition(np.zeros(5 * cap + 3, np.int64), cap)
    assert p["blocks"].size // 4 == -(-(5 * cap + 3) // cap) and p["chunks"].size == 0
    p = assert_partition([1, cap, 1], cap)
    assert p["long_rows"].size == 0 and [1, 2] in p["blocks"].reshape(-1, 4)[:, :2].tolist()
    p = assert_partition([1, cap + 1, 1], cap)
    np.testing.assert_array_equal(np.diff(p["chunks"].reshape(-1, 2)).ravel(), [cap, 1])
    huge = np.full(1000, 1)
    huge[517] = 100_000
    p = assert_partition(huge, cap)
    assert p["long_rows"].tolist() == [517] and p["chunks"].size // 2 == -(-100_000 // cap)


def test_blocks_packed_greedily() -> None:
    # rows of 3 entries in blocks of 7: two a block; a row of 6 takes the row of 1 and the two
    # empty rows after it (7 entries); the row of 8 is chunked; the last row starts a block
    p = assert_partition([3, 3, 3, 3, 6, 1, 0, 0, 8, 2], 7)
    assert p["blocks"].reshape(-1, 4)[:, :2].tolist() == [[0, 2], [2, 4], [4, 8], [9, 10]]
    assert p["long_rows"].tolist() == [8]


def lanes_by_brute_force(block_lengths: list[int], wg: int) -> int:
    """The cost model of ``block_lanes`` written out row by row."""
    costs = {}
    lanes, steps = 1, 0
    while lanes <= wg:
        slots = wg // lanes
        passes = [block_lengths[i:i + slots] for i in range(0, len(block_lengths), slots)]
        costs[lanes] = sum(-(-max(p) // lanes) + LANE_STEP_COST * steps + PASS_COST
                           for p in passes)
        lanes, steps = 2 * lanes, steps + 1
    return min(costs, key=lambda k: (costs[k], k))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(st.integers(0, 3), st.integers(0, 600)), min_size=1,
                         max_size=80), min_size=1, max_size=6),
       st.sampled_from([4, 32, 256]))
def test_block_lanes_minimise_the_cost_model(blocks: list[list[int]], wg: int) -> None:
    lengths = np.array([n for b in blocks for n in b], np.int64)
    sizes = np.array([len(b) for b in blocks])
    first = np.cumsum(sizes) - sizes
    got = block_lanes(lengths, first, first + sizes, wg)
    assert got.tolist() == [lanes_by_brute_force(b, wg) for b in blocks]


def test_block_lanes_follow_the_rows() -> None:
    # 256 rows of one entry: one work-item each; a row of 1000 with three short rows: 64 work-items
    # a row, so the four go in one pass (16 local adds + 6 tree steps beat 1000 serial adds)
    lengths = np.array([1] * 256 + [1000] + [2] * 3, np.int64)
    got = block_lanes(lengths, np.array([0, 256]), np.array([256, 260]), 256)
    assert got.tolist() == [1, 64]


def test_one_lane_per_row_unless_lockstep() -> None:
    """Devices that run work-items one after another (CPUs) sum each row with one work-item;
    the layout says which (SIMD width of a warp or more: lockstep)."""
    lengths = np.array([1] * 256 + [1000] + [2] * 3, np.int64)
    first, end = np.array([0, 256]), np.array([256, 260])
    assert block_lanes(lengths, first, end, 256, lockstep=False).tolist() == [1, 1]
    assert block_lanes(lengths, first, end, 256, lockstep=True).tolist() == [1, 64]
    assert Layout(32, 128, 132, 48 << 10).lockstep and not Layout(8, 256, 2, 48 << 10).lockstep
    p = partition(row_ptr_of(lengths), 1024, 256, lockstep=False)
    assert (p["block_lanes"] == 1).all()


def test_lanes_of_a_lockstep_layout_on_this_device(dtype: np.dtype, device) -> None:
    """The work-items per row a GPU layout chooses (up to the whole work-group), run on this
    device: the same products whether or not the device runs them in lockstep."""
    wide = dataclasses.replace(device, simd_width=32)
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 6, 3000)
    lengths[rng.choice(3000, 40, replace=False)] = rng.integers(20, 600, 40)
    rows = np.repeat(np.arange(lengths.size), lengths)
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, rng.integers(0, 5000, rows.size))),
                      shape=(3000, 5000))
    A.sum_duplicates()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=wide, dtype=dtype,
                                       work_group_size=64, block_entries=256)
    assert M._fmt.layout.lockstep
    assert partition(A.indptr, 256, 64)["block_lanes"].max() >= 16  # lanes > 1 are run
    products_match(M, A, dtype)


@pytest.mark.parametrize("wg", [32, 64, 128, 256])
def test_a_lockstep_layout_chooses_the_lanes_on_the_device(wg: int, device) -> None:
    """In a GPU layout the conversion leaves the blocks' lanes out and the upload has the device
    choose them (csr_adaptive_lanes): the same lanes as the host's cost model, block by block
    (short rows, a few long ones, empty rows and runs of them, rows longer than a block)."""
    wide = dataclasses.replace(device, simd_width=32)
    rng = np.random.default_rng(wg)
    lengths = rng.integers(0, 6, 5000)
    lengths[rng.choice(5000, 60, replace=False)] = rng.integers(20, 900, 60)
    lengths[rng.choice(5000, 300, replace=False)] = 0
    lengths[1000:1300] = 0  # blocks of up to cap rows: passes of every level end at their end
    lengths[2000:2150] = 1
    rows = np.repeat(np.arange(lengths.size), lengths)
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, rng.integers(0, 7000, rows.size))),
                      shape=(5000, 7000))
    A.sum_duplicates()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=wide,
                                       dtype=np.float64, work_group_size=wg, block_entries=128)
    fmt = M._fmt
    assert fmt.params["lanes_on_device"] == 1 and "block_lanes" not in fmt._own_specs
    cap = fmt.params["block_entries"]
    host = partition(A.indptr, cap, wg, lockstep=True, align=fmt.params["align"])
    assert fmt.params["blocks"] == host["blocks"].size // 4 > 100
    got = np.empty(fmt.params["blocks"], np.int32)
    cl.enqueue_copy(wide.queue, got, fmt.buffers["block_lanes"])
    assert np.array_equal(got, host["block_lanes"]), np.flatnonzero(got != host["block_lanes"])
    assert got.max() > 1  # more than one lane per row somewhere
    products_match(M, A, np.float64)
    flat = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device,
                                          dtype=np.float64)
    assert flat._fmt.params["lanes_on_device"] == 0  # a CPU layout: one lane, on the host


def test_partition_refuses_tiny_blocks() -> None:
    with pytest.raises(ValueError, match="block_entries must be at least 2, got 1"):
        partition(row_ptr_of([1, 2]), 1, 256)


def test_block_entries_from_registers_and_local_memory() -> None:
    """CAP = m * WG: m entries of value + index within MAX_LOAD_BYTES (8 in float64, 16 in
    float32), halved while the products plus the reduction's WG values, 8 bytes each (float64
    sums, also of dtype="mixed"), would take more than half the local memory."""
    assert max_block_entries(Layout(32, 256, 132, 48 << 10), 8) == 2048  # 18 KiB <= 24 KiB
    assert max_block_entries(Layout(32, 128, 132, 48 << 10), 8) == 1024
    assert max_block_entries(Layout(32, 128, 132, 48 << 10), 4) == 2048  # 16 float32 entries
    assert max_block_entries(Layout(32, 256, 132, 48 << 10), 4) == 2048  # 16 would need 34 KiB
    assert max_block_entries(Layout(32, 1024, 132, 48 << 10), 8) == 2048  # (2 + 1) 8 KiB
    assert max_block_entries(Layout(32, 256, 132, 32 << 10), 8) == 1024  # m = 4
    assert max_block_entries(Layout(32, 64, 1, 1 << 10), 8) == 64  # never below one group


def test_gpu_work_group(device) -> None:
    M = clspmv.DeviceMatrix.from_scipy(sp.eye(40, format="csr"), format="csr-adaptive",
                                       device=device)
    expected = 128 if device.type == "gpu" else min(256, device.max_work_group_size)
    assert M.work_group_size == expected
    M = clspmv.DeviceMatrix.from_scipy(sp.eye(40, format="csr"), format="csr-adaptive",
                                       device=device, work_group_size=64)
    assert M.work_group_size == 64


def test_block_entries_checked() -> None:
    layout = Layout(32, 64, 1, 32 << 10)
    csr = sp.csr_matrix(np.eye(4))
    assert CsrAdaptive.from_csr(csr, layout, block_entries=2).params["block_entries"] == 2
    limit = max_block_entries(layout, 8)
    for bad in (1, limit + 1):
        with pytest.raises(ValueError, match=f"block_entries must be between 2 and {limit}"):
            CsrAdaptive.from_csr(csr, layout, block_entries=bad)


def edge_matrix(cap: int) -> sp.csr_matrix:
    """Short rows around rows of exactly cap, cap + 1 and 3 cap + 5 entries, and empty rows."""
    rng = np.random.default_rng(cap)
    lengths = rng.integers(0, 6, 60)
    lengths[[3, 10, 11, 40]] = [cap, cap + 1, 3 * cap + 5, 0]
    cols = 4 * cap
    rows = np.repeat(np.arange(lengths.size), lengths)
    pos = np.arange(rows.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, pos * 3 % cols)),
                         shape=(lengths.size, cols))


@pytest.mark.parametrize("lockstep", [False, True])
@pytest.mark.parametrize("block_entries", [None, 16, 256])
def test_rows_at_the_block_size(block_entries: int | None, lockstep: bool, dtype: np.dtype,
                                device) -> None:
    """Rows of exactly a block, one entry more and several blocks; ``lockstep``: as a GPU's
    layout (a SIMD width of 32) on this device, whose blocks of 256 entries or more are aligned."""
    if lockstep:
        device = dataclasses.replace(device, simd_width=32)
    cap = block_entries or CsrAdaptive.from_csr(
        sp.csr_matrix((1, 1), dtype=dtype), CsrAdaptive.layout_for(device)).params["block_entries"]
    A = edge_matrix(cap)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=cap)
    # cap + 1 and 3 cap + 5 (2 and 4 chunks); with aligned blocks (GPUs) also the row of cap
    # entries unless it starts on a multiple of the alignment (then 2 chunks), and the long
    # rows' first chunks shorter by their offsets (one chunk more where that spills over)
    align = M.params["align"]
    lengths, starts = np.diff(A.indptr), A.indptr[:-1]
    long = lengths + starts % align > cap
    step = cap - cap % align
    assert M.params["long_row_count"] == long.sum() >= 2
    assert M.params["chunks"] == (-(-(lengths + starts % align)[long] // step)).sum()
    assert align == (32 if M._fmt.layout.lockstep and cap >= 256 else 1)
    if align == 1:
        assert M.params["long_row_count"] == 2 and M.params["chunks"] == 2 + 4
    products_match(M, A, dtype)


def test_one_huge_row_among_short_rows(dtype: np.dtype, device) -> None:
    rng = np.random.default_rng(5)
    n = 100_000
    rows = np.concatenate([np.full(n, 700), rng.integers(0, 2000, 6000)])
    cols = np.concatenate([np.arange(n), rng.integers(0, n, 6000)])
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(2000, n))
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype)
    assert M.params["long_row_count"] == 1
    products_match(M, A, dtype)


def test_long_rows_of_more_chunks_than_work_items(dtype: np.dtype, device) -> None:
    """The combine kernel's work-group walks a row's chunk sums in a strided loop: rows of more
    chunks than work-items (two and a half times over) and of fewer, side by side."""
    rng = np.random.default_rng(9)
    wg = CsrAdaptive.layout_for(device).work_group_size
    lengths = np.array([3, 16 * (2 * wg + wg // 2) + 7, 0, 16 * 5, 2, 16 * wg + 1])
    rows = np.repeat(np.arange(lengths.size), lengths)
    cols = rng.integers(0, 50_000, rows.size)
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(lengths.size, 50_000))
    A.sum_duplicates()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=16)
    assert M.params["long_row_count"] == 3
    assert M.params["chunks"] > 2 * wg
    products_match(M, A, dtype)


@pytest.mark.parametrize("work_group_size", [None, 16, 64])
def test_rows_of_every_length_in_one_block(work_group_size: int | None, dtype: np.dtype,
                                            device) -> None:
    """Greedy blocks mix rows of up to a block with short and empty rows (the work-items per row
    chosen for the whole block), long rows between them in chunks; several work-group sizes."""
    rng = np.random.default_rng(13)
    lengths = rng.integers(0, 4, 400)
    lengths[rng.choice(400, 37, replace=False)] = rng.integers(5, 17, 37)
    lengths[[7, 200]] = [16, 40]  # exactly a block; long (chunks)
    rows = np.repeat(np.arange(lengths.size), lengths)
    cols = rng.integers(0, 3000, rows.size)
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(400, 3000))
    A.sum_duplicates()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=16, work_group_size=work_group_size)
    assert M.params["long_row_count"] == 1
    assert M.params["blocks"] < A.nnz // 12  # blocks more than 3/4 full on average
    products_match(M, A, dtype)


@pytest.mark.parametrize("lockstep", [False, True])
def test_gpu_layouts_align_blocks_and_preload_row_pointers(lockstep: bool, dtype: np.dtype,
                                                           device) -> None:
    """On a layout running work-items in lockstep (a GPU's, or this device as one) the kernel is
    built with ALIGN_ENTRIES and PRELOAD_PASSES; otherwise with 1 and 1, the plain kernel; with
    LANE_SUMS on both."""
    if lockstep:
        device = dataclasses.replace(device, simd_width=32)
    A = edge_matrix(256)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=256)
    on_gpu = M._fmt.layout.lockstep
    prg = M._fmt._spmv.get_info(cl.kernel_info.PROGRAM)
    options = prg.get_build_info(M.device.cl_device, cl.program_build_info.OPTIONS).split()
    assert f"-DALIGN={ALIGN_ENTRIES if on_gpu else 1}" in options
    assert f"-DPRELOAD={PRELOAD_PASSES if on_gpu else 1}" in options
    assert f"-DLANE_SUMS={LANE_SUMS}" in options
    assert M.params["align"] == (ALIGN_ENTRIES if on_gpu else 1)
    products_match(M, A, dtype)


@pytest.mark.parametrize("shape", [(0, 0), (0, 7), (7, 0), (5000, 300)])
def test_no_entries(shape: tuple[int, int], dtype: np.dtype, device) -> None:
    A = sp.csr_matrix(shape)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype)
    assert M.params["chunks"] == 0
    products_match(M, A, dtype)


def test_block_lanes_need_a_power_of_two_work_group() -> None:
    one = np.array([0, 1])
    with pytest.raises(ValueError, match="work-group size must be a power of two, got 96"):
        block_lanes(np.array([3, 4]), one[:1], one[1:], 96)
