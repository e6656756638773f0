"""scipy.sparse array names of DeviceMatrix and of its transposed view, against scipy and dense
numpy on the same matrices: the reductions (``sum``, ``trace``, ``diagonal``,
``count_nonzero``, ``size``), the views and conversions (``transpose``, ``conj``, ``tocsr``,
``to_scipy`` as ``csr_array``), and the errors (types and messages) of what a device matrix
does not do. ``format="csr"`` and the format parameters: tests/test_matrix_format_choice.py."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.unsupported import UnsupportedAttributeError, UnsupportedOperationError

REDUCED_FORMATS = ("csr-vector", "coo", "dia")
"""A CSR kernel, the atomic one and the one that drops explicit zeros."""


def _explicit_zeros(m: int, n: int, seed: int) -> sp.csr_array:
    """A random m x n matrix (about 30 % filled) with explicit zeros, duplicates summed in, and
    rows 1 and 4 (where present) empty."""
    rng = np.random.default_rng(seed)
    count = int(0.3 * m * n)
    rows, cols = rng.integers(0, m, count), rng.integers(0, n, count)
    vals = rng.uniform(-1.0, 1.0, count)
    vals[::4] = 0.0
    keep = ~np.isin(rows, (1, 4))
    out = sp.csr_array((vals[keep], (rows[keep], cols[keep])), shape=(m, n))
    out.sum_duplicates()
    return out


MATRICES = {
    "tall": lambda: _explicit_zeros(40, 23, 1),
    "wide": lambda: _explicit_zeros(6, 31, 2),
    "square": lambda: _explicit_zeros(30, 30, 3),
    "0x7": lambda: sp.csr_array((0, 7)),
    "5x0": lambda: sp.csr_array((5, 0)),
}


def _upload(A: sp.csr_array, fmt: str, device: clspmv.Device, dtype: object,
            csc: bool = False) -> clspmv.DeviceMatrix:
    try:
        return clspmv.DeviceMatrix.from_scipy(A.tocsc() if csc else A, format=fmt,
                                              device=device, dtype=dtype)
    except clspmv.UnsuitableFormatError:
        pytest.skip(f"{fmt} refuses this matrix")


def _close(got: object, want: object, dtype: np.dtype, scale: float) -> None:
    eps = np.finfo(dtype).eps
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * max(scale, 1.0))


# -- reductions --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", MATRICES)
@pytest.mark.parametrize("fmt", REDUCED_FORMATS)
@pytest.mark.parametrize("precision", ["float32", "mixed", "float64"])
def test_reductions_match_scipy(device, name, fmt, precision):
    """sum (every axis spelling), trace, diagonal, count_nonzero and size of M, of M.T and of a
    CSC upload (transposed storage), against dense numpy and scipy's csr_array."""
    if not device.supports(precision):
        pytest.skip("no fp64")
    A = MATRICES[name]()
    assert 0 in A.shape or np.count_nonzero(A.data) < A.nnz  # the case has explicit zeros
    for csc in (False, True):
        M = _upload(A, fmt, device, precision, csc)
        value = np.dtype(M.dtype)
        stored_values = A.astype(value)
        if fmt == "dia":
            stored_values.eliminate_zeros()  # dia stores no explicit zeros
        dense = A.toarray().astype(value)
        scale = float(np.abs(A.toarray()).sum())
        for view, ref, host in ((M, dense, stored_values), (M.T, dense.T, stored_values.T)):
            total = view.sum()
            assert isinstance(total, np.generic) and total.dtype == value
            _close(total, dense.astype(np.float64).sum(), value, scale)
            assert np.sum(view) == total  # numpy's sum calls M.sum
            for axis in (0, 1, -1, -2):
                sums = view.sum(axis=axis)
                assert type(sums) is np.ndarray and sums.dtype == value
                assert sums.shape == (ref.shape[1 - axis % 2],)
                _close(sums, ref.astype(np.float64).sum(axis=axis), value, scale)
            for both in ((0, 1), (1, -2)):
                _close(view.sum(axis=both), total, value, scale)
            for k in range(-ref.shape[0] - 1, ref.shape[1] + 2):
                diag = view.diagonal(k)
                assert diag.dtype == value
                np.testing.assert_array_equal(diag, np.diagonal(ref, k))
                np.testing.assert_array_equal(diag, host.diagonal(k))
                trace = view.trace(offset=k)
                assert isinstance(trace, np.generic) and trace.dtype == value
                _close(trace, host.trace(k), value, scale)
            np.testing.assert_array_equal(view.diagonal(), np.diagonal(ref))
            assert view.count_nonzero() == np.count_nonzero(ref) == host.count_nonzero()
            assert type(view.count_nonzero()) is type(host.count_nonzero()) is np.int64
            for axis in (0, 1, -1):
                counts = view.count_nonzero(axis=axis)
                assert counts.shape == (ref.shape[1 - axis % 2],)
                np.testing.assert_array_equal(counts, np.count_nonzero(ref, axis=axis))
            # size is scipy's: the stored values (explicit zeros included, also by dia), not m * n
            assert view.size == view.nnz == A.nnz == A.size


