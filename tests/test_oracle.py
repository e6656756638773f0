"""The oracle's rules (``oracle.py``) on hand-made results: what it accepts and what it rejects."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from oracle import assert_matches, oracle_matrix

F32, F64 = np.dtype(np.float32), np.dtype(np.float64)


def rejects(*args, **kwargs) -> None:
    with pytest.raises(AssertionError, match="rows differ from the reference"):
        assert_matches(*args, **kwargs)


def test_rounding_within_the_bound_only() -> None:
    A = sp.csr_matrix(np.array([[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]))
    x = np.array([1.0, 1.0, 1.0])
    eps = np.finfo(np.float32).eps
    assert_matches(np.array([6.0 * (1 + eps), 0.0]), A, x, F32)
    rejects(np.array([6.0 * (1 + 1e-4), 0.0]), A, x, F32)
    rejects(np.array([6.0, 1e-30]), A, x, F32)  # an empty row is exactly 0 (up to tiny terms)


def test_non_finite_rules() -> None:
    A = sp.csr_matrix(np.array([[np.inf, 1.0], [1.0, np.nan], [1.0, 1.0]]))
    x = np.array([1.0, 2.0])
    assert_matches(np.array([np.inf, np.nan, 3.0]), A, x, F32)
    rejects(np.array([-np.inf, np.nan, 3.0]), A, x, F32)  # the wrong Inf
    rejects(np.array([np.nan, np.nan, 3.0]), A, x, F32)  # NaN for Inf
    rejects(np.array([np.inf, 1.0, 3.0]), A, x, F32)  # a number for NaN
    rejects(np.array([np.inf, np.nan, np.nan]), A, x, F32)  # NaN for a number


def test_rows_that_may_overflow() -> None:
    big = 3e38  # float32 max is 3.4e38: the partial sum 6e38 overflows in one summation order
    A = sp.csr_matrix(np.array([[big, big, -big], [1.0, 2.0, 0.0]]))
    x = np.ones(3)
    for first in (np.inf, np.nan, big):
        assert_matches(np.array([first, 3.0]), A, x, F32)
    rejects(np.array([1e38, 3.0]), A, x, F32)  # finite, but not the product
    rejects(np.array([big, np.inf]), A, x, F32)  # the other row may not overflow
    # float64: the reference is computed wider, so it knows the exact 1e308
    B = sp.csr_matrix(np.array([[1e308, 1e308, -1e308]]))
    for y in (np.inf, 1e308):
        assert_matches(np.array([y]), B, x, F64)
    rejects(np.array([1e307]), B, x, F64)
    # an Inf input in a row that may also overflow: any non-finite, no number
    C = sp.csr_matrix(np.array([[np.inf, big, big]]))
    for y in (np.inf, np.nan):
        assert_matches(np.array([y]), C, x, F32)
    rejects(np.array([big]), C, x, F32)


def test_subnormal_inputs_may_be_read_as_zero() -> None:
    A = sp.csr_matrix(np.array([[1e-40, 1.0], [1e-40, 0.0], [2.0, 0.0]], np.float32))
    x = np.array([1e30, 1.0])
    exact = A.astype(np.float64) @ x  # 1e-40 is 9.99995e-41 in float32
    flushed = np.array([1.0, 0.0, 2e30])
    assert_matches(exact.astype(np.float32), A, x, F32)
    assert_matches(flushed.astype(np.float32), A, x, F32)
    rejects(np.array([1.0, 5e-11, 2e30], np.float32), A, x, F32)  # neither
    # flushed, a subnormal times Inf is NaN; DIA drops the flushed entry instead
    x_inf = np.array([np.inf, 1.0])
    assert_matches(np.array([np.nan, np.nan, np.inf]), A, x_inf, F32)
    rejects(np.array([1.0, 0.0, np.inf]), A, x_inf, F32)
    dia = oracle_matrix("dia", A, F32)
    assert_matches(np.array([1.0, 0.0, np.inf]), dia, x_inf, F32, zeros_absent=True)
    # without subnormals there is no second chance
    rejects(np.array([1.0, 0.0, 2e30]), A.multiply(1e10).tocsr(), x, F32)


def test_beta_zero_ignores_y0() -> None:
    A = sp.csr_matrix(np.eye(2))
    y0 = np.array([np.nan, np.inf])
    assert_matches(np.array([2.0, 3.0]), A, np.array([1.0, 1.5]), F64, 2.0, 0.0, y0)
    assert_matches(np.array([np.nan, np.inf]), A, np.array([1.0, 1.5]), F64, 2.0, 1.0, y0)
