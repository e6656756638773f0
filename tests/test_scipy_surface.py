"""The scipy.sparse names of DeviceMatrix against scipy's own results on the same matrix, pickling,
and a user's PyOpenCL Device, Context and CommandQueue in place of a device."""

from __future__ import annotations

import pickle
import warnings
from unittest import mock

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import matrix_state

from oracle import assert_matches

FORMATS = ("csr-vector", "sell", "coo", "ellr")


def _matrix(m: int = 70, n: int = 50, seed: int = 3) -> sp.csr_array:
    return sp.random_array((m, n), density=0.1, format="csr", dtype=np.float64,
                           random_state=np.random.default_rng(seed))


def _columns(Y: np.ndarray, A: sp.sparray, X: np.ndarray, dtype: np.dtype) -> None:
    assert Y.shape == (A.shape[0], X.shape[1])
    for j in range(X.shape[1]):
        assert_matches(Y[:, j], A, X[:, j], dtype)


@pytest.mark.parametrize("fmt", FORMATS)
def test_products_as_scipy(device, dtype, fmt):
    A = _matrix()
    At = A.T.tocsr()
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
    rng = np.random.default_rng(0)
    x, z = rng.random(50), rng.random(70)
    X, Z = rng.random((50, 3)), rng.random((4, 70))
    assert M.ndim == 2 and M.shape == A.shape and M.dtype == dtype
    assert M.T.shape == (50, 70) and M.T.T is M and M.T.dtype == dtype and M.T.ndim == 2
    assert_matches(M @ x, A, x, dtype)
    assert_matches(M.dot(x), A, x, dtype)
    _columns(M.dot(X), A, X, dtype)
    _columns(M @ X, A, X, dtype)
    assert_matches(M.T @ z, At, z, dtype)
    assert_matches(M.T.dot(z), At, z, dtype)
    _columns(M.T @ Z.T, At, Z.T, dtype)
    assert_matches(M.T.T @ x, A, x, dtype)
    assert_matches(z @ M, At, z, dtype)          # numpy defers to __rmatmul__
    ZM = Z @ M
    assert isinstance(ZM, np.ndarray) and ZM.shape == (4, 50)
    _columns(ZM.T, At, Z.T, dtype)
    assert_matches(x @ M.T, A, x, dtype)
    np.testing.assert_array_equal(M.toarray(), A.toarray().astype(dtype))
    np.testing.assert_array_equal(M.todense(), A.todense().astype(dtype))
    assert type(M.todense()) is np.ndarray        # sparray semantics, not np.matrix
    np.testing.assert_array_equal(M.T.toarray(), A.toarray().T.astype(dtype))


def test_products_on_device_arrays(device):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, dtype=np.float32)
    z = np.random.default_rng(1).random(70).astype(np.float32)
    zd = cl_array.to_device(device.queue, z)
    assert_matches((M.T @ zd).get(), A.T.tocsr(), z, np.float32)
    assert_matches((zd @ M).get(), A.T.tocsr(), z, np.float32)
    Zd = cl_array.to_device(device.queue, np.ones((70, 2), np.float32))
    assert (M.T @ Zd).shape == (50, 2)
    ZM = (Zd.T @ M).get()
    assert ZM.shape == (2, 50)
    np.testing.assert_allclose(ZM, np.ones((2, 70)) @ A.toarray(), rtol=1e-5)


