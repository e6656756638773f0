"""coo and hyb's COO part: the forward product as a segmented reduction by row (shares of
entries per work-group, carries, their levels of reduction, empty rows) against scipy
(``oracle.py``).

The formats' ordinary products, transpose products and several right-hand sides are covered by
the suites parametrised over ``clspmv.FORMATS``; this file checks what is particular to the
segmented reduction: rows of up to 10^6 entries across many work-groups, carries over several
levels of carries (tiny work-groups), empty rows anywhere, no entries at all."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from test_mixed import assert_mixed, rounded

import clspmv
from clspmv.bench.generators import rmat
from clspmv.formats.base import Layout
from clspmv.formats.coo import (
    MAX_STAGED_ITEMS,
    SERIAL_ITEMS,
    Coo,
    empty_mask,
    reduction_levels,
    staged_items,
)
from clspmv.formats.hyb import Hyb

from oracle import assert_matches, products_match

FORMATS = ("coo", "hyb")


def arrow(n: int) -> sp.csr_matrix:
    """Diagonal + full first row + full first column."""
    idx = np.arange(n)
    rows = np.concatenate([idx, np.zeros(n, int), idx])
    cols = np.concatenate([idx, idx, np.zeros(n, int)])
    vals = np.random.default_rng(n).uniform(-1, 1, rows.size)
    return sp.csr_matrix((vals, (rows, cols)), shape=(n, n))


def one_row(n: int) -> sp.csr_matrix:
    vals = np.random.default_rng(1).uniform(-1, 1, n)
    return sp.csr_matrix((vals, np.arange(n), [0, n]), shape=(1, n))


def gappy(rows: int = 3000, cols: int = 500) -> sp.csr_matrix:
    """Empty rows at the start, at the end and in runs between, a long row, short rows."""
    rng = np.random.default_rng(7)
    lengths = rng.integers(0, 5, rows) * (rng.random(rows) < 0.3)
    lengths[:40] = lengths[-40:] = 0
    lengths[rows // 3:rows // 2] = 0
    lengths[rows // 4] = cols
    r = np.repeat(np.arange(rows), lengths)
    c = np.concatenate([rng.choice(cols, k, replace=False) for k in lengths])
    return sp.csr_matrix((rng.standard_normal(r.size), (r, c)), shape=(rows, cols))


MATRICES = {
    "row-1e6": lambda: one_row(10**6),
    "arrow-200k": lambda: arrow(200_000),
    "gaps": gappy,
    "column": lambda: sp.csr_matrix(np.random.default_rng(2).uniform(-1, 1, (20_000, 1))),
    "power-law": lambda: rmat(14, 8, seed=3),
    "random": lambda: sp.random(4000, 3000, density=0.004, format="csr", random_state=4),
}


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "serial"])
@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_products(name: str, fmt: str, staged: bool, dtype: np.dtype, device) -> None:
    A = MATRICES[name]()
    products_match(clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype,
                                                  staged=staged), A, dtype)


@pytest.mark.parametrize("name", ["row-1e6", "arrow-200k", "gaps", "power-law"])
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("staged", [True, False], ids=["staged", "serial"])
def test_carries_over_many_tiles(name: str, fmt: str, staged: bool, device) -> None:
    """Work-groups of 16 work-items of 1 entry: shares of 16 entries (staged) or 1 (serial), so
    a long row spans thousands of shares and the carries go through several levels of groups
    of 128, a row going on from group to group."""
    A = MATRICES[name]()
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float64,
                                       work_group_size=16, items=1, staged=staged)
    prefix = "coo_" if fmt == "hyb" else ""
    assert (M.params[prefix + "items"], M.params[prefix + "staged"]) == (1, staged)
    products_match(M, A, np.float64)


@pytest.mark.parametrize("items", [2, 8, 16])
@pytest.mark.parametrize("name", ["arrow-200k", "gaps", "random"])
def test_staged_items(name: str, items: int, dtype: np.dtype, device) -> None:
    """Work-items of 2 entries (scalar loads) and of 8 and 16 (vector loads)."""
    A = MATRICES[name]()
    M = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=device, dtype=dtype,
                                       staged=True, items=items)
    products_match(M, A, dtype)


@pytest.mark.parametrize("shape", [(0, 0), (0, 7), (7, 0), (5000, 300)])
@pytest.mark.parametrize("fmt", FORMATS)
def test_no_entries(shape: tuple[int, int], fmt: str, dtype: np.dtype, device) -> None:
    A = sp.csr_matrix(shape)
    products_match(clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype),
                   A, dtype)


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "serial"])
@pytest.mark.parametrize("name", ["row-1e6", "arrow-200k", "gaps"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_mixed(name: str, fmt: str, staged: bool, device) -> None:
    """float32 values summed in float64, carries included: mixed's own bound."""
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64")
    A = MATRICES[name]()
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype="mixed",
                                       staged=staged)
    x = np.random.default_rng(4).uniform(-1, 1, A.shape[1]).astype(np.float32)
    A32, x32 = rounded(A, x)
    assert_mixed(M.matvec(x), fmt, A32, x32)
    y0 = np.random.default_rng(5).uniform(-1, 1, A.shape[0]).astype(np.float32)
    assert_mixed(M.matvec(x, y0.copy(), alpha=-1.5, beta=0.5), fmt, A32, x32, alpha=-1.5,
                 beta=0.5, y0=y0.astype(np.float64))


