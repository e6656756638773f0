"""SELL-C-sigma's sorting window chosen from the row lengths (issue 5)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats.sell import SIGMA_PADDING_SLACK, choose_sigma, slice_padding

from oracle import assert_matches


def lengths_matrix(lengths: np.ndarray, seed: int = 0) -> sp.csr_matrix:
    """A 1000-column matrix whose rows have the given lengths (distinct random columns)."""
    rng = np.random.default_rng(seed)
    n = lengths.size
    rows = np.repeat(np.arange(n), lengths)
    cols = np.concatenate([rng.choice(1000, int(k), replace=False) for k in lengths])
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(n, 1000))


def test_padding_formula_matches_the_layout(device) -> None:
    lengths = np.random.default_rng(1).integers(0, 40, 300)
    A = lengths_matrix(lengths)
    c = device.simd_width
    for sigma in (1, c, 4 * c):
        M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, sigma=sigma)
        slices = -(-300 // c)
        slots = slice_padding(lengths, c, sigma) + lengths.sum()
        # val + col per slot; slice pointers, padded row lengths and the permutation
        assert M.nbytes == slots * (8 + 4) + (slices + 1 + slices * c + 300) * 4, sigma


def test_equal_rows_are_not_sorted() -> None:
    assert choose_sigma(np.full(1000, 7), 32) == 1
    assert choose_sigma(np.zeros(0, np.int64), 32) == 1


def test_uneven_rows_get_a_window_near_pjds_padding() -> None:
    rng = np.random.default_rng(2)
    lengths = np.minimum(rng.zipf(1.8, 20000), 3000)
    sigma = choose_sigma(lengths, 32)
    assert sigma > 1 and sigma % 32 == 0
    least = slice_padding(lengths, 32, lengths.size)
    assert slice_padding(lengths, 32, sigma) <= least + SIGMA_PADDING_SLACK * lengths.sum()
    smaller = 1 if sigma == 32 else sigma // 2
    assert slice_padding(lengths, 32, smaller) > least + SIGMA_PADDING_SLACK * lengths.sum()


@pytest.mark.parametrize("shape", ["sorted-already", "one-long-row", "alternating"])
def test_default_sigma_products_match_scipy(shape: str, dtype: np.dtype, device) -> None:
    n = 500
    lengths = {
        "sorted-already": np.arange(n)[::-1] % 50,
        "one-long-row": np.where(np.arange(n) == 123, 900, 3),
        "alternating": np.where(np.arange(n) % 2 == 0, 30, 1),
    }[shape]
    A = lengths_matrix(lengths).astype(dtype)
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device)
    x = np.random.default_rng(3).standard_normal(1000).astype(dtype)
    assert M.params["sigma"] == choose_sigma(lengths, device.simd_width)
    assert_matches(M.matvec(x), A, x, dtype)
