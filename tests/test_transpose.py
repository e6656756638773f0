"""Transpose products y = alpha A^T x + beta y (both methods) and CSC input, against scipy."""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.device_facts import opencl_c_versions
from clspmv.formats import FORMAT_CLASSES
from clspmv.formats.base import atomic_add_kind

from oracle import assert_matches, oracle_matrix
from scenarios import ALPHA_BETA, SCENARIOS, Scenario

METHODS = ("atomic", "transpose")


def transposed(fmt: str, case: Scenario) -> sp.csr_matrix:
    """The oracle's A^T (DIA drops explicit zeros)."""
    return oracle_matrix(fmt, case.csr).T.tocsr()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_rmatvec_matches_scipy(case: Scenario, method: str, fmt: str, dtype: np.dtype,
                               device) -> None:
    if fmt in case.unsuitable:
        pytest.skip("format refuses this matrix (checked in test_product_matches_scipy)")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    y = M.rmatvec(case.xt, method=method)
    assert isinstance(y, np.ndarray) and y.dtype == dtype and y.shape == (M.shape[1],)
    assert_matches(y, transposed(fmt, case), case.xt, dtype)


@pytest.mark.parametrize("alpha,beta", ALPHA_BETA)
def test_rmatvec_alpha_beta(alpha: float, beta: float, fmt: str, dtype: np.dtype,
                            device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    n = M.shape[1]
    if beta == 0:
        y0 = np.full(n, np.nan, dtype)  # BLAS: beta = 0 never reads y
    else:
        y0 = np.random.default_rng(2).standard_normal(n).astype(dtype)
    for method in METHODS:
        y = y0.copy()
        out = M.rmatvec(case.xt, y, alpha=alpha, beta=beta, method=method)
        assert out is y
        assert_matches(y, case.csr.T.tocsr(), case.xt, dtype, alpha, beta, y0)


def test_rmatvec_pyopencl_arrays(fmt: str, dtype: np.dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "empty-rows")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    q = device.queue
    y_dev = M.rmatvec(cl_array.to_device(q, case.xt.astype(dtype)))
    assert isinstance(y_dev, cl_array.Array) and y_dev.shape == (M.shape[1],)
    assert_matches(y_dev.get(), case.csr.T.tocsr(), case.xt, dtype)
    y0 = np.random.default_rng(3).standard_normal(M.shape[1]).astype(dtype)
    y_in = cl_array.to_device(q, y0)
    out = M.rmatvec(cl_array.to_device(q, case.xt), y_in, alpha=-1.0, beta=0.5,
                    method="transpose")
    assert out is y_in
    assert_matches(y_in.get(), case.csr.T.tocsr(), case.xt, dtype, -1.0, 0.5, y0)


def test_transpose_copy_is_built_once_and_counted(device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format="sell", device=device, dtype=np.float64)
    base = M.nbytes
    M.rmatvec(case.xt, method="auto")  # atomic kernel: nothing is built
    assert M.nbytes == base
    copy_bytes = M.prepare_transpose()
    assert copy_bytes > 0 and M.nbytes == base + copy_bytes
    assert M.prepare_transpose() == copy_bytes and M.nbytes == base + copy_bytes  # once
    assert_matches(M.rmatvec(case.xt), case.csr.T.tocsr(), case.xt, np.float64)  # auto: copy
    M.release_transpose()
    assert M.nbytes == base
    assert_matches(M.rmatvec(case.xt, method="atomic"), case.csr.T.tocsr(), case.xt,
                   np.float64)


def test_transpose_copy_falls_back_to_csr_vector(device) -> None:
    """ELL accepts A (short rows) but refuses A^T (one dense row): the copy is csr-vector."""
    long_row = next(s for s in SCENARIOS if s.name == "long-row").csr
    A = long_row.T.tocsr()
    M = clspmv.DeviceMatrix.from_scipy(A, format="ell", device=device, dtype=np.float64)
    xt = np.random.default_rng(4).standard_normal(A.shape[0])
    before = M.nbytes
    y = M.rmatvec(xt, method="transpose")
    assert M.nbytes > before
    assert_matches(y, A.T.tocsr(), xt, np.float64)


def test_unknown_method(device) -> None:
    M = clspmv.DeviceMatrix.from_scipy(sp.eye(4), device=device, dtype=np.float32)
    with pytest.raises(ValueError, match="method must be one of 'auto', 'atomic', 'transpose', "
                                         "got 'csc'"):
        M.rmatvec(np.ones(4), method="csc")


def test_rmatvec_shapes_checked(device) -> None:
    A = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, dtype=np.float32)
    with pytest.raises(ValueError, match=r"x has shape \(20,\), expected \(30,\)"):
        M.rmatvec(np.ones(20))
    with pytest.raises(ValueError, match=r"y has shape \(30,\), expected \(20,\)"):
        M.rmatvec(np.ones(30), np.zeros(30, np.float32))


