"""Hostile inputs: every one is refused with an error that names the problem and the fix, or
accepted with scipy's and numpy's meaning (checked against them); nothing silently wrong.

Matrices (values that are not real numbers, shapes, masked and corrupt scipy matrices, every
scipy input format, the default dtype that never rounds), vectors and scalars, buffers beyond
the device's largest allocation, format parameters of the wrong type, round trips of every format
and variant through pickle, copy and astype, and pickled states that clspmv did not write."""

from __future__ import annotations

import copy
import dataclasses
import decimal
import fractions
import pickle

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats.csr_merge import tile_items
from clspmv.matrix_state import restore

from oracle import ZEROS_ABSENT, assert_matches, oracle_matrix

NOT_REAL = (r"has dtype {}; expected real numbers \(bool, integers or floats\): convert it "
            r"explicitly")
OBJECTS = r"object; expected real numbers .* explicitly \(None would become NaN\), e.g. "
COMPLEX = (r"complex matrices are not supported \(A has dtype complex128\): clspmv has no "
           r"complex kernels; take A.real explicitly if the imaginary parts are zero")


def _matrix(m: int = 40, n: int = 30, seed: int = 0) -> sp.csr_matrix:
    return sp.random(m, n, density=0.15, format="csr", random_state=seed)


# -- matrix values --------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, np.float64, np.float32, "mixed"])
def test_complex_matrices_refused_whatever_the_dtype(device, dtype) -> None:
    A = _matrix().astype(np.complex128)
    A.data *= 1 + 1j
    for given in (A, A.toarray(), sp.csr_array(A)):
        with pytest.raises(TypeError, match=COMPLEX):
            clspmv.DeviceMatrix.from_scipy(given, format="csr-vector", device=device, dtype=dtype)


@pytest.mark.parametrize("values, shown", [
    (np.array([[1.0, None], [None, 2.0]], dtype=object), "A has dtype " + OBJECTS),
    (np.array([[1, 2], [3, 4]], dtype=object), "A has dtype " + OBJECTS),
    (np.array([["1", "2"], ["3", "4"]]), "A " + NOT_REAL.format("<U1")),
    (np.array([[1, 2]], dtype="datetime64[s]"), "A " + NOT_REAL.format(r"datetime64\[s\]")),
    (np.array([[1, 2]], dtype="timedelta64[s]"), "A " + NOT_REAL.format(r"timedelta64\[s\]")),
    (np.zeros((2, 2), dtype=[("a", "f8")]), "A " + NOT_REAL.format(r"\[\('a', '<f8'\)\]")),
])
def test_non_numeric_matrices_refused(device, values, shown) -> None:
    with pytest.raises(TypeError, match=shown):
        clspmv.DeviceMatrix.from_scipy(values, format="csr-scalar", device=device,
                                       dtype=np.float64 if device.fp64 else np.float32)


def test_bool_and_integer_duplicates_are_summed_as_numbers(device) -> None:
    """scipy's own product sums duplicates as numbers (int8 100 + 100 is 200, True + True is 2),
    where converting to CSR first would wrap around or OR them."""
    x = np.array([1.0, 2.0])
    for values in (np.array([100, 100, 3], np.int8), np.array([True, True, True])):
        A = sp.coo_matrix((values, ([0, 0, 1], [0, 0, 1])), shape=(2, 2))
        M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, dtype=np.float32)
        np.testing.assert_array_equal(M @ x, A @ x)
        assert (A @ x)[0] in (200.0, 2.0)  # the reference itself sums, not wraps
    bools = np.eye(3, dtype=bool)
    M = clspmv.DeviceMatrix.from_scipy(bools, device=device, dtype=np.float32)
    np.testing.assert_array_equal(M.toarray(), np.eye(3))


