"""y = alpha A x + beta y for every format x dtype x device against scipy (see oracle.py)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES

from oracle import assert_matches, oracle_matrix
from scenarios import ALPHA_BETA, SCENARIOS, Scenario


@pytest.mark.parametrize("case", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_product_matches_scipy(case: Scenario, fmt: str, dtype: np.dtype, device) -> None:
    if fmt in case.unsuitable:
        with pytest.raises(clspmv.UnsuitableFormatError, match=r"would need \d+ bytes .* CSR"):
            clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
        return
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    assert M.shape == case.csr.shape and M.dtype == dtype and M.format == fmt
    y = M.matvec(case.x)
    assert isinstance(y, np.ndarray) and y.dtype == dtype
    assert_matches(y, oracle_matrix(fmt, case.csr, dtype), case.x, dtype)


@pytest.mark.parametrize("case", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_round_trip(case: Scenario, fmt: str, device) -> None:
    if fmt in case.unsuitable:
        pytest.skip("format refuses this matrix (checked in test_product_matches_scipy)")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=np.float64)
    back = M.to_scipy()
    want = oracle_matrix(fmt, case.csr)
    assert back.shape == want.shape
    assert back.nnz == want.nnz  # explicit zeros are kept (except by DIA)
    assert np.array_equal(back.indptr, want.indptr)
    assert np.array_equal(back.indices, want.indices)
    assert np.array_equal(back.data, want.data, equal_nan=True)


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_alpha_beta(alpha: float, beta: float, fmt: str, dtype: np.dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    if beta == 0:
        y0 = np.full(M.shape[0], np.nan, dtype)  # BLAS: beta = 0 never reads y
    else:
        y0 = np.random.default_rng(2).standard_normal(M.shape[0]).astype(dtype)
    y = y0.copy()
    out = M.matvec(case.x, y, alpha=alpha, beta=beta)
    assert out is y  # numpy y is updated in place
    assert_matches(y, case.csr, case.x, dtype, alpha, beta, y0)


def test_pyopencl_arrays(fmt: str, dtype: np.dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "empty-rows")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    q = device.queue
    x_dev = cl_array.to_device(q, case.x.astype(dtype))
    y_dev = M.matvec(x_dev)
    assert isinstance(y_dev, cl_array.Array) and y_dev.dtype == dtype
    assert_matches(y_dev.get(), case.csr, case.x, dtype)
    # in place, with beta, from a float64 x (converted on the device)
    y0 = np.random.default_rng(3).standard_normal(M.shape[0]).astype(dtype)
    y_in = cl_array.to_device(q, y0)
    out = M.matvec(cl_array.to_device(q, case.x), y_in, alpha=-1.0, beta=0.5)
    assert out is y_in
    assert_matches(y_in.get(), case.csr, case.x, dtype, -1.0, 0.5, y0)


def test_matmul_operator_and_linear_operator(fmt: str, device) -> None:
    A = next(s for s in SCENARIOS if s.name == "poisson2d").csr
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float64)
    x = np.linspace(-1, 1, A.shape[1])
    assert_matches(M @ x, A, x, np.float64)
    op = M.aslinearoperator()
    assert op.shape == A.shape and op.dtype == np.float64
    b = np.ones(A.shape[0])
    from scipy.sparse.linalg import cg
    sol, info = cg(op, b, rtol=1e-10, maxiter=2000)
    assert info == 0
    np.testing.assert_allclose(A @ sol, b, atol=1e-7)


def test_real_matrices(shared_matrices: str, fmt: str, dtype: np.dtype, device) -> None:
    import glob
    import os

    files = sorted(glob.glob(os.path.join(shared_matrices, "*.mtx.gz")))
    assert files, f"no .mtx.gz files in {shared_matrices}"
    refused = []
    for path in files:
        A = clspmv.io.read(path)
        try:
            M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
        except clspmv.UnsuitableFormatError:
            assert FORMAT_CLASSES[fmt].pads, f"{fmt} refused {path}"
            refused.append(path)
            continue
        x = np.random.default_rng(5).standard_normal(A.shape[1])
        assert_matches(M.matvec(x), oracle_matrix(fmt, A, dtype), x, dtype)
    assert len(refused) < len(files)


@pytest.mark.parametrize("layout", ["coo", "csr-with-duplicates"])
def test_duplicates_summed_before_rounding(layout: str, fmt: str, device) -> None:
    # 1 + 2**-30 and -1 cancel to 2**-30 in float64; rounded to float32 first they would give 0.
    vals = np.array([1 + 2.0**-30, -1.0, 3.0, 0.5])
    if layout == "coo":
        A = sp.coo_matrix((vals, ([0, 0, 1, 2], [0, 0, 1, 2])), shape=(3, 3))
    else:
        A = sp.csr_matrix((vals, np.array([0, 0, 1, 2]), np.array([0, 2, 3, 4])), shape=(3, 3))
        assert not A.has_canonical_format
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float32)
    np.testing.assert_array_equal(M @ np.ones(3), np.float32([2.0**-30, 3.0, 0.5]))


def test_gpu_work_groups(fmt: str, device) -> None:
    """On a GPU a format launches work-groups of its ``gpu_work_group`` (set from the sweep), on
    other devices of 256 (or the device's maximum); the products are right either way."""
    gpu, cpu = (dataclasses.replace(device, type=t) for t in ("gpu", "cpu"))
    A = sp.random(300, 200, density=0.05, format="csr", random_state=3)
    x = np.random.default_rng(4).standard_normal(200)
    default = min(256, device.max_work_group_size)
    for dev, expected in ((gpu, FORMAT_CLASSES[fmt].gpu_work_group or default),
                          (cpu, default)):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=np.float32)
        assert M.work_group_size == min(expected, device.max_work_group_size)
        assert_matches(M.matvec(x.astype(np.float32)), A, x.astype(np.float32), np.float32,
                       zeros_absent=FORMAT_CLASSES[fmt].zeros_absent)
