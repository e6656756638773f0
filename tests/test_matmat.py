"""Several right-hand sides: Y = alpha A X + beta Y (and A^T X) against scipy, column by column."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES
from clspmv.formats.base import MATMAT_BLOCKS, matmat_block

from oracle import assert_matches, oracle_matrix
from scenarios import SCENARIOS, Scenario

BLOCK_FORMATS = [f for f in clspmv.FORMATS if FORMAT_CLASSES[f].has_matmat]


def assert_columns_match(Y, A, X, dtype, alpha=1.0, beta=0.0, Y0=None) -> None:
    """The oracle applied to every column."""
    Y = np.asarray(Y)
    assert Y.shape == (A.shape[0], X.shape[1])
    for j in range(X.shape[1]):
        assert_matches(Y[:, j], A, X[:, j], dtype, alpha, beta,
                       None if Y0 is None else Y0[:, j])


def random_block(rows: int, k: int, order: str, seed: int = 0) -> np.ndarray:
    return np.asarray(np.random.default_rng(seed).standard_normal((rows, k)), order=order)


def test_block_formats() -> None:
    assert set(BLOCK_FORMATS) == {"csr-scalar", "csr-vector", "csr-aligned", "csr-adaptive",
                                  "csr-blocks", "csr-merge", "ell", "ellr", "ellr-t", "sell",
                                  "pjds"}


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("k", [1, 2, 3, 8, 37])
def test_matmat_matches_scipy(k: int, order: str, fmt: str, dtype: np.dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    X = random_block(M.shape[1], k, order)
    Y = M.matmat(X)
    assert isinstance(Y, np.ndarray) and Y.dtype == dtype
    assert Y.flags.f_contiguous if (order == "F" and k > 1) else Y.flags.c_contiguous
    assert_columns_match(Y, case.csr, X, dtype)


@pytest.mark.parametrize("case", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_matmat_scenarios(case: Scenario, fmt: str, device) -> None:
    if fmt in case.unsuitable:
        pytest.skip("format refuses this matrix")
    dtype = np.float64 if device.fp64 else np.float32
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    X = random_block(M.shape[1], 6, "F", seed=1)
    X[:, 2] = case.x  # non-finite inputs where the scenario has them
    assert_columns_match(M.matmat(X), oracle_matrix(fmt, case.csr), X, dtype)


@pytest.mark.parametrize("alpha,beta", [(2.0, 0.0), (-1.0, 0.5)])
@pytest.mark.parametrize("y_order", ["C", "F"])
def test_matmat_alpha_beta_in_place(alpha: float, beta: float, y_order: str, fmt: str,
                                    device) -> None:
    case = next(s for s in SCENARIOS if s.name == "empty-rows")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=np.float32)
    X = random_block(M.shape[1], 9, "C", seed=2)
    if beta == 0:
        Y0 = np.full((M.shape[0], 9), np.nan, np.float32, order=y_order)
    else:
        Y0 = random_block(M.shape[0], 9, y_order, seed=3).astype(np.float32)
    Y = Y0.copy(order="K")
    out = M.matmat(X, Y, alpha=alpha, beta=beta)
    assert out is Y
    assert_columns_match(Y, case.csr, X, np.float32, alpha, beta, Y0)


@pytest.mark.parametrize("x_order", ["C", "F"])
def test_matmat_pyopencl_arrays(x_order: str, fmt: str, dtype: np.dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "wide")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    q = device.queue
    X = random_block(M.shape[1], 7, x_order, seed=4)
    X_dev = cl_array.to_device(q, X.astype(dtype, order="K"))
    Y_dev = M.matmat(X_dev)
    assert isinstance(Y_dev, cl_array.Array) and Y_dev.shape == (M.shape[0], 7)
    assert_columns_match(Y_dev.get(), case.csr, X, dtype)
    # in place into a column-major Y, from a float64 X (converted on the device)
    Y0 = random_block(M.shape[0], 7, "F", seed=5).astype(dtype)
    Y_in = cl_array.to_device(q, Y0)
    out = M.matmat(cl_array.to_device(q, X), Y_in, alpha=0.5, beta=-2.0)
    assert out is Y_in
    assert_columns_match(Y_in.get(), case.csr, X, dtype, 0.5, -2.0, Y0)


@pytest.mark.parametrize("method", ["atomic", "transpose"])
def test_rmatmat(method: str, fmt: str, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "tall")
    dtype = np.float64 if device.fp64 else np.float32
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    X = random_block(M.shape[0], 4, "C", seed=6)
    At = oracle_matrix(fmt, case.csr).T.tocsr()
    assert_columns_match(M.rmatmat(X, method=method), At, X, dtype)


def test_matmul_operator_and_linear_operator(device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format="sell", device=device, dtype=np.float32)
    X = random_block(M.shape[1], 3, "C", seed=7)
    assert_columns_match(M @ X, case.csr, X, np.float32)
    assert_matches(M @ X[:, 0], case.csr, X[:, 0], np.float32)
    op = M.aslinearoperator()
    assert_columns_match(op.matmat(X), case.csr, X, np.float32)
    assert_columns_match(op @ X, case.csr, X, np.float32)
    assert_matches(op.rmatvec(case.xt), case.csr.T.tocsr(), case.xt, np.float32)
    assert_matches(op.T @ case.xt, case.csr.T.tocsr(), case.xt, np.float32)
    Xt = random_block(M.shape[0], 2, "F", seed=8)
    assert_columns_match(op.rmatmat(Xt), case.csr.T.tocsr(), Xt, np.float32)


def test_matmat_errors(device) -> None:
    A = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype=np.float32)
    with pytest.raises(ValueError, match=r"X has shape \(20,\), expected \(20, k\)"):
        M.matmat(np.ones(20))
    with pytest.raises(ValueError, match=r"X has shape \(19, 3\), expected \(20, 3\)"):
        M.matmat(np.ones((19, 3)))
    with pytest.raises(ValueError, match=r"Y has shape \(30, 2\), expected \(30, 3\)"):
        M.matmat(np.ones((20, 3)), np.zeros((30, 2), np.float32))
    with pytest.raises(TypeError, match="Y has dtype float64, expected float32"):
        M.matmat(np.ones((20, 3)), np.zeros((30, 3)))
    with pytest.raises(TypeError, match="complex matrices are not supported"):
        M.matmat(np.ones((20, 3), complex))
    q = device.queue
    strided = cl_array.zeros(q, (20, 6), np.float32)[:, ::2]
    with pytest.raises(ValueError, match=r"X is a non-contiguous pyopencl array \(strides"):
        M.matmat(strided)
    with pytest.raises(ValueError, match=r"Y must be a contiguous array without offset"):
        M.matmat(cl_array.zeros(q, (20, 3), np.float32), cl_array.zeros(q, (30, 6),
                                                                      np.float32)[:, ::2])
    with pytest.raises(clspmv.IndexOverflowError, match="multiply fewer columns at a time"):
        M.matmat(np.broadcast_to(np.float32(1), (20, 2**27)))
    assert M.matmat(np.ones((20, 0))).shape == (30, 0)


def test_block_width_choice() -> None:
    assert [matmat_block(k, 1, 256, 8, 1 << 20) for k in (1, 2, 3, 4, 5, 9, 16, 17, 64)] == [
        2, 2, 4, 4, 8, 16, 16, 16, 16]
    # T > 1 keeps KB * WG values in local memory: 16 * 256 * 8 bytes do not fit 16 KiB
    assert matmat_block(64, 8, 256, 8, 16 << 10) == 8
    assert matmat_block(64, 8, 1024, 8, 1 << 10) == MATMAT_BLOCKS[0]