def test_default_dtype_never_rounds(device) -> None:
    if not device.fp64:
        pytest.skip("the default dtype of integers is float64")
    exact = np.array([[2**53, -(2**53)], [0, 7]], np.int64)
    M = clspmv.DeviceMatrix.from_scipy(exact, format="csr-scalar", device=device)
    np.testing.assert_array_equal(M.toarray(), exact.astype(np.float64))
    for A in (np.array([[2**53 + 1, 0]], np.int64), sp.csr_matrix(np.array([[0, 2**62]]))):
        with pytest.raises(ValueError, match=r"A holds int64 values that float64 cannot hold "
                                             r"exactly \(e.g. .*\); pass dtype=np.float64"):
            clspmv.DeviceMatrix.from_scipy(A, device=device)
        M = clspmv.DeviceMatrix.from_scipy(A, device=device, dtype=np.float64)  # asked: rounds
        np.testing.assert_array_equal(M.toarray(), sp.csr_matrix(A).toarray().astype(float))
    if np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps:
        return  # long double is float64 on this platform
    third = np.array([[1, 0], [0, 3]], np.longdouble) / 3
    with pytest.raises(ValueError, match="A holds float128 values|A holds longdouble values"):
        clspmv.DeviceMatrix.from_scipy(sp.coo_matrix(third), device=device)
    M = clspmv.DeviceMatrix.from_scipy(third, device=device, dtype=np.float64)
    np.testing.assert_array_equal(M.toarray(), third.astype(np.float64))
    halves = clspmv.DeviceMatrix.from_scipy(np.array([[0.5, 0], [0, 1.5]], np.longdouble),
                                            device=device)  # exact in float64
    assert halves.dtype == np.float64 and halves.toarray()[1, 1] == 1.5


def test_values_beyond_float32_become_inf_with_numpy_warning(device) -> None:
    """A named dtype rounds to nearest as numpy casts: IEEE overflow gives ±Inf, with numpy's
    warning (the documented meaning of dtype=float32, as in A.astype(np.float32))."""
    A = np.array([[1e300, 0.0], [0.0, -1e300]])
    with pytest.warns(RuntimeWarning, match="overflow encountered in cast"):
        M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device,
                                           dtype=np.float32)
    np.testing.assert_array_equal(M @ np.ones(2), [np.inf, -np.inf])


class NoArray:
    """Like pydata sparse arrays: numpy conversion refused with a RuntimeError."""

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("Cannot convert a sparse array to dense automatically")


@pytest.mark.parametrize("A, error, message", [
    (np.float64(3.0), ValueError, r"expected a 2-D matrix, got an array of shape \(\)"),
    (np.ones(4), ValueError, r"expected a 2-D matrix, got an array of shape \(4,\)"),
    (np.ones((2, 2, 2)), ValueError, r"expected a 2-D matrix, got an array of shape \(2, 2, 2\)"),
    ([[1.0, 2.0], [3.0]], ValueError, r"A is not a rectangular array of numbers \("),
    (sp.coo_array(np.ones(5)), ValueError, r"expected a 2-D matrix, got a sparse array of shape "
                                           r"\(5,\)"),
    (sp.coo_array(np.ones((2, 2, 2))), ValueError, "got a sparse array of shape"),
    (NoArray(), TypeError, r"A \(NoArray\) does not convert to a numpy array: Cannot convert"),
    (object(), TypeError, r"A \(object\) is neither an array nor a sequence of numbers"),
    (np.ma.array([[1.0, 2.0], [3.0, 4.0]], mask=[[0, 1], [0, 0]]), TypeError,
     r"A is a masked array with masked entries, whose values clspmv would use as they are: "
     r"fill them first \(A.filled\(0\)\)"),
])
def test_shapes_and_objects_refused(device, A, error, message) -> None:
    with pytest.raises(error, match=message):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_unambiguous_dense_inputs_accepted(device) -> None:
    want = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0]])
    unmasked = np.ma.array(want, mask=False)
    for A in (want.tolist(), np.matrix(want), unmasked, want.astype(np.float16),
              want.astype(np.int16), np.asfortranarray(want)):
        M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device,
                                           dtype=np.float32)
        np.testing.assert_array_equal(M.toarray(), want, err_msg=type(A).__name__)