def test_float64_atomics_missing(device) -> None:
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64")
    no_int64 = dataclasses.replace(device, int64_atomics=False)
    case = next(s for s in SCENARIOS if s.name == "tall")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format="csr-scalar", device=no_int64,
                                       dtype=np.float64)
    with pytest.raises(clspmv.DeviceError,
                       match=r"no 64-bit integer atomics \(cl_khr_int64_base_atomics\), which "
                             r"the float64 transpose kernel of format 'csr-scalar' needs; use "
                             r"method='transpose'"):
        M.rmatvec(case.xt, method="atomic")
    base = M.nbytes
    assert_matches(M.rmatvec(case.xt), case.csr.T.tocsr(), case.xt, np.float64)  # auto
    assert M.nbytes > base  # auto built the transposed copy
    # float32 needs only 32-bit atomics; DIA's transpose kernel needs none
    M32 = clspmv.DeviceMatrix.from_scipy(case.A, format="csr-scalar", device=no_int64,
                                         dtype=np.float32)
    assert_matches(M32.rmatvec(case.xt, method="atomic"), case.csr.T.tocsr(), case.xt,
                   np.float32)
    D = clspmv.DeviceMatrix.from_scipy(case.A, format="dia", device=no_int64, dtype=np.float64)
    assert_matches(D.rmatvec(case.xt, method="atomic"), oracle_matrix("dia", case.csr).T.tocsr(),
                   case.xt, np.float64)


@pytest.mark.parametrize("fmt_name", ["coo", "csr-vector", "sell"])
def test_native_float_atomics_build(fmt_name: str, dtype: np.dtype, device) -> None:
    """On a device reporting cl_ext_float_atomics the atomic kernels are built with -cl-std and
    -DNATIVE_ATOMICS (here the compiler's feature macro decides between the native add and the
    CAS loop); a -cl-std the compiler refuses falls back to the CAS loop with a warning."""
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    if (3, 0) in opencl_c_versions(device.cl_device):
        native = dataclasses.replace(device, float_atomics_std="CL3.0")
        M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt_name, device=native, dtype=dtype)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            y = M.rmatvec(case.xt, method="atomic")
        assert_matches(y, case.csr.T.tocsr(), case.xt, dtype)
    if device.float_atomics_std is None:  # no extension: always the loop
        assert atomic_add_kind(device, dtype) == "compare-and-swap"
    bogus = dataclasses.replace(device, float_atomics_std="CL9.9")
    with pytest.warns(RuntimeWarning, match="does not build with native float atomics on .*; "
                                            "using compare-and-swap atomics"):
        M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt_name, device=bogus, dtype=dtype)
        y = M.rmatvec(case.xt, method="atomic")
    assert_matches(y, case.csr.T.tocsr(), case.xt, dtype)
    assert atomic_add_kind(bogus, dtype) == "compare-and-swap"


# -- CSC input --------------------------------------------------------------------------------
CSC_CASES = [s for s in SCENARIOS if s.name in ("0x5", "5x0", "tall", "wide", "imbalanced",
                                                  "explicit-zeros", "duplicates")]


@pytest.mark.parametrize("case", CSC_CASES, ids=[s.name for s in CSC_CASES])
def test_csc_input(case: Scenario, fmt: str, device) -> None:
    dtype = np.float64 if device.fp64 else np.float32
    csc = sp.csc_matrix(case.A)
    if fmt in case.unsuitable:
        pytest.skip("format refuses this matrix")
    try:
        M = clspmv.DeviceMatrix.from_scipy(csc, format=fmt, device=device, dtype=dtype)
    except clspmv.UnsuitableFormatError:
        assert FORMAT_CLASSES[fmt].pads  # they pad A^T's rows
        pytest.skip("format refuses A^T")
    A = oracle_matrix(fmt, case.csr)
    assert M.transposed_storage and M.shape == A.shape
    back = M.to_scipy()
    assert isinstance(back, sp.csr_array) and back.shape == A.shape
    assert np.array_equal(back.indptr, A.indptr) and np.array_equal(back.indices, A.indices)
    # duplicates are summed in column order here, in row order by the oracle
    np.testing.assert_allclose(back.data, A.data, rtol=1e-12, atol=1e-14)
    for method in METHODS:
        assert_matches(M.matvec(case.x, method=method), A, case.x, dtype)
        assert_matches(M.rmatvec(case.xt, method=method), A.T.tocsr(), case.xt, dtype)
    X = np.random.default_rng(6).standard_normal((A.shape[1], 3))
    Y = M.matmat(X)
    assert Y.shape == (A.shape[0], 3)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype)
    np.testing.assert_allclose(M.diagonal(), A.diagonal().astype(dtype), rtol=1e-6)


def test_csc_array_and_diagonal(device) -> None:
    rng = np.random.default_rng(7)
    A = sp.random(40, 25, density=0.3, format="csc", random_state=rng)
    A = sp.csc_array(A + sp.eye(40, 25, format="csc"))
    M = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=device, dtype=np.float32)
    assert M.transposed_storage and M.shape == (40, 25)
    np.testing.assert_array_equal(M.diagonal(), A.diagonal().astype(np.float32))
    x = rng.standard_normal(25)
    assert_matches(M @ x, sp.csr_matrix(A), x, np.float32)
    csr = clspmv.DeviceMatrix.from_scipy(A.tocsr(), format="coo", device=device,
                                         dtype=np.float32)
    assert not csr.transposed_storage
    np.testing.assert_array_equal(csr.diagonal(), M.diagonal())
