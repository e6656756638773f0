"""csr-blocks: the row-block partition (host, numpy) and products over chosen partitions.

The products of the default partition are covered by every parametrised suite (the format is in
``clspmv.FORMATS``); here: the partition's invariants, edge shapes, explicit block counts and
every ``unroll``, against scipy through the oracle.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import clspmv
from clspmv.formats.base import UNROLL_FACTORS
from clspmv.formats.csr_blocks import (
    BLOCKS_PER_UNIT,
    DEFAULT_UNROLL,
    MIN_BLOCK_ENTRIES,
    CsrBlocks,
    block_count,
    row_blocks,
)
from clspmv.formats.layout import Layout

from oracle import assert_matches


def check_partition(row_ptr: np.ndarray, blocks: int) -> np.ndarray:
    """The partition of ``row_ptr`` into ``blocks``, after asserting its invariants: every row in
    exactly one block (boundaries from 0 to the row count, never decreasing) and each block at
    most its share of the entries plus one row."""
    bounds = row_blocks(row_ptr, blocks)
    rows = row_ptr.size - 1
    assert bounds.dtype == np.int32 and bounds.size == blocks + 1
    assert bounds[0] == 0 and bounds[-1] == rows
    assert np.all(np.diff(bounds) >= 0)
    owner = np.repeat(np.arange(blocks), np.diff(bounds))
    assert owner.size == rows  # each row exactly once, blocks in row order
    entries = np.diff(row_ptr[bounds].astype(np.int64))
    longest = int(np.diff(row_ptr).max(initial=0))
    assert entries.sum() == row_ptr[-1]
    assert np.all(entries <= -(-int(row_ptr[-1]) // max(blocks, 1)) + longest)
    return bounds


@given(lengths=st.lists(st.integers(0, 60), min_size=1, max_size=300), data=st.data())
def test_partition_invariants(lengths: list[int], data: st.DataObject) -> None:
    row_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    blocks = data.draw(st.integers(1, len(lengths)))
    check_partition(row_ptr, blocks)


def test_partition_balances_even_rows() -> None:
    row_ptr = np.arange(0, 1000 * 7 + 1, 7, dtype=np.int32)  # 1000 rows of 7 entries
    entries = np.diff(row_ptr[check_partition(row_ptr, 16)])
    assert entries.max() - entries.min() <= 7  # shares differ by at most one row


def test_partition_one_row_holds_all() -> None:
    lengths = np.zeros(50, np.int32)
    lengths[17] = 5000
    row_ptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    bounds = check_partition(row_ptr, 8)
    entries = np.diff(row_ptr[bounds])
    assert sorted(entries)[-1] == 5000 and np.count_nonzero(entries) == 1


def test_partition_no_rows() -> None:
    assert row_blocks(np.zeros(1, np.int32), 0).tolist() == [0]


@pytest.mark.parametrize("blocks", [0, 4])
def test_partition_refuses_bad_counts(blocks: int) -> None:
    with pytest.raises(ValueError, match="blocks must be between 1 and the 3 rows, got"):
        row_blocks(np.array([0, 1, 2, 3], np.int32), blocks)


def test_block_count() -> None:
    big = 10**8
    assert block_count(10**6, big, 2) == 2 * BLOCKS_PER_UNIT
    assert block_count(10**6, 3 * MIN_BLOCK_ENTRIES, 2) == 3  # small: fewer, fuller blocks
    assert block_count(10, 0, 2) == 1  # empty rows still get y = beta y
    assert block_count(0, 0, 2) == 0
    assert block_count(5, big, 2) == 5  # at most one per row


def test_default_unroll_is_one_entry_a_step() -> None:
    A = sp.random(200, 200, density=0.2, format="csr", random_state=3)  # rows of about 40
    layout = Layout(simd_width=8, work_group_size=64, compute_units=2, local_memory=32768)
    assert CsrBlocks.from_csr(A, layout).params["unroll"] == DEFAULT_UNROLL == 1
    assert CsrBlocks.from_csr(A, layout, unroll=4).params["unroll"] == 4


def _one_row_holds_all() -> sp.csr_matrix:
    A = sp.lil_matrix((50, 3000))
    A[17, :] = np.random.default_rng(0).uniform(-1, 1, 3000)
    return A.tocsr()


def _uneven() -> sp.csr_matrix:
    rng = np.random.default_rng(1)
    lengths = rng.integers(0, 12, 300)
    lengths[[5, 200]] = 400
    rows = np.repeat(np.arange(300), lengths)
    cols = rng.integers(0, 500, rows.size)
    return sp.csr_matrix((rng.uniform(-1, 1, rows.size), (rows, cols)), shape=(300, 500))


MATRICES = {
    "0x0": sp.csr_matrix((0, 0)),
    "0x5": sp.csr_matrix((0, 5)),
    "5x0": sp.csr_matrix((5, 0)),
    "all-empty": sp.csr_matrix((40, 30)),
    "one-row-holds-all": _one_row_holds_all(),
    "uneven": _uneven(),
}


@pytest.mark.parametrize("unroll", UNROLL_FACTORS)
@pytest.mark.parametrize("blocks", [None, 1, 3, 64])
@pytest.mark.parametrize("name", list(MATRICES))
def test_products_match_scipy(name: str, blocks: int | None, unroll: int, dtype: np.dtype,
                              device) -> None:
    A = MATRICES[name]
    rows = A.shape[0]
    M = clspmv.DeviceMatrix.from_scipy(A, "csr-blocks", device, dtype, blocks=blocks,
                                       unroll=unroll)
    assert M.params["blocks"] == min(rows, blocks or 1)  # these matrices are small: 1 by default
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, A.shape[1])
    y0 = rng.uniform(-1, 1, rows).astype(dtype)
    assert_matches(M.matvec(x, y0.copy(), alpha=1.5, beta=-2.0), A, x, dtype, 1.5, -2.0, y0)
    xt = rng.uniform(-1, 1, rows)
    assert_matches(M.rmatvec(xt, method="atomic"), A.T.tocsr(), xt, dtype)


def test_refuses_bad_parameters(device) -> None:
    eye = sp.eye(4, format="csr")
    with pytest.raises(ValueError, match=r"unroll must be one of \(1, 2, 4, 8\), got 3"):
        clspmv.DeviceMatrix.from_scipy(eye, "csr-blocks", device, unroll=3)
    with pytest.raises(ValueError, match="blocks must be at least 1, got 0"):
        clspmv.DeviceMatrix.from_scipy(eye, "csr-blocks", device, blocks=0)