# -- corrupt scipy matrices: scipy checks its arrays when it builds a matrix, not afterwards -----
def _corrupt(kind: str) -> sp.spmatrix:
    A = _matrix()
    if kind == "index beyond the columns":
        A.indices[3] = 30
    elif kind == "negative index":
        A.indices[0] = -1
    elif kind == "decreasing indptr":
        A.indptr[5], A.indptr[6] = A.indptr[6] + 2, A.indptr[5]
    elif kind == "indptr beyond the entries":
        A.indptr[-1] += 3
    elif kind == "short indptr":
        A.indptr = A.indptr[:-1]
    elif kind == "float indices":
        A.indices = A.indices.astype(np.float64)
        A.indices[2] = np.nan
    elif kind.startswith("coo"):
        A = A.tocoo()
        row, col = A.row.copy(), A.col.copy()
        if kind == "coo row beyond":
            row[0] = 40
        elif kind == "coo negative col":
            col[1] = -3
        else:
            row = row.astype(np.float64)
            row[0] = np.nan
        A.coords = (row, col)
    elif kind == "bsr block index beyond":
        A = sp.bsr_matrix(np.ones((4, 4)), blocksize=(2, 2))
        A.indices[0] = 2
    elif kind == "dia float offsets":
        A = sp.dia_matrix(np.eye(3))
        A.offsets = A.offsets.astype(np.float64)
    return A


@pytest.mark.parametrize("kind, message", [
    ("index beyond the columns", r"A.indices holds 30, outside 0..29: the matrix is corrupt "
                                 r"\(changed after scipy built it\); rebuild it"),
    ("negative index", r"A.indices holds -1, outside 0..29"),
    ("decreasing indptr", r"A.indptr decreases from \d+ to \d+ at row 5 \(it must not "
                          r"decrease\)"),
    ("indptr beyond the entries", r"A.indptr ends at \d+, A.indices holds \d+ indices"),
    ("short indptr", r"A.indptr must hold 41 offsets starting at 0 for 40 rows .*; it has 40"),
    ("float indices", r"A.indices has dtype float64 .*; index arrays hold integers"),
    ("coo row beyond", r"A.row holds 40, outside 0..39"),
    ("coo negative col", r"A.col holds -3, outside 0..29"),
    ("coo float rows", r"A.row has dtype float64"),
    ("bsr block index beyond", r"A.indices holds 2, outside 0..1"),
    ("dia float offsets", r"A.offsets has dtype float64"),
])
def test_corrupt_scipy_matrices_refused(device, kind, message) -> None:
    A = _corrupt(kind)
    with pytest.raises(ValueError, match=message):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)


def test_unsorted_indices_duplicates_and_a_stale_canonical_flag(device) -> None:
    A = _matrix()
    assert A.has_canonical_format  # scipy computes and keeps the flag
    assert np.diff(A.indptr)[[2, 7]].min() >= 2
    row = slice(A.indptr[2], A.indptr[3])
    A.indices[row] = A.indices[row][::-1].copy()  # unsorted: the kept flag is now stale
    A.indices[A.indptr[7] + 1] = A.indices[A.indptr[7]]  # a duplicate
    x = np.linspace(-1, 1, 30)
    for fmt in ("csr-scalar", "ell", "dia"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float32)
        assert_matches(M @ x, oracle_matrix(fmt, A, np.float32), x, np.float32)


@pytest.mark.parametrize("kind", ["coo", "csr", "csc", "dia", "bsr", "lil", "dok"])
def test_every_scipy_input_format_as_matrix_and_array(device, kind) -> None:
    A = _matrix(seed=5) + sp.eye(40, 30)
    x = np.linspace(-1, 1, 30)
    for given in (A.asformat(kind), sp.csr_array(A).asformat(kind)):
        M = clspmv.DeviceMatrix.from_scipy(given, format="sell", device=device, dtype=np.float32)
        assert M.shape == (40, 30) and M.transposed_storage == (kind == "csc")
        assert_matches(M @ x, A, x, np.float32)
        np.testing.assert_array_equal(M.toarray(), A.toarray().astype(np.float32))


# -- vectors and scalars --------------------------------------------------------------------------
@pytest.fixture
def square(device) -> tuple[sp.csr_matrix, clspmv.DeviceMatrix]:
    A = _matrix(25, 25, seed=3)
    return A, clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device,
                                             dtype=np.float32)