def test_sum_dtype_and_out(device):
    A = MATRICES["tall"]()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, dtype=np.float32)
    ref = A.toarray()
    narrow = M.sum(axis=1, dtype=np.float16)
    assert narrow.dtype == np.float16
    np.testing.assert_allclose(narrow, ref.sum(axis=1), rtol=2e-3, atol=2e-3)
    assert M.sum(dtype=np.float32).dtype == np.float32
    out = np.full(23, np.nan)
    assert M.sum(axis=0, out=out) is out  # cast into out's float64
    np.testing.assert_allclose(out, ref.sum(axis=0), rtol=1e-5, atol=1e-5)
    total = np.zeros((), np.float64)
    M.sum(out=total)
    np.testing.assert_allclose(total, ref.sum(), rtol=1e-5)


def test_reduction_arguments_refused(device):
    M = clspmv.DeviceMatrix.from_scipy(MATRICES["tall"](), format="coo", device=device,
                                       dtype=np.float32)
    for view in (M, M.T):
        with pytest.raises(ValueError, match="axis 2 is out of range for a 2-D matrix"):
            view.sum(axis=2)
        with pytest.raises(ValueError, match="axis -3 is out of range"):
            view.count_nonzero(axis=-3)
        with pytest.raises(TypeError, match="axis must be 0, 1, -1, -2, None or a tuple"):
            view.sum(axis=1.0)
        with pytest.raises(ValueError, match=r"duplicate value in axis \(0, -2\)"):
            view.sum(axis=(0, -2))
        with pytest.raises(ValueError, match=r"axis=\(\) sums nothing"):
            view.sum(axis=())
        with pytest.raises(ValueError, match=r"sum\(dtype=float64\): the device returns its "
                                             r"sums in float32; .*M.to_scipy\(\).sum\(dtype="):
            view.sum(dtype=np.float64)
        with pytest.raises(ValueError, match=r"sum\(dtype=int64\)"):
            view.sum(axis=0, dtype=np.int64)
        with pytest.raises(ValueError, match=r"out has shape \(3,\), the sums along axis 0"):
            view.sum(axis=0, out=np.zeros(3))
        with pytest.raises(TypeError, match="k must be an integer .*got 1.5"):
            view.diagonal(1.5)
        with pytest.raises(TypeError, match="offset must be an integer .*got '1'"):
            view.trace("1")
        with pytest.raises(ValueError, match=r"axes=\(0, 1\): a 2-D matrix has one transpose"):
            view.transpose(axes=(0, 1))


# -- views and conversions ---------------------------------------------------------------------
def test_views_and_conversions(device):
    A = MATRICES["tall"]()
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype=np.float64)
    for view, ref in ((M, A), (M.T, A.T)):
        for host in (view.to_scipy(), view.tocsr(), view.tocsr(copy=True)):
            assert type(host) is sp.csr_array and host.dtype == np.float64
            assert host.has_sorted_indices and host.shape == ref.shape
            assert (host != ref).nnz == 0
    assert M.transpose() .T is M and M.transpose(axes=(1, 0)).shape == (23, 40)
    assert M.T.transpose() is M
    copied = M.transpose(copy=True)
    assert copied.T is not M and copied.shape == (23, 40)
    np.testing.assert_array_equal(copied.toarray(), A.toarray().T)
    for name in ("conj", "conjugate"):
        assert getattr(M, name)(copy=False) is M
        other = getattr(M, name)()  # scipy's default copies
        assert other is not M and other.format == M.format
        np.testing.assert_array_equal(other.toarray(), A.toarray())
        T = getattr(M.T, name)()
        assert T is not M.T and T.shape == (23, 40)
    view = M.T
    assert view.conj(copy=False) is view
    C = clspmv.DeviceMatrix.from_scipy(A.tocsc(), format="csr-scalar", device=device)
    assert type(C.to_scipy()) is sp.csr_array and (C.to_scipy() != A).nnz == 0
    mapped = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=device,
                                            column_map=np.arange(23) * 2, n_cols=50)
    back = mapped.to_scipy()
    assert type(back) is sp.csr_array and back.shape == (40, 50)
    np.testing.assert_array_equal(back[:, ::2].toarray()[:, :23], A.toarray())
    np.testing.assert_allclose(mapped.sum(axis=0)[::2][:23], A.toarray().sum(axis=0))
    assert not mapped.sum(axis=0)[1::2].any()


