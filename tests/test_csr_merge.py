"""csr-merge: the merge path and split rows (host, numpy), the parameter choices, and products of
both kernels (tiles staged in local memory, contiguous chunks) against scipy through the oracle.

The default path on each test device is covered by the suites parametrised over
``clspmv.FORMATS``; here both paths run on every device, on the matrices that stress the
merge path: one row of 10^6 entries, all-empty rows, one column, power-law rows."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import clspmv
from clspmv.formats.base import Layout
from clspmv.formats.csr_merge import (
    CsrMerge,
    chunk_count,
    fixup_lanes,
    merge_path,
    split_rows,
    tile_items,
)
from clspmv.formats.layout import LOCKSTEP_SIMD

from oracle import assert_matches


def row_ptr_of(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(np.asarray(lengths, np.int64))])


def emulate(row_ptr: np.ndarray, values: np.ndarray, diagonals: np.ndarray) -> np.ndarray:
    """The row sums of ``values`` (one per entry) computed the way the kernels do: each share
    stores the rows inside it, its carry and its head; the fix-up completes the split rows."""
    rows = row_ptr.size - 1
    path_row, path_entry = merge_path(row_ptr, diagonals)
    y = np.full(rows, np.nan)
    shares = diagonals.size - 1
    carry, head = np.full(shares, np.nan), np.full(shares, np.nan)
    for s in range(shares):
        r, k = int(path_row[s]), int(path_entry[s])
        first = True
        while r < path_row[s + 1]:
            end = int(row_ptr[r + 1])
            total = values[k:end].sum()
            if first and k > row_ptr[r]:
                head[s] = total
            else:
                assert np.isnan(y[r]), "row stored twice"
                y[r] = total
            k, r, first = end, r + 1, False
        carry[s] = values[k:path_entry[s + 1]].sum()
    split, carry_first, head_share = split_rows(row_ptr, path_row, path_entry)
    for r, a, b in zip(split, carry_first, head_share, strict=True):
        assert np.isnan(y[r]), "a split row was also stored by a share"
        y[r] = carry[a:b].sum() + head[b]
    return y


@given(lengths=st.lists(st.integers(0, 40), min_size=0, max_size=80), share=st.integers(1, 30))
def test_merge_path_and_split_rows(lengths: list[int], share: int) -> None:
    row_ptr = row_ptr_of(lengths)
    rows, nnz = len(lengths), int(row_ptr[-1])
    path = rows + nnz
    diagonals = np.minimum(np.arange(-(-path // share) + 1) * share, path)
    path_row, path_entry = merge_path(row_ptr, diagonals)
    assert np.array_equal(path_row + path_entry, diagonals)
    assert np.all(np.diff(path_row) >= 0) and np.all(np.diff(path_entry) >= 0)
    inner = path_row < rows  # a coordinate lies within its row's entries (end included)
    assert np.all(row_ptr[path_row[inner]] <= path_entry[inner])
    assert np.all(path_entry[inner] <= row_ptr[path_row[inner] + 1])
    assert np.all(path_entry[~inner] == nnz)
    values = np.random.default_rng(share).uniform(-1, 1, nnz)
    expected = np.add.reduceat(values, row_ptr[:-1]) if nnz else np.zeros(rows)
    expected[np.diff(row_ptr) == 0] = 0  # reduceat returns the next value for empty rows
    np.testing.assert_allclose(emulate(row_ptr, values, diagonals), expected, atol=1e-12)


@given(lengths=st.lists(st.integers(0, 3000), min_size=0, max_size=300),
       cuts=st.lists(st.integers(0, 10**6), max_size=40), wide=st.booleans())
def test_merge_path_equals_a_search_among_every_row_end(lengths: list[int], cuts: list[int],
                                                        wide: bool) -> None:
    """The shares' searches, at the probes alone, find what numpy's searchsorted finds among
    the path positions of every row end (the conversion before), with 32-bit or 64-bit row
    pointers, empty rows, long rows, no rows."""
    row_ptr = row_ptr_of(lengths).astype(np.int64 if wide else np.int32)
    path = len(lengths) + int(row_ptr[-1])
    diagonals = np.unique(np.r_[0, path, np.minimum(cuts, path)])
    ends = row_ptr[1:].astype(np.int64) + np.arange(len(lengths))
    rows = np.searchsorted(ends, diagonals, side="left")
    path_row, path_entry = merge_path(row_ptr, diagonals)
    assert np.array_equal(path_row, rows) and np.array_equal(path_entry, diagonals - rows)


def test_split_rows_of_a_long_row() -> None:
    row_ptr = row_ptr_of([3, 100, 0, 2])
    diagonals = np.minimum(np.arange(0, 120, 10), 109)  # shares of 10 path steps
    path_row, path_entry = merge_path(row_ptr, diagonals)
    split, carry_first, head_share = split_rows(row_ptr, path_row, path_entry)
    assert split.tolist() == [1]  # only the long row crosses shares
    assert carry_first.tolist() == [0] and head_share.tolist() == [10]
    assert fixup_lanes(carry_first, head_share, 64) == 16  # 10 carries
    assert fixup_lanes(carry_first, head_share, 8) == 8
    assert fixup_lanes(carry_first[:0], head_share[:0], 8) == 1


def _layout(simd: int = 32, wg: int = 64, local: int = 48 << 10) -> Layout:
    return Layout(simd_width=simd, work_group_size=wg, compute_units=2, local_memory=local)


def test_parameter_choices() -> None:
    assert tile_items(_layout(), 8) == 8 and tile_items(_layout(), 4) == 16
    # a tile of 256 x 8 steps needs 8 x 256 x 12 bytes > half of 32 KiB: halved
    assert tile_items(_layout(wg=256, local=32 << 10), 8) == 4
    assert tile_items(_layout(wg=1024, local=1024), 8) == 1
    assert chunk_count(10**8, 2) == 32 and chunk_count(5000, 2) == 2 and chunk_count(0, 2) == 1
    A = sp.random(50, 60, 0.1, "csr", random_state=0)
    assert CsrMerge.from_csr(A, _layout(simd=LOCKSTEP_SIMD)).params["staged"] == 1
    assert CsrMerge.from_csr(A, _layout(simd=8)).params["staged"] == 0


def test_refuses_bad_parameters(device) -> None:
    A = sp.eye(4, format="csr")
    with pytest.raises(ValueError, match=r"items must be between 1 and \d+ .*got 0"):
        clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, staged=True, items=0)
    with pytest.raises(ValueError, match="shares applies to staged=False only"):
        clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, staged=True, shares=3)
    with pytest.raises(ValueError, match="items applies to staged=True only"):
        clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, staged=False, items=2)
    with pytest.raises(ValueError, match="shares must be at least 1, got 0"):
        clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, staged=False, shares=0)


def _power_law(rows: int, cols: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.zipf(1.7, rows), cols)
    lengths[rng.random(rows) < 0.3] = 0
    r = np.repeat(np.arange(rows), lengths)
    c = rng.integers(0, cols, r.size)
    return sp.csr_matrix((rng.uniform(-1, 1, r.size), (r, c)), shape=(rows, cols))


def _one_long_row() -> sp.csr_matrix:
    n = 10**6
    data = np.random.default_rng(1).uniform(-1, 1, n)
    return sp.csr_matrix((data, np.arange(n), [0, n]), shape=(1, n))


MATRICES = {
    "one-row-1e6": _one_long_row,
    "all-empty": lambda: sp.csr_matrix((300, 200)),
    "one-column": lambda: sp.csr_matrix(np.random.default_rng(2).uniform(-1, 1, (3000, 1))),
    "power-law": lambda: _power_law(4000, 5000, 3),
    "random": lambda: sp.random(700, 900, 0.02, "csr", random_state=4),
    "0x5": lambda: sp.csr_matrix((0, 5)),
    "5x0": lambda: sp.csr_matrix((5, 0)),
}

PATHS = {
    "tiles": {"staged": True},
    "small-tiles": {"staged": True, "items": 1},
    "chunks": {"staged": False},
    "many-chunks": {"staged": False, "shares": 97},
}


@pytest.fixture(scope="module", params=list(MATRICES))
def matrix(request: pytest.FixtureRequest) -> sp.csr_matrix:
    return MATRICES[request.param]()


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("dtype_name", ["float32", "float64", "mixed"])
def test_products_match_scipy(matrix: sp.csr_matrix, path: str, dtype_name: str,
                              device) -> None:
    if not device.supports(dtype_name):
        pytest.skip(f"{device.name} has no fp64")
    A = matrix
    wg = 64 if path == "small-tiles" else None
    M = clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, dtype_name,
                                       work_group_size=wg, **PATHS[path])
    dtype = M.dtype
    if A.shape[0] == 1:  # the row of 10^6 entries crosses many shares: the wide fix-up
        assert M.params["split_rows"] == M.params["wide_rows"] == 1
        assert M.params["fixup_lanes"] > 1
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, A.shape[1])
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    y = M.matvec(x, y0.copy(), alpha=1.5, beta=-2.0)
    assert_matches(y, A, x, dtype, 1.5, -2.0, y0)
    assert np.array_equal(M.matvec(x, y0.copy(), alpha=1.5, beta=-2.0), y)  # no atomics
    nan = np.full(A.shape[0], np.nan, dtype)  # beta = 0: y is never read
    assert_matches(M.matvec(x, nan, alpha=-0.5), A, x, dtype, -0.5)
    if A.shape[0] * A.shape[1] > 10**5 and path != "tiles":
        return  # the transpose and A X kernels are csr.cl's: once per matrix is enough
    xt = rng.uniform(-1, 1, A.shape[0])
    assert_matches(M.rmatvec(xt, method="atomic"), A.T.tocsr(), xt, dtype)
    X = rng.uniform(-1, 1, (A.shape[1], 3))
    Y = M.matmat(X)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype)


def test_small_work_groups_cap_the_lanes_of_a_row(device) -> None:
    """The transpose and A X kernels share a row among at most a work-group's work-items."""
    A = sp.random(60, 500, 0.2, "csr", random_state=6)  # 100 entries a row: T = 32 by mean
    M = clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, np.float64 if device.fp64
                                       else np.float32, work_group_size=8, staged=True)
    assert M.params["threads_per_row"] == 8
    X = np.random.default_rng(7).uniform(-1, 1, (500, 2))
    Y = M.matmat(X)
    for j in range(2):
        assert_matches(Y[:, j], A, X[:, j], M.dtype)