@pytest.mark.parametrize("x, error, message", [
    (np.ones(25) * (1 + 1j), TypeError, r"complex vectors are not supported \(x has dtype "
                                        r"complex128\): clspmv has no complex kernels; take "
                                        r"x.real explicitly"),
    (np.ones(25, dtype=object), TypeError, "x has dtype " + OBJECTS),
    (np.zeros(25, dtype="datetime64[s]"), TypeError, "x " + NOT_REAL.format(r"datetime64\[s\]")),
    (np.ma.array(np.ones(25), mask=[1] + [0] * 24), TypeError, r"x is a masked array with "
                                                                r"masked entries"),
    ([[1.0]] * 12 + [[1.0, 2.0]] * 13, ValueError, "x is not a rectangular array of numbers"),
])
def test_bad_vectors_refused(square, x, error, message) -> None:
    _, M = square
    for product in (M.matvec, M.__matmul__, M.T.__rmatmul__):
        with pytest.raises(error, match=message):
            product(x)


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_masked_y_refused_and_unambiguous_vectors_accepted(square) -> None:
    A, M = square
    y = np.ma.array(np.zeros(25, np.float32), mask=[1] + [0] * 24)
    with pytest.raises(TypeError, match=r"y is a masked array with masked entries"):
        M.matvec(np.ones(25), y)
    x = np.linspace(-1, 1, 25)
    for given in (x.astype(np.longdouble), np.ma.array(x, mask=False), x.tolist()):
        assert_matches(M @ given, A, x.astype(np.float32), np.float32)
    X = np.matrix(np.stack([x, -x], axis=1))
    Y = M @ X
    assert type(Y) is np.ndarray and Y.shape == (25, 2)  # sparse-array semantics
    assert_matches(Y[:, 1], A, -x.astype(np.float32), np.float32)


@pytest.mark.parametrize("alpha", [np.float32(2.0), np.int8(2), np.bool_(True), 2**70,
                                   fractions.Fraction(1, 3), decimal.Decimal("0.1"),
                                   np.array(2.0), np.longdouble(0.25)])
def test_real_scalars_of_any_type(square, alpha) -> None:
    A, M = square
    x = np.linspace(-1, 1, 25)
    y0 = np.linspace(0, 1, 25).astype(np.float32)
    y = y0.copy()
    M.matvec(x, y, alpha=alpha, beta=np.float64(0.5))
    assert_matches(y, A, x, np.float32, float(alpha), 0.5, y0)


def test_non_finite_scalars(square) -> None:
    """A NaN or infinite beta scales every entry of y it reads (IEEE); alpha must be finite: the
    forward kernels scale each row's sum, the transpose kernels each term, and NaN or Inf tells
    them apart (an empty column would be 0 in one, NaN in the other)."""
    A, M = square
    x = np.linspace(-1, 1, 25)
    for alpha in (np.nan, -np.inf, np.float64("inf")):
        for product in (M.matvec, M.rmatvec, M.matmat):
            with pytest.raises(ValueError, match=r"alpha = .* is not finite: the kernels scale "
                                                 r"each row's sum by alpha, the transpose "
                                                 r"kernels each term"):
                product(x if product != M.matmat else x[:, None], alpha=alpha)
    with pytest.raises(ValueError, match=r"alpha = 1e\+300 is beyond the range of float32 \(the "
                                         r"matrix's dtype\)"):
        with np.errstate(over="ignore"):
            M.matvec(x, alpha=1e300)
    y0 = np.linspace(-1, 1, 25).astype(np.float32)
    for beta in (np.nan, np.inf):
        y = y0.copy()
        M.rmatvec(x, y, beta=beta)
        assert_matches(y, A.T.tocsr(), x, np.float32, 1.0, beta, y0)
    y = np.full(25, np.nan, np.float32)  # beta == 0: y is never read
    assert_matches(M.matvec(x, y, beta=0.0), A, x, np.float32)