# -- what a device matrix does not do ----------------------------------------------------------
def test_every_scipy_array_name_works_or_says_what_to_use(device):
    M = clspmv.DeviceMatrix.from_scipy(MATRICES["square"](), format="ellr", device=device)
    names = [n for n in dir(sp.csr_array) if not n.startswith("_")] + ["data", "indptr"]
    present = {"T", "astype", "conj", "conjugate", "copy", "count_nonzero", "diagonal", "dot",
               "dtype", "format", "ndim", "nnz", "shape", "size", "sum", "toarray", "tocsr",
               "todense", "trace", "transpose"}
    for view, owner in ((M, "DeviceMatrix"), (M.T, "TransposedMatrix")):
        for name in names:
            if name in present:
                assert hasattr(view, name), name
                continue
            assert not hasattr(view, name) and getattr(view, name, None) is None
            with pytest.raises(UnsupportedAttributeError) as err:
                getattr(view, name)
            assert isinstance(err.value, (NotImplementedError, AttributeError,
                                          clspmv.ClspmvError))
            assert str(err.value).startswith(f"{owner}.{name} (a scipy.sparse name) ")
            assert "M.to_scipy()" in str(err.value), name
        with pytest.raises(UnsupportedAttributeError, match="element-wise.*M.to_scipy"
                                                            r"\(\).multiply on the host"):
            _ = view.multiply
        with pytest.raises(UnsupportedAttributeError, match="does not change after upload"):
            view.setdiag(1.0)
        with pytest.raises(UnsupportedAttributeError, match="M.to_scipy\\(\\).indptr reads"):
            _ = view.indptr
        # names of neither scipy arrays nor clspmv stay Python's, as on scipy's arrays
        spmatrix_only = [n for n in ("getnnz", "getformat") if n not in dir(sp.csr_array)]
        for name in [*spmatrix_only, "no_such_name"]:
            with pytest.raises(AttributeError, match=f"object has no attribute '{name}'") \
                    as err:
                getattr(view, name)
            assert not isinstance(err.value, UnsupportedOperationError)


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_comparisons_are_refused_not_identity(device, op):
    """M == M2 is element-wise in scipy.sparse, never identity: every comparison, with another
    device matrix, itself, a scalar or a scipy matrix, raises the error naming what to use;
    and a device matrix is unhashable, as scipy's sparse arrays are."""
    A = MATRICES["square"]()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    N = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    compare = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
               "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}[op]
    for left, right in ((M, N), (M, M), (M.T, N), (M, 1.0), (M, A), (M, sp.csr_matrix(A))):
        with pytest.raises(UnsupportedOperationError) as err:
            compare(left, right)
        assert str(err.value) == (
            f"M {op} B compares element by element in scipy.sparse, which a device matrix does "
            f"not do: compare on the host (M.to_scipy() {op} B; two device matrices hold the "
            "same entries where (M.to_scipy() != N.to_scipy()).nnz == 0); M is N tells whether "
            "they are the same object")
    for view in (M, M.T):
        with pytest.raises(TypeError, match="unhashable type"):
            hash(view)
    with pytest.raises(TypeError, match="unhashable type: 'csr_array'"):
        hash(A)  # as scipy's


def test_operators_say_what_to_use(device):
    M = clspmv.DeviceMatrix.from_scipy(MATRICES["square"](), format="csr-scalar", device=device)
    for view in (M, M.T):
        with pytest.raises(UnsupportedOperationError, match=r"M.to_scipy\(\)\[...\]"):
            view[0, 1]
        with pytest.raises(UnsupportedOperationError, match="does not change after upload"):
            view[0, 1] = 2.0
        with pytest.raises(UnsupportedOperationError, match="iterate over M.to_scipy"):
            list(view)
        for expr, host, bad in (("abs(M)", "abs(M.to_scipy())", abs),
                                ("M / B", "M.to_scipy() / B", lambda v: 1 / v),
                                ("M - B", "M.to_scipy() - B", lambda v: v - v)):
            with pytest.raises(UnsupportedOperationError) as err:
                bad(view)
            assert str(err.value) == (f"element-wise arithmetic on a device matrix is not "
                                      f"supported: {expr} needs scipy.sparse on the host "
                                      f"({host}), then DeviceMatrix.from_scipy again")
        with pytest.raises(NotImplementedError, match="use M @ x"):
            view * 2.0
        with pytest.raises(NotImplementedError, match="alpha=-1.0"):
            _ = -view