def test_nested_lists_as_operands(device):
    """Lists are converted once, as numpy arrays: ``M @ X`` and ``X @ M`` (the latter needs
    ``X.T``, which a list lacks) as scipy computes them."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, dtype=np.float64)
    X = np.random.default_rng(2).random((A.shape[1], 2))
    W = np.random.default_rng(3).random((2, A.shape[0]))
    np.testing.assert_allclose(M @ X.tolist(), A @ X, rtol=1e-12)
    np.testing.assert_allclose(W.tolist() @ M, W @ A.toarray(), rtol=1e-12)


def test_transposed_view_passes_arguments(device):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=device)
    z = np.random.default_rng(5).random(70)
    y = np.ones(50)
    out = M.T.matvec(z, y, alpha=2.0, beta=0.5)
    assert out is y
    assert_matches(y, A.T.tocsr(), z, np.float64, alpha=2.0, beta=0.5, y0=np.ones(50))
    X = np.asfortranarray(np.random.default_rng(6).random((3, 70)))
    np.testing.assert_allclose(X @ M, X @ A.toarray(), rtol=1e-12)
    np.testing.assert_allclose(M.T.rmatmat(np.ones((50, 2))), A.toarray() @ np.ones((50, 2)),
                               rtol=1e-12)
    assert M.T.format == M.format and M.T.device is device and M.T.nnz == M.nnz
    assert "transposed view" in repr(M.T)
    with pytest.raises(AttributeError, match="no attribute"):
        _ = M.T.missing


def test_nnz_counts_stored_entries_as_scipy(device):
    rows = np.array([0, 0, 1, 2, 2, 3])
    cols = np.array([1, 1, 2, 0, 3, 3])
    vals = np.array([1.0, 2.0, 0.0, 3.0, 4.0, 0.0])  # a duplicate and two explicit zeros
    A = sp.coo_matrix((vals, (rows, cols)), shape=(4, 5))
    B = A.tocsr()
    B.sum_duplicates()
    for fmt in ("csr-scalar", "ellr", "coo", "dia"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
        assert M.nnz == B.nnz == 5, fmt
        assert M.T.nnz == 5
    assert A.nnz == 6  # scipy counts the duplicate before summing
    dense = clspmv.DeviceMatrix.from_scipy(A.toarray(), device=device)
    assert dense.nnz == 3  # a dense input's zeros are not stored
    csc = clspmv.DeviceMatrix.from_scipy(A.tocsc(), device=device)
    assert csc.nnz == 5
    Ms = clspmv.DeviceMatrix.from_scipy(B, format="csr-scalar", device=device)
    assert Ms.retuned(unroll=2).nnz == 5


def test_astype_and_copy(device):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device,
                                       sigma=2 * device.simd_width)  # 1 or a multiple of C
    for target in (np.float32, "mixed", np.float64):
        if not device.supports(target):
            continue
        N = M.astype(target)
        assert N is not M and N.format == "sell" and N.device is device
        assert N.params == M.params and N.nnz == M.nnz
        assert N.precision == np.dtype(target).name if target != "mixed" else "mixed"
        np.testing.assert_allclose(N.toarray(), A.toarray(), rtol=1e-6)
    C = M.copy()
    assert C is not M and C.precision == M.precision and C.params == M.params
    np.testing.assert_array_equal(C.toarray(), M.toarray())
    assert M.T.copy().T.shape == M.shape
    assert M.T.astype(np.float32).dtype == np.float32


def test_unsupported_operations_say_what_to_use(device):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=device)
    with pytest.raises(TypeError, match="length is ambiguous; use M.nnz or M.shape"):
        len(M)
    with pytest.raises(TypeError, match="length is ambiguous"):
        len(M.T)
    for bad in (lambda: np.asarray(M), lambda: np.array(M.T)):
        with pytest.raises(TypeError, match="toarray"):
            bad()
    with pytest.raises(TypeError, match="to_scipy"):
        M @ A.T
    with pytest.raises(TypeError, match="to_scipy"):
        A.T @ M
    with pytest.raises(TypeError, match="dense vectors"):
        M @ M.T
    with pytest.raises(ValueError, match="Scalar operands"):
        M @ 2.0
    with pytest.raises(NotImplementedError, match="M @ x"):
        M * np.ones(50)
    with pytest.raises(NotImplementedError, match="M @ x"):
        2 * M
    with pytest.raises(NotImplementedError, match="M.to_scipy"):
        M + M
    with pytest.raises(NotImplementedError, match="alpha"):
        _ = -M
    with pytest.raises(NotImplementedError, match="alpha"):
        M.dot(3.0)
    with pytest.raises(ValueError, match="ambiguous"):
        bool(M)


@pytest.mark.parametrize("precision", ["float32", "mixed", "float64"])
@pytest.mark.parametrize("fmt", ["sell", "csr-adaptive", "dia", "ell", "ellr-t", "hyb"])
def test_pickle_round_trip(device, precision, fmt):
    if not device.supports(precision):
        pytest.skip("no fp64")
    A = _matrix() + sp.eye_array(70, 50)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=precision)
    data = pickle.dumps(M)
    for internal in (b"Sell", b"CsrAdaptive", b"Dia", b"Buffer", b"formats"):
        assert internal not in data
    N = pickle.loads(data)
    assert (N.format, N.precision, N.params, N.nnz, N.shape) == \
        (M.format, M.precision, M.params, M.nnz, M.shape)
    assert N.device is device
    x = np.random.default_rng(2).random(50)
    np.testing.assert_array_equal(N @ x, M @ x)
    T = pickle.loads(pickle.dumps(M.T))
    np.testing.assert_array_equal(T.toarray(), M.T.toarray())


def test_pickle_keeps_blocks_and_csc(device):
    A = _matrix()
    cmap = np.arange(50) * 2
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, column_map=cmap, n_cols=120)
    N = pickle.loads(pickle.dumps(M))
    assert N.shape == (70, 120)
    np.testing.assert_array_equal(N.toarray(), M.toarray())
    C = clspmv.DeviceMatrix.from_scipy(sp.csc_matrix(A), device=device)
    D = pickle.loads(pickle.dumps(C))
    assert D.transposed_storage and D.shape == A.shape
    np.testing.assert_array_equal(D.toarray(), A.toarray())


def test_unpickle_without_the_device_goes_to_the_default(device):
    M = clspmv.DeviceMatrix.from_scipy(_matrix(), device=device, dtype=np.float32)
    data = pickle.dumps(M)
    others = [d for d in clspmv.devices() if d is not device]
    with mock.patch.object(matrix_state, "devices", lambda: others), \
            mock.patch.object(matrix_state, "select_device", lambda: device):
        with pytest.warns(RuntimeWarning, match="not present here; it goes to the default"):
            N = pickle.loads(data)
    assert N.device is device
    np.testing.assert_array_equal(N.toarray(), M.toarray())
    state = matrix_state.host_state(M._fmt, False, None, M.nnz, device)
    state["version"] = 99
    with pytest.raises(clspmv.ClspmvError, match="state version 99, this one reads 1"):
        matrix_state.restore(clspmv.DeviceMatrix, state)


# -- a user's PyOpenCL objects ---------------------------------------------------------------
def test_pyopencl_device_context_and_queue(device):
    A = _matrix()
    x = np.random.default_rng(4).random(50)
    assert clspmv.select_device(device.cl_device) is device
    ctx = cl.Context([device.cl_device])
    d_ctx = clspmv.select_device(ctx)
    assert d_ctx.context is ctx and d_ctx.profiling and clspmv.select_device(ctx) is d_ctx
    queue = cl.CommandQueue(ctx)  # no profiling
    d_q = clspmv.select_device(queue)
    assert d_q.queue is queue and d_q.context == ctx and not d_q.profiling
    assert d_q.name == device.name
    for spec in (device.cl_device, ctx, queue):
        M = clspmv.DeviceMatrix.from_scipy(A, device=spec)
        assert_matches(M @ x, A, x, np.float64)
    # arrays of the user's context are taken as they are
    M = clspmv.DeviceMatrix.from_scipy(A, device=queue)
    xd = cl_array.to_device(queue, x)
    yd = M @ xd
    assert yd.context == ctx and M.last_transfers == {"x": "device", "y": "device"}
    assert_matches(yd.get(), A, x, np.float64)
    # an array of another queue of the same context: synchronised, not copied
    other = cl.CommandQueue(ctx)
    x2 = cl_array.to_device(other, x)
    y2 = cl_array.zeros(other, 70, np.float64)
    M.matvec(x2, y2)
    assert_matches(y2.get(), A, x, np.float64)
    # an array of clspmv's own context is another context's
    with pytest.raises(ValueError, match="another OpenCL context"):
        M @ cl_array.to_device(device.queue, x)


def test_pyopencl_objects_refused_clearly(device):
    ctx = cl.Context([device.cl_device])
    ooo = cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE
    try:
        queue = cl.CommandQueue(ctx, properties=ooo)
    except cl.Error:
        pytest.skip("the device has no out-of-order queues")
    with pytest.raises(clspmv.DeviceError, match="in-order queue"):
        clspmv.select_device(queue)


def test_multi_device_context_needs_a_queue(device):
    fake = mock.MagicMock(spec=cl.Context)
    fake.devices = [device.cl_device, device.cl_device]
    with pytest.raises(clspmv.DeviceError, match="pass a CommandQueue"):
        clspmv.select_device(fake)


def test_warnings_free_product(device):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        M = clspmv.DeviceMatrix.from_scipy(_matrix(), device=device)
        M.T @ np.ones(70)