@pytest.mark.parametrize("bad, error, message", [
    (1j, TypeError, r"alpha must be a real number, got 1j"),
    (np.complex64(1), TypeError, "alpha must be a real number"),
    ("2", TypeError, r"alpha must be a real number, got '2'"),
    (None, TypeError, r"alpha must be a real number, got None"),
    ([2.0], TypeError, r"alpha must be a real number, got \[2.0\]"),
    (10**400, ValueError, r"alpha = 1000.* is not a float64 number"),
    (decimal.Decimal("sNaN"), ValueError, r"alpha = Decimal\('sNaN'\) is not a float64 number"),
])
def test_bad_scalars_refused(square, bad, error, message) -> None:
    _, M = square
    with pytest.raises(error, match=message):
        M.matvec(np.ones(25), alpha=bad)


# -- buffers beyond the device's largest allocation -----------------------------------------------
def test_vectors_beyond_the_largest_allocation_are_device_errors(device) -> None:
    small = dataclasses.replace(device, max_allocation=1000)
    wide = sp.csr_matrix((np.ones(3), ([0, 1, 2], [0, 100, 299])), shape=(5, 300))
    M = clspmv.DeviceMatrix.from_scipy(wide, format="csr-scalar", device=small,
                                       dtype=np.float32)  # its arrays fit
    limit = r"bytes, above the 1000 bytes .* allows in one allocation; multiply in parts"
    with pytest.raises(clspmv.DeviceError, match=r"x needs a buffer of 1200 " + limit):
        M @ np.ones(300)
    with pytest.raises(clspmv.DeviceError, match=r"y needs a buffer of 1200 " + limit):
        M.rmatvec(np.ones(5))
    with pytest.raises(clspmv.DeviceError, match=r"x needs a buffer of 1200 " + limit):
        M @ cl_array.to_device(small.queue, np.ones(300))  # converted to float32 on the device
    square = clspmv.DeviceMatrix.from_scipy(sp.eye(5, format="csr"), format="csr-vector",
                                            device=small, dtype=np.float32)
    with pytest.raises(clspmv.DeviceError, match=r"X needs a buffer of 1600 " + limit):
        square @ np.ones((5, 80))  # many columns
    with pytest.raises(clspmv.DeviceError, match=r"Y needs a buffer of 1600 " + limit):
        square.matmat(cl_array.to_device(small.queue, np.ones((5, 80), np.float32)))
    np.testing.assert_array_equal(square @ np.ones((5, 40)), np.ones((5, 40)))  # 800 bytes fit


# -- format parameters of the wrong type ---------------------------------------------------------
@pytest.mark.parametrize("fmt, params, error, message", [
    ("csr-vector", {"threads_per_row": 4.0}, TypeError, "threads_per_row must be an int, got 4.0"),
    ("ellr-t", {"threads_per_row": True}, TypeError, "threads_per_row must be an int, got True"),
    ("sell", {"sigma": 16.0}, TypeError, "sigma must be an int, got 16.0"),
    ("hyb", {"width": 2.5}, TypeError, "width must be an int, got 2.5"),
    ("coo", {"staged": "no"}, TypeError, "staged must be True or False, got 'no'"),
    ("csr-merge", {"staged": "no"}, TypeError, "staged must be True or False, got 'no'"),
    ("csr-merge", {"staged": False, "shares": 2.7}, TypeError, "shares must be an int, got 2.7"),
    ("csr-merge", {"staged": True, "items": 2.0}, TypeError, "items must be an int, got 2.0"),
    ("csr-adaptive", {"block_entries": 100.5}, TypeError, "block_entries must be an int"),
    ("csr-blocks", {"blocks": 2.5}, TypeError, "blocks must be an int, got 2.5"),
    ("strips", {"strip_rows": 3.5}, TypeError, "strip_rows must be an int, got 3.5"),
    ("strips", {"blocks": [(0, 40, "ell", {"work_group_size": 48})]}, ValueError,
     "work_group_size must be a power of two, got 48"),
    ("csr-vector", {"bogus": 1}, TypeError, "format 'csr-vector' got an unexpected keyword "
                                            "argument 'bogus'; its parameters: threads_per_row, "
                                            "unroll, long_rows"),
])
def test_format_parameters_of_the_wrong_type(device, fmt, params, error, message) -> None:
    with pytest.raises(error, match=message):
        clspmv.DeviceMatrix.from_scipy(_matrix(), format=fmt, device=device, **params)


