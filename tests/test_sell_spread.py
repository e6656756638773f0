"""SELL and pJDS slices dealt over the work-group range on CPUs (clspmv.formats.sell.spread_order):
when the sorted order puts most of the work in the first work-groups one PoCL thread takes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES
from clspmv.formats.layout import Layout
from clspmv.formats.sell import SPREAD_MIN_GROUPS, first_claim, spread_order

from oracle import assert_matches, products_match

CPU = Layout(simd_width=8, work_group_size=64, compute_units=2, local_memory=32768)
"""8 slices per work-group, two threads."""


def skewed_widths(slices: int) -> np.ndarray:
    """Slice widths in sorted order with most of the slots in the first sixteenth."""
    return np.where(np.arange(slices) < max(slices // 16, 1), 100, 1)


def test_first_claim_follows_pocl() -> None:
    assert first_claim(128, 2) == 64          # half, at most 32 per thread
    assert first_claim(1024, 2) == 64         # still at most 256 * 2 * 2 groups: 64
    assert first_claim(2048, 2) == 512        # more: up to 256 per thread
    assert first_claim(100_000, 16) == 4096
    assert first_claim(5, 16) == 1


def test_concentrated_order_is_dealt() -> None:
    slices = 8 * 4096  # 4096 work-groups of 8 slices
    order = spread_order(skewed_widths(slices), CPU)
    assert order is not None
    stride = int(np.ceil(np.sqrt(slices)))
    assert np.array_equal(np.sort(order), np.arange(slices))  # a permutation of the slices
    assert order[0] == 0 and order[1] == stride and order[-(-slices // stride)] == 1
    # every run of a first claim's length now holds about a thread's share of the slots
    widths = skewed_widths(slices)[order]
    claim = first_claim(slices // 8, 2) * 8
    assert widths[:claim].sum() * 2 < 1.2 * widths.sum()


def test_even_few_or_lockstep_orders_stay_sorted() -> None:
    slices = SPREAD_MIN_GROUPS * 2 * 8 * 4  # enough work-groups
    assert spread_order(np.full(slices, 7), CPU) is None                   # nothing to spread
    assert spread_order(skewed_widths(8 * 7), CPU) is None                # too few groups
    one_thread = Layout(8, 64, 1, 32768)
    assert spread_order(skewed_widths(slices), one_thread) is None
    forced = spread_order(np.full(slices, 7), CPU, force=True)
    assert forced is not None and forced[1] == int(np.ceil(np.sqrt(slices)))


def power_law_matrix(rows: int, seed: int = 0) -> sp.csr_matrix:
    """Rows of Zipf lengths (at most 300) with random columns: sorted by length, the first
    slices hold most of the entries."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(rng.zipf(1.6, rows), 300)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, rows, int(indptr[-1]))
    A = sp.csr_matrix((rng.uniform(-1, 1, cols.size), cols, indptr), shape=(rows, rows))
    A.sum_duplicates()
    return A


@pytest.mark.parametrize("fmt", ["pjds", "sell"])
@pytest.mark.parametrize("spread", [True, False, None])
def test_dealt_products_match_scipy(fmt: str, spread: bool | None, dtype: np.dtype,
                                    device: clspmv.Device) -> None:
    A = power_law_matrix(3001).astype(dtype)  # a last, partial slice on every SIMD width
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, spread=spread)
    if spread is not None:
        assert M.params["spread"] == int(spread)
    products_match(M, A, dtype)
    x = np.random.default_rng(4).uniform(-1, 1, A.shape[0]).astype(dtype)
    assert_matches(M.rmatvec(x), A.T.tocsr(), x, dtype)
    X = np.random.default_rng(5).uniform(-1, 1, (A.shape[1], 3)).astype(dtype)
    Y = M.matmat(X)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype)
    assert np.array_equal(M.to_scipy().toarray(), A.toarray())


def test_default_deals_on_cpus_only(device: clspmv.Device) -> None:
    A = power_law_matrix(200_000, seed=1)
    M = clspmv.DeviceMatrix.from_scipy(A, format="pjds", device=device)
    layout = FORMAT_CLASSES["pjds"].layout_for(device)
    lengths = np.diff(A.indptr)
    limit = M.params["long_rows"]
    if limit:
        lengths = np.where(lengths > limit, 0, lengths)  # long rows go to the COO tail
    c = layout.simd_width
    widths = np.sort(lengths)[::-1][: lengths.size // c * c].reshape(-1, c).max(axis=1)
    expected = not layout.lockstep and spread_order(widths, layout) is not None
    assert M.params["spread"] == int(expected)
    products_match(M, A, np.dtype(np.float64))


def test_spread_must_be_a_flag(device: clspmv.Device) -> None:
    with pytest.raises(TypeError, match="spread must be True or False, got 'yes'"):
        clspmv.DeviceMatrix.from_scipy(power_law_matrix(100), format="pjds", device=device,
                                       spread="yes")


def test_pickled_matrix_keeps_its_order(device: clspmv.Device) -> None:
    A = power_law_matrix(3001)
    for spread in (True, False):
        M = clspmv.DeviceMatrix.from_scipy(A, format="pjds", device=device, spread=spread)
        again = pickle.loads(pickle.dumps(M))
        assert again.params["spread"] == int(spread)
        products_match(again, A, np.dtype(np.float64))
