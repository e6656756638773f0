"""csr-adaptive's ``split_rows`` (clspmv.formats.adaptive_split: tiles of CAP entries whatever
the rows, split rows' pieces added by a second kernel): the partition against a simulation of
its kernels, and the products against scipy on rows at, across and far beyond the tile size,
empty rows, no entries, several work-group sizes."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from test_csr_adaptive import edge_matrix

import clspmv
from clspmv.formats.adaptive_split import SHORT_SPLIT, split_partition
from clspmv.formats.csr_adaptive import CsrAdaptive

from oracle import products_match


def simulate(row_ptr: np.ndarray, cap: int, values: np.ndarray) -> np.ndarray:
    """The row sums the kernels compute from :func:`split_partition`'s arrays, each y entry
    and each piece written once (asserted)."""
    p = split_partition(row_ptr, cap)
    m = row_ptr.size - 1
    y = np.full(m, np.nan)
    partial = np.full(p["pieces"], np.nan)
    for first, end, start, stop, head, tail in p["blocks"].reshape(-1, 6):
        assert 0 < stop - start <= cap or (row_ptr[-1] == 0 and stop == start)
        for r in range(first, end):
            part = values[max(row_ptr[r], start):min(row_ptr[r + 1], stop)].sum()
            if r == first and head >= 0:
                target, index = partial, head
            elif r == end - 1 and tail >= 0:
                target, index = partial, tail
            else:
                target, index = y, r
            assert np.isnan(target[index])
            target[index] = part
    for start, stop, piece in p["chunks"].reshape(-1, 3):
        assert 0 < stop - start <= cap and np.isnan(partial[piece])
        partial[piece] = values[start:stop].sum()
    assert not np.isnan(partial).any()
    for rows, ptr, few in ((p["long_rows"], p["long_ptr"], False),
                           (p["split_rows"], p["split_ptr"], True)):
        assert ptr.size == rows.size + 1
        assert ((np.diff(ptr) <= SHORT_SPLIT) == few).all()
        for k, r in enumerate(rows):
            assert np.isnan(y[r])
            y[r] = partial[ptr[k]:ptr[k + 1]].sum()
    return y


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=50), st.sampled_from([2, 3, 8, 16]))
def test_split_partition_sums_every_row_once(lengths: list[int], cap: int) -> None:
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    values = np.random.default_rng(len(lengths)).standard_normal(int(row_ptr[-1]))
    want = np.array([values[row_ptr[r]:row_ptr[r + 1]].sum() for r in range(len(lengths))])
    np.testing.assert_allclose(simulate(row_ptr, cap, values), want, atol=1e-12)


def test_tiles_are_full_but_the_last() -> None:
    """Every tile holds cap entries but the last; a row of many tiles is combined by a work-group
    (long_rows), rows of few pieces one work-item each (split_rows)."""
    lengths = np.array([5, 0, 3, 200, 7, 1, 0, 0])
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    p = split_partition(row_ptr, 4)
    spans = np.concatenate([p["blocks"].reshape(-1, 6)[:, 3] - p["blocks"].reshape(-1, 6)[:, 2],
                            p["chunks"].reshape(-1, 3)[:, 1] - p["chunks"].reshape(-1, 3)[:, 0]])
    assert sorted(spans)[1:] == [4] * (spans.size - 1) and spans.sum() == row_ptr[-1]
    assert list(p["long_rows"]) == [3] and list(p["split_rows"]) == [0, 4]


@pytest.mark.parametrize("block_entries", [None, 16])
def test_split_rows_at_the_tile_size(block_entries: int | None, dtype: np.dtype, device) -> None:
    cap = block_entries or CsrAdaptive.from_csr(
        sp.csr_matrix((1, 1), dtype=dtype), CsrAdaptive.layout_for(device)).params["block_entries"]
    A = edge_matrix(cap)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=cap, split_rows=True)
    assert M.params["split_rows"] == 1 and M.params["split"] + M.params["long_row_count"] > 0
    products_match(M, A, dtype)


@pytest.mark.parametrize("work_group_size", [None, 16, 64])
@pytest.mark.parametrize("block_entries", [3, 16])
def test_split_rows_of_every_length(block_entries: int, work_group_size: int | None,
                                    dtype: np.dtype, device) -> None:
    """Short, empty and long rows (one of more than SHORT_SPLIT tiles, combined by a work-group)
    cut at every tile boundary; several work-group sizes."""
    rng = np.random.default_rng(17)
    lengths = rng.integers(0, 6, 300) * (rng.random(300) < 0.7)
    lengths[[5, 150, 299]] = [block_entries * (SHORT_SPLIT + 3) + 1, 40, 9]
    rows = np.repeat(np.arange(lengths.size), lengths)
    cols = rng.integers(0, 5000, rows.size)
    A = sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(300, 5000))
    A.sum_duplicates()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       block_entries=block_entries, split_rows=True,
                                       work_group_size=work_group_size)
    assert M.params["long_row_count"] >= 1 and M.params["split"] > 0
    products_match(M, A, dtype)


@pytest.mark.parametrize("shape", [(0, 0), (0, 7), (7, 0), (5000, 300)])
def test_split_rows_without_entries(shape: tuple[int, int], dtype: np.dtype, device) -> None:
    A = sp.csr_matrix(shape)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device, dtype=dtype,
                                       split_rows=True)
    assert M.params["pieces"] == 0
    products_match(M, A, dtype)


def test_split_rows_checked(device) -> None:
    A = sp.csr_matrix(np.eye(3))
    assert clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive",
                                          device=device).params["split_rows"] == 0
    with pytest.raises(TypeError, match="split_rows must be True or False, got 'yes'"):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=device,
                                       split_rows="yes")