def test_call_arguments_of_the_wrong_type(device) -> None:
    A = _matrix()
    for wg, error, message in ((64.0, TypeError, "work_group_size must be an int, got 64.0"),
                               (True, TypeError, "work_group_size must be an int, got True"),
                               (0, ValueError, "work_group_size must be a power of two")):
        with pytest.raises(error, match=message):
            clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device,
                                           work_group_size=wg)
    with pytest.raises(ValueError, match=r"unknown format \['csr'\]; choose one of"):
        clspmv.DeviceMatrix.from_scipy(A, format=["csr"], device=device)
    with pytest.raises(TypeError, match="trial must be True, False or None, got 'no'"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, trial="no")
    with pytest.raises(TypeError, match="expected_products must be an int, got 2.5"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, expected_products=2.5)
    with pytest.raises(ValueError, match=r"column_map must hold 30 non-negative integer column "
                                         r"indices .* dtype float64"):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device,
                                       column_map=np.arange(30.0))


# -- round trips: every format and variant through pickle, copy and astype ----------------------
def _variants(device: clspmv.Device) -> dict[str, list[dict[str, object]]]:
    """Layout variants of every format (the defaults first)."""
    c = device.simd_width
    return {
        "coo": [{}, {"staged": True}, {"staged": False, "items": 64}],
        "csr-scalar": [{}, {"unroll": 4, "long_rows": 8}],
        "csr-vector": [{}, {"threads_per_row": 32, "unroll": 2}, {"long_rows": 8}],
        "csr-aligned": [{}, {"unroll": 8, "long_rows": 8}],
        "csr-adaptive": [{}, {"block_entries": 64, "split_rows": True}],
        "csr-blocks": [{}, {"blocks": 3, "unroll": 2, "long_rows": 8}],
        "ell": [{}, {"row_major": True, "unroll": 2}, {"row_major": False}],
        "ellr": [{}, {"row_major": True}, {"row_major": False}],
        "ellr-t": [{}, {"threads_per_row": 4, "row_major": True}],
        "pjds": [{}, {"spread": True, "long_rows": 8}],
        "sell": [{}, {"sigma": 1}, {"sigma": 4 * c, "spread": True, "long_rows": 8}],
        "hyb": [{}, {"width": 2, "staged": True, "row_major": True}, {"staged": False}],
        "dia": [{}, {"diagonal_runs": True, "row_chunks": False},
                {"diagonal_runs": False, "row_chunks": True}],
        "csr-merge": [{}, {"staged": True}, {"staged": True, "items": 2},
                      {"staged": False, "shares": 5}],
        "bsr": [{}, {"block_size": 3, "row_items": True}, {"block_size": 5, "row_items": False}],
        "strips": [{}, {"blocks": [(0, 20, "csr-merge", {"staged": True}),
                                   (20, 40, "ell", {"row_major": True, "work_group_size": 64}),
                                   (40, 60, "dia")]},
                   {"blocks": [(0, 30, "bsr", {"block_size": 3}), (30, 60, "csr-scalar")]}],
    }


def test_variants_cover_every_format(device) -> None:
    assert set(_variants(device)) == set(clspmv.FORMATS)


def _round_trip_matrix() -> sp.csr_matrix:
    rng = np.random.default_rng(1)
    A = sp.random(60, 45, density=0.08, format="lil", random_state=2)
    A[3, :] = rng.uniform(-1, 1, 45)  # a long row: the long_rows variants split it off
    return (A.tocsr() + sp.eye(60, 45, format="csr")).tocsr()