@pytest.mark.parametrize("path", list(PATHS))
def test_both_paths_as_a_block(path: str, device) -> None:
    """Tiles, chunks and the fix-ups as a block: rows inside a longer y (``row_offset``; the
    others untouched, beta applied to the block's rows only) and compact columns read through a
    column map from a longer x; the transpose and A X on the same block."""
    dtype = np.dtype(np.float64 if device.fp64 else np.float32)
    A = _power_law(300, 3000, 8).tolil()
    A[7, :] = 1.0  # a full row, split across shares (and across the work-items of a tile)
    A = sp.csr_matrix(A)
    m, k = A.shape
    n, r0 = k + 50, 11
    rng = np.random.default_rng(9)
    cmap = np.sort(rng.choice(n, k, replace=False))
    wg = 64 if path == "small-tiles" else None
    M = clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, dtype, work_group_size=wg,
                                       column_map=cmap, n_cols=n, **PATHS[path])
    assert M.params["split_rows"] > 0
    x = rng.uniform(-1, 1, n).astype(dtype)
    y0 = rng.uniform(-1, 1, m + 30).astype(dtype)
    y = M.matvec(x, y0.copy(), alpha=1.5, beta=-2.0, row_offset=r0)
    outside = np.r_[0:r0, r0 + m:m + 30]
    np.testing.assert_array_equal(y[outside], y0[outside])
    assert_matches(y[r0:r0 + m], A, x[cmap], dtype, 1.5, -2.0, y0[r0:r0 + m])
    nan = np.full(m + 30, np.nan, dtype)
    M.matvec(x, nan, alpha=0.5, row_offset=r0)
    assert np.isnan(nan[outside]).all()
    assert_matches(nan[r0:r0 + m], A, x[cmap], dtype, 0.5)
    if dtype == np.float64 and not device.int64_atomics:
        return
    xt = rng.uniform(-1, 1, m + 30).astype(dtype)
    yt0 = rng.uniform(-1, 1, n).astype(dtype)
    yt = M.rmatvec(xt, yt0.copy(), alpha=-0.5, beta=2.0, row_offset=r0)
    assert_matches(yt[cmap], A.T.tocsr(), xt[r0:r0 + m], dtype, -0.5, 2.0, yt0[cmap])
    X = rng.uniform(-1, 1, (n, 3)).astype(dtype)
    Y0 = rng.uniform(-1, 1, (m + 30, 3)).astype(dtype)
    Y = M.matmat(X, Y0.copy(), alpha=1.5, beta=2.0, row_offset=r0)
    for j in range(3):
        assert_matches(Y[r0:r0 + m, j], A, X[cmap, j], dtype, 1.5, 2.0, Y0[r0:r0 + m, j])


@pytest.mark.parametrize("path", list(PATHS))
def test_both_paths_survive_pickle_copy_and_astype(path: str, device) -> None:
    """The staged kernel's matrices (the GPU default) failed every round trip: its stored
    ``shares`` went back to a conversion that takes them only with ``staged=False``. The
    parameters given are kept, the derived ones (``items`` of another value type) derived anew."""
    import copy
    import pickle

    A = _power_law(500, 400, 10)
    wg = 64 if path == "small-tiles" else None
    M = clspmv.DeviceMatrix.from_scipy(A, "csr-merge", device, np.float32, work_group_size=wg,
                                       **PATHS[path])
    x = np.random.default_rng(11).uniform(-1, 1, 400)
    copies = [pickle.loads(pickle.dumps(M)), copy.copy(M), copy.deepcopy(M), M.copy()]
    for N in copies:
        assert N.params == M.params and N.work_group_size == M.work_group_size
        assert_matches(N @ x, A, x, np.float32)
    for precision in ("float64", "mixed"):
        if device.supports(precision):
            N = M.astype(precision)
            assert N.params["staged"] == M.params["staged"]
            assert_matches(N @ x, A.astype(np.float32), x, N.dtype)  # the values M holds
