"""The one canonical form every matrix takes on its way to a device: CSR with sorted indices,
duplicates summed (before rounding), explicit zeros kept and 32-bit indices; and the checks that
refuse a matrix whose meaning would change on the way (complex or non-numeric values, masked
entries, corrupt index arrays, values the default dtype would round)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .arguments import real_array
from .errors import IndexOverflowError
from .formats.base import INDEX_DTYPE, INDEX_LIMIT
from .precision import VALUE_DTYPES, resolve

EXACT_INTEGERS = 2**53
"""Integers up to this magnitude are exact in float64."""


def canonical_csr(A: object, dtype: object = None, *, checked: bool = False) -> sp.csr_matrix:
    """A copy of ``A`` as CSR with sorted indices, duplicates summed, explicit zeros kept,
    32-bit indices and values of ``dtype`` (default: A's float type, else float64; ``"mixed"``
    stores float32 values).

    Duplicates are summed before the values are rounded to ``dtype`` (in float64 for anything
    but COO input of float32 or float64, which scipy sums in that type; in long double for long
    double input); a named ``dtype`` rounds to nearest, and values beyond its range become ±Inf,
    with numpy's "overflow encountered in cast" warning. The default ``dtype`` never rounds: a
    value float64 cannot hold exactly (long double, integers beyond 2**53) is a ValueError.

    ``A`` may be any 2-D scipy.sparse matrix or array, or a dense 2-D array (whose zeros are
    dropped) of real numbers. Raises TypeError for values that are not real numbers (complex,
    objects, strings, dates: :func:`clspmv.precision.check_real`), a masked array with masked
    entries, or an object that is neither; ValueError for another shape or corrupt index arrays
    (:func:`check_sparse`, skipped where ``checked``: the caller has checked A's arrays, as
    unpickling does); :class:`IndexOverflowError` when the matrix does not fit 32-bit indices.
    """
    if sp.issparse(A):
        if not checked:
            check_sparse(A)
        source = np.dtype(A.dtype)
        shape = A.shape
    else:
        dense = real_array(A, "A")
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got an array of shape {dense.shape}")
        source, shape = dense.dtype, dense.shape
    value_dtype = resolve(dtype, source).value
    nnz = A.nnz if sp.issparse(A) else None
    if max(shape) > INDEX_LIMIT or (nnz is not None and nnz > INDEX_LIMIT):
        raise IndexOverflowError(
            f"a {shape[0]}x{shape[1]} matrix with {nnz} stored entries does not fit the 32-bit "
            f"indices of the kernels (limit {INDEX_LIMIT})"
        )
    if dtype is None and source not in VALUE_DTYPES:
        check_exact(stored_values(A) if sp.issparse(A) else dense, source)
    if sp.issparse(A):
        wide = np.promote_types(source, np.float64)  # float64, or long double
        if source not in VALUE_DTYPES:
            # bool and integers are summed as numbers, not in their own type (int8 would wrap
            # around, bool would OR), float16 without its overflow, long double in its precision
            A = A.astype(wide)
        csr = sp.csr_matrix(A, copy=True)  # COO input: scipy sums duplicates in A's dtype
        if not csr.has_canonical_format:
            # Duplicates are summed in float64, before rounding to dtype: rounding first would
            # lose what cancels (1 + 2**-30 and -1 would sum to 0 in float32).
            csr = csr.astype(wide, copy=False)
            csr.sum_duplicates()
        csr = csr.astype(value_dtype, copy=False)
    else:
        csr = sp.csr_matrix(dense.astype(value_dtype, copy=False))
    csr.sum_duplicates()  # sorts indices; keeps explicit zeros
    if csr.nnz > INDEX_LIMIT:
        raise IndexOverflowError(f"{csr.nnz} entries do not fit the 32-bit indices of the kernels")
    csr.indptr = csr.indptr.astype(INDEX_DTYPE, copy=False)
    csr.indices = csr.indices.astype(INDEX_DTYPE, copy=False)
    return csr


def check_sparse(A: sp.sparray | sp.spmatrix, what: str = "A") -> None:
    """ValueError unless the scipy matrix ``A`` (named ``what``) is 2-D and its arrays are
    consistent: scipy checks them when it builds a matrix but not when they are changed
    afterwards, and converting corrupt ones writes out of bounds or reads garbage. Checked:
    integer index arrays (a float array may hold NaN or fractions), the index pointer of CSR,
    CSC and BSR (length, first entry 0, non-decreasing, within the entries), every index within
    its dimension, the data's length; LIL and DOK (built through checked setters) as they are.
    Unsorted indices and duplicates are valid (summed by :func:`canonical_csr`)."""
    if len(A.shape) != 2:
        raise ValueError(f"expected a 2-D matrix, got a sparse array of shape {A.shape}")
    m, n = A.shape
    fmt = A.format
    if fmt in ("csr", "csc", "bsr"):
        rows, cols = A.blocksize if fmt == "bsr" else (1, 1)
        major, minor = (n // cols, m // rows) if fmt == "csc" else (m // rows, n // cols)
        check_compressed(A.indptr, A.indices, A.data.shape[0], (major, minor), what)
    elif fmt == "coo":
        _check_indices(f"{what}.row", A.row, m, A.data.size, what)
        _check_indices(f"{what}.col", A.col, n, A.data.size, what)
    elif fmt == "dia":
        _check_integers(f"{what}.offsets", A.offsets)
        if A.data.ndim != 2 or A.data.shape[0] != A.offsets.size:
            raise ValueError(f"{what}.data has shape {A.data.shape}; a DIA matrix with "
                             f"{A.offsets.size} offsets needs ({A.offsets.size}, columns)")


def _check_integers(name: str, index: np.ndarray) -> None:
    if index.ndim != 1 or index.dtype.kind not in "iu":
        raise ValueError(f"{name} has dtype {index.dtype} and shape {index.shape}; index arrays "
                         "hold integers, one dimension: rebuild the matrix from integer indices")


def _check_indices(name: str, index: np.ndarray, bound: int, entries: int, what: str) -> None:
    """Integer indices in ``0 .. bound - 1``, one per entry of the data."""
    _check_integers(name, index)
    if index.size != entries:
        raise ValueError(f"{name} has {index.size} indices for {entries} entries of "
                         f"{what}.data")
    if index.size:
        low, high = int(index.min()), int(index.max())
        if low < 0 or high >= bound:
            raise ValueError(f"{name} holds {low if low < 0 else high}, outside 0..{bound - 1}: "
                             "the matrix is corrupt (changed after scipy built it); rebuild it "
                             "from valid arrays")


def check_compressed(indptr: np.ndarray, indices: np.ndarray, entries: int,
                     dims: tuple[int, int], what: str) -> None:
    """ValueError unless the index pointer and indices of a CSR, CSC or BSR matrix (named
    ``what``) of ``entries`` stored values are consistent with its ``dims`` (rows and columns of
    CSR; columns and rows of CSC; the same in blocks for BSR): :func:`check_sparse`'s rules."""
    major, minor = dims
    _check_integers(f"{what}.indptr", indptr)
    if indptr.size != major + 1 or indptr[0] != 0:
        raise ValueError(f"{what}.indptr must hold {major + 1} offsets starting at 0 for "
                         f"{major} rows (or columns, or blocks); it has {indptr.size}"
                         + (f" starting at {indptr[0]}" if indptr.size else ""))
    steps = np.diff(indptr)
    if steps.size and steps.min() < 0:
        at = int(np.argmax(steps < 0))
        raise ValueError(f"{what}.indptr decreases from {indptr[at]} to {indptr[at + 1]} at "
                         f"row {at} (it must not decrease): the matrix is corrupt; rebuild it "
                         "from valid arrays")
    end = int(indptr[-1])
    _check_integers(f"{what}.indices", indices)
    if indices.size != entries or end > entries:
        raise ValueError(f"{what}.indptr ends at {end}, {what}.indices holds {indices.size} "
                         f"indices and {what}.data {entries} entries: the first must not exceed "
                         "the others, which must be equal")
    _check_indices(f"{what}.indices", indices[:end], minor, end, what)  # scipy ignores the rest


def stored_values(A: sp.sparray | sp.spmatrix) -> np.ndarray:
    """The values of a scipy matrix's stored entries (its data array where it has a flat one)."""
    return A.data if A.format in ("csr", "csc", "coo", "bsr") else A.tocoo().data


def check_exact(values: np.ndarray, source: np.dtype) -> None:
    """ValueError unless float64 holds every one of ``values`` (of type ``source``) exactly: the
    default dtype of a matrix of another real type is float64, which must not round it."""
    if source.kind == "b" or source.itemsize < 8 or values.size == 0:
        return  # bool, integers of up to 32 bits, float16: always exact in float64
    if source.kind in "iu":  # compared as integers: float64 would round them first
        inexact = (values > EXACT_INTEGERS) | (values < -EXACT_INTEGERS)
    else:
        with np.errstate(over="ignore"):
            rounded = values.astype(np.float64)
        inexact = (rounded.astype(source) != values) & ~np.isnan(values)
    if inexact.any():
        example = values.ravel()[np.flatnonzero(inexact)[0]]
        raise ValueError(f"A holds {source} values that float64 cannot hold exactly (e.g. "
                         f"{example!r}); pass dtype=np.float64 (or float32) to round them to "
                         "nearest")