@pytest.mark.parametrize("fmt", clspmv.FORMATS)
def test_round_trips_of_every_format_and_variant(device, fmt) -> None:
    A = _round_trip_matrix()
    x = np.random.default_rng(3).uniform(-1, 1, 45)
    z = np.random.default_rng(4).uniform(-1, 1, 60)
    base = "float64" if device.fp64 else "float32"
    targets = [p for p in ("float32", "mixed", "float64") if device.supports(p)]
    for params in _variants(device)[fmt]:
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=base, **params)
        same = {"pickle": pickle.loads(pickle.dumps(M)), "copy.copy": copy.copy(M),
                "copy.deepcopy": copy.deepcopy(M), "M.copy()": M.copy(),
                "pickled M.T": pickle.loads(pickle.dumps(M.T)).T,
                "deep-copied M.T": copy.deepcopy(M.T).T, "M.T.copy()": M.T.copy().T}
        cases = {**same, **{f"astype({p})": M.astype(p) for p in targets}}
        for how, N in cases.items():
            where = f"{fmt} {params} {how}"
            assert N is not M and N.format == fmt and N.device is device, where
            assert N.shape == M.shape and N.nnz == M.nnz, where
            if how in same or how == f"astype({base})":
                assert N.params == M.params and N.precision == M.precision, where
            dtype = N.dtype
            B = oracle_matrix(fmt, A, dtype)
            assert_matches(N @ x, B, x, dtype, zeros_absent=fmt in ZEROS_ABSENT)
            assert_matches(N.T @ z, B.T.tocsr(), z, dtype, zeros_absent=fmt in ZEROS_ABSENT)


def test_round_trips_keep_retuned_options_and_blocks(device) -> None:
    A = _round_trip_matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype=np.float32,
                                       threads_per_row=4)
    R = M.retuned(unroll=4, threads_per_row=8)
    for N in (pickle.loads(pickle.dumps(R)), R.copy(), R.astype("float32")):
        assert N.params["unroll"] == 4 and N.params["threads_per_row"] == 8
    cmap = np.arange(45) * 2 + 1
    B = clspmv.DeviceMatrix.from_scipy(A, format="csr-merge", device=device, dtype=np.float32,
                                       staged=True, column_map=cmap, n_cols=100)
    for N in (pickle.loads(pickle.dumps(B)), copy.deepcopy(B), B.astype("float32")):
        assert N.shape == (60, 100) and N.params["staged"] == 1
        np.testing.assert_allclose(N.toarray(), B.toarray(), rtol=1e-6)


def test_astype_says_which_given_parameter_does_not_suit(device) -> None:
    if not device.fp64:
        pytest.skip("needs float64")
    layout = clspmv.formats.FORMAT_CLASSES["csr-merge"].layout_for(device)
    items = tile_items(layout, 4)  # the most float32 tiles take
    if items <= tile_items(layout, 8):
        pytest.skip("float64 tiles take as many items here")
    derived = clspmv.DeviceMatrix.from_scipy(_matrix(), format="csr-merge", device=device,
                                             dtype=np.float32, staged=True)
    assert derived.params["items"] == items
    assert derived.astype(np.float64).params["items"] == tile_items(layout, 8)  # derived anew
    given = clspmv.DeviceMatrix.from_scipy(_matrix(), format="csr-merge", device=device,
                                           dtype=np.float32, staged=True, items=items)
    with pytest.raises(ValueError, match=rf"format 'csr-merge' with the parameters it was made "
                                         rf"with \(staged=True, items={items}\) does not convert "
                                         rf"again in float64 on .*: items must be between 1 and"):
        given.astype(np.float64)


def test_copies_keep_a_users_context(device) -> None:
    import pyopencl as cl

    ctx_device = clspmv.select_device(cl.Context([device.cl_device]))
    M = clspmv.DeviceMatrix.from_scipy(_matrix(), device=ctx_device, dtype=np.float32)
    for N in (copy.copy(M), copy.deepcopy(M), M.copy()):
        assert N.device is ctx_device
        x = cl_array.to_device(ctx_device.queue, np.ones(30, np.float32))
        np.testing.assert_allclose((N @ x).get(), M.toarray() @ np.ones(30), rtol=1e-5)


# -- pickled states clspmv did not write ----------------------------------------------------------
class Tampered:
    """Pickles as a device matrix with the given state: unpickling runs clspmv's own restore."""

    def __init__(self, state: object) -> None:
        self.state = state

    def __reduce__(self) -> tuple:
        return restore, (clspmv.DeviceMatrix, self.state)


def _tamper(state: dict, **changes: object) -> dict:
    out = dict(state)
    for key, value in changes.items():
        if value is KeyError:
            del out[key]
        else:
            out[key] = value
    return out