@pytest.mark.parametrize("fmt", FORMATS)
def test_matmat_and_transpose(fmt: str, dtype: np.dtype, device) -> None:
    """A X (one product per column) and A^T x by both methods, on the arrow matrix."""
    A = arrow(20_000)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
    rng = np.random.default_rng(6)
    X = np.asfortranarray(rng.uniform(-1, 1, (A.shape[1], 3)))
    Y0 = rng.uniform(-1, 1, (A.shape[0], 3)).astype(dtype)
    Y = M.matmat(X, Y0.copy(), alpha=2.0, beta=-1.0)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype, 2.0, -1.0, Y0[:, j])
    x = rng.uniform(-1, 1, A.shape[0])
    if dtype == np.float64 and not device.int64_atomics:
        methods = ["transpose"]
    else:
        methods = ["atomic", "transpose"]
    for method in methods:
        assert_matches(M.rmatvec(x, method=method), A.T.tocsr(), x, dtype)


@pytest.mark.parametrize("fmt", FORMATS)
def test_deterministic(fmt: str, device) -> None:
    """No atomics in the forward product: the same bits on every run."""
    A = arrow(100_000)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float32)
    x = np.random.default_rng(8).uniform(-1, 1, A.shape[1]).astype(np.float32)
    first = M.matvec(x)
    for _ in range(3):
        np.testing.assert_array_equal(M.matvec(x), first)


def test_defaults_and_checks() -> None:
    """staged by the SIMD width; by default 32 bytes of values per work-item staged (4 in
    float64, 8 in float32: for the COO part of hyb too, not for the tail of long rows); items a
    power of two up to MAX_STAGED_ITEMS (staged), at least 1."""
    gpu = Layout(32, 256, 132, 48 << 10)
    csr = sp.csr_matrix(np.eye(4))
    p = Coo.from_csr(csr, gpu).params
    assert (p["staged"], p["items"]) == (1, 4) == (1, staged_items(8))
    assert Coo.from_csr(csr.astype(np.float32), gpu).params["items"] == 8 == staged_items(4)
    wide = sp.csr_matrix(np.triu(np.ones((64, 64))), dtype=np.float32)
    assert Hyb.from_csr(wide, gpu).params["coo_items"] == 8
    p = Coo.from_csr(csr, Layout(8, 256, 2, 1 << 20)).params
    assert (p["staged"], p["items"]) == (0, SERIAL_ITEMS)
    assert Coo.from_csr(csr, gpu, items=2).params["items"] == 2
    assert Coo.from_csr(csr, gpu, items=MAX_STAGED_ITEMS).params["items"] == MAX_STAGED_ITEMS
    assert Coo.from_csr(csr, gpu, staged=False, items=3).params["items"] == 3
    for bad in (0, 3, 2 * MAX_STAGED_ITEMS):
        with pytest.raises(ValueError, match=f"items must be a power of two between 1 and "
                                             f"{MAX_STAGED_ITEMS} with staged=True"):
            Coo.from_csr(csr, gpu, items=bad)
    with pytest.raises(ValueError, match="items must be at least 1, got 0"):
        Coo.from_csr(csr, gpu, staged=False, items=0)


def test_reduction_levels() -> None:
    """Each level reduces the carries of the one before by its tile, two carries per group,
    down to one group."""
    assert reduction_levels(1, 2048) == [2]
    assert reduction_levels(1024, 2048) == [2048]
    assert reduction_levels(1025, 2048) == [2050, 4]
    assert reduction_levels(10**6, 16) == [2 * 10**6, 250_000, 31_250, 3908, 490, 62, 8]


def test_empty_mask() -> None:
    lengths = np.zeros(70, int)
    lengths[[0, 5, 31, 32, 69]] = 1
    A = sp.csr_matrix((np.ones(5), np.zeros(5, int), np.concatenate([[0], np.cumsum(lengths)])),
                      shape=(70, 1))
    mask = empty_mask(A)
    assert mask.dtype == np.uint32 and mask.size == 3
    bits = np.unpackbits(mask.view(np.uint8), bitorder="little")[:70].astype(bool)
    np.testing.assert_array_equal(bits, lengths == 0)
    assert empty_mask(sp.csr_matrix((0, 3))).size == 0


@pytest.mark.parametrize("staged", [True, False], ids=["staged", "serial"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_block_with_column_map(fmt: str, staged: bool, dtype: np.dtype, device) -> None:
    """As a block (rows inside a longer y, compact columns through a map), shares of 16
    entries: y outside the block's rows untouched, its rows alpha A x + beta y."""
    A = gappy(600, 80)
    m, k = A.shape
    n, r0 = k + 30, 11
    cmap = np.sort(np.random.default_rng(9).choice(n, k, replace=False))
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype,
                                       column_map=cmap, n_cols=n, work_group_size=16, items=1,
                                       staged=staged)
    x = np.random.default_rng(10).uniform(-1, 1, n).astype(dtype)
    y = np.full(m + 25, np.nan, dtype)
    M.matvec(x, y, alpha=1.5, row_offset=r0)
    assert np.isnan(y[:r0]).all() and np.isnan(y[r0 + m:]).all()
    assert_matches(y[r0:r0 + m], A, x[cmap], dtype, 1.5)
    y0 = np.random.default_rng(11).uniform(-1, 1, m + 25).astype(dtype)
    y = M.matvec(x, y0.copy(), alpha=-0.5, beta=2.0, row_offset=r0)
    np.testing.assert_array_equal(y[:r0], y0[:r0])
    np.testing.assert_array_equal(y[r0 + m:], y0[r0 + m:])
    assert_matches(y[r0:r0 + m], A, x[cmap], dtype, -0.5, 2.0, y0[r0:r0 + m])