TAMPERED = {
    "not a dict": (lambda s: [s], r"its state is a list, not a dict"),
    "another version": (lambda s: _tamper(s, version=99), r"state version 99, this one reads 1"),
    "a missing key": (lambda s: _tamper(s, data=KeyError), r"it lacks data"),
    "an unknown key": (lambda s: _tamper(s, extra=1), r"it holds unknown entries extra"),
    "a 1-D shape": (lambda s: _tamper(s, shape=(40,)), r"shape is \(40,\), not two"),
    "a negative shape": (lambda s: _tamper(s, shape=(-1, 30)), r"shape is \(-1, 30\)"),
    "an unknown format": (lambda s: _tamper(s, format="csr5"), r"unknown format 'csr5' \(this "
                                                               r"clspmv has coo, csr-scalar"),
    "params not a dict": (lambda s: _tamper(s, params=[1]), r"params is a list, not a dict"),
    "a foreign parameter": (lambda s: _tamper(s, params={"sigma": 8}),
                            r"params sigma are not parameters of format 'csr-vector'"),
    "a refused parameter value": (lambda s: _tamper(s, params={"threads_per_row": 3}),
                                  r"does not load: format 'csr-vector' with the parameters it "
                                  r"was made with \(threads_per_row=3\) does not convert again"),
    "an unknown precision": (lambda s: _tamper(s, precision="float16"),
                             r"precision is 'float16', not one of float32, float64, mixed"),
    "a string work-group size": (lambda s: _tamper(s, work_group_size="64"),
                                 r"work_group_size is '64'"),
    "a work-group size of 48": (lambda s: _tamper(s, work_group_size=48),
                                r"does not load: .*work_group_size must be a power of two"),
    "a string flag": (lambda s: _tamper(s, transposed_storage="yes"),
                      r"transposed_storage is 'yes'"),
    "a negative nnz": (lambda s: _tamper(s, nnz=-1), r"nnz is -1"),
    "a list column map": (lambda s: _tamper(s, column_map=[1, 2]), r"column_map is \[1, 2\]"),
    "a short column map": (lambda s: _tamper(s, column_map=np.arange(3)),
                           r"does not load: .*column_map must hold 30 non-negative"),
    "no device": (lambda s: _tamper(s, device=None), r"device is None, not a dict naming"),
    "a nameless device": (lambda s: _tamper(s, device={"platform": "x", "name": 3}),
                          r"device is .*, not a dict naming a platform and a device"),
    "complex data": (lambda s: _tamper(s, data=s["data"] * 1j),
                     r"complex matrices are not supported \(data has dtype complex64\)"),
    "object data": (lambda s: _tamper(s, data=s["data"].astype(object)), r"data has dtype object"),
    "2-D data": (lambda s: _tamper(s, data=s["data"][:, None]), r"data must be 1-D numpy arrays"),
    "float indices": (lambda s: _tamper(s, indices=s["indices"].astype(float)),
                      r"state.indices has dtype float64"),
    "an index beyond the columns": (lambda s: _tamper(s, indices=s["indices"] + 30),
                                    r"state.indices holds \d+, outside 0..29"),
    "a short indptr": (lambda s: _tamper(s, indptr=s["indptr"][:-2]),
                       r"state.indptr must hold 41 offsets starting at 0 for 40 rows"),
    "a decreasing indptr": (lambda s: _tamper(s, indptr=np.r_[0, s["indptr"][1:][::-1]]),
                            r"state.indptr decreases from"),
}


@pytest.mark.parametrize("case", TAMPERED)
def test_tampered_states_are_clspmv_errors(device, case) -> None:
    M = clspmv.DeviceMatrix.from_scipy(_matrix(), format="csr-vector", device=device,
                                       dtype=np.float32)
    _, (_, state) = M.__reduce__()
    tamper, message = TAMPERED[case]
    data = pickle.dumps(Tampered(tamper(state)))
    with pytest.raises(clspmv.StoredMatrixError, match=message):
        pickle.loads(data)
    assert pickle.loads(pickle.dumps(Tampered(state))).shape == (40, 30)  # the untouched state
