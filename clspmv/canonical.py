"""The one canonical form every matrix takes on its way to a device: CSR with sorted indices,
duplicates summed (before rounding), explicit zeros kept and 32-bit indices; and the checks that
refuse a matrix whose meaning would change on the way (complex or non-numeric values, masked
entries, corrupt index arrays, values the default dtype would round)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from .arguments import real_array
from .errors import IndexOverflowError
from .formats.base import INDEX_DTYPE, INDEX_LIMIT
from .precision import VALUE_DTYPES, resolve

EXACT_INTEGERS = 2**53
"""Integers up to this magnitude are exact in float64."""

PIECE_ENTRIES = 1 << 20
"""About this many entries (or rows) per piece of the passes over large index arrays
(:func:`given_canonical`, the bounds of :func:`check_sparse`), spread over threads: small
enough to share out evenly, large enough that each numpy call pays off."""

MAX_THREADS = 8
"""Threads of those passes at most: they are bound by memory bandwidth, which a few cores
fill."""


def canonical_csr(A: object, dtype: object = None, *, checked: bool = False,
                  copy: bool = True) -> sp.csr_matrix:
    """A copy of ``A`` as CSR with sorted indices, duplicates summed, explicit zeros kept,
    32-bit indices and values of ``dtype`` (default: A's float type, else float64; ``"mixed"``
    stores float32 values). ``copy=False``: where ``A`` is such a CSR matrix already (values
    of ``dtype`` and integer indices that fit 32 bits: :func:`given_canonical`), the result may
    share A's ``data`` and ``indices`` (never its ``indptr``), for a caller that copies them
    itself (an upload to a device that keeps no host memory) and keeps no reference to them.

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
        given = given_canonical(A, dtype, copy)
        if given is not None:
            return given
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


def given_canonical(A: sp.sparray | sp.spmatrix, dtype: object,
                    copy: bool) -> sp.csr_matrix | None:
    """:func:`canonical_csr` of a valid ``A`` (checked by :func:`check_sparse`) that is a CSR
    matrix in canonical form already, with float32 or float64 values and indices of 32 bits or
    any that fit them; else None: the general path then sorts and sums. The result has row
    pointers of its own (the CSR kernels keep them on the host), and A's indices and data where
    they are of the result's type and ``copy`` is False, else copies.

    The order is checked afresh, never trusting scipy's cached ``has_canonical_format`` (a
    caller may have changed the arrays since scipy set it): in pieces of whole rows spread over
    threads (numpy's copies and scipy's loops let go of the GIL), each piece copied where it is
    to be and its order checked by scipy's ``has_canonical_format``."""
    if A.format != "csr" or np.dtype(A.dtype) not in VALUE_DTYPES:
        return None
    value_dtype = resolve(dtype, np.dtype(A.dtype)).value
    indptr, indices, data = A.indptr, A.indices, A.data
    m, n = A.shape
    if (data.ndim != 1 or indptr[-1] != indices.size
            or max(m, n, indices.size) > INDEX_LIMIT):
        return None  # an ignored tail of indices, or too large: the general path's errors
    ptr = np.empty(m + 1, INDEX_DTYPE)
    cols = indices if indices.dtype == INDEX_DTYPE and not copy else np.empty(data.size,
                                                                             INDEX_DTYPE)
    copy_values = copy and data.dtype == value_dtype  # by the pieces
    if data.dtype != value_dtype:
        vals = data.astype(value_dtype)  # here, not in a thread: numpy's errstate is per thread
    else:
        vals = np.empty_like(data) if copy else data

    def piece(r0: int, r1: int) -> bool:
        """Rows ``r0 .. r1 - 1`` copied where they are to be; True where canonical."""
        start, stop = int(indptr[r0]), int(indptr[r1])
        ptr[r0:r1 + 1] = indptr[r0:r1 + 1]
        if cols is not indices:
            cols[start:stop] = indices[start:stop]
        if copy_values:
            vals[start:stop] = data[start:stop]
        return _rows_canonical(ptr[r0:r1 + 1], cols, vals, n)

    cuts = _piece_rows(indptr, indices.size)
    if len(cuts) == 2:
        ok = piece(0, m)
    else:
        with _threads(len(cuts) - 1) as pool:
            ok = all(pool.map(piece, cuts[:-1], cuts[1:]))
    if not ok:
        return None
    csr = sp.csr_matrix((vals, cols, ptr), shape=(m, n), copy=False)
    csr.has_canonical_format = True  # checked above
    return csr


def _rows_canonical(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
                    columns: int) -> bool:
    """scipy's ``has_canonical_format`` of the rows of ``indptr`` (offsets into ``indices``
    and ``data``, not decreasing, within them, of their type): a matrix made empty and given
    the arrays, which scipy's constructor would refuse (``indptr`` not from 0) or copy."""
    rows = sp.csr_matrix((indptr.size - 1, columns), dtype=data.dtype)
    rows.indptr, rows.indices, rows.data = indptr, indices, data
    return bool(rows.has_canonical_format)


def _piece_rows(indptr: np.ndarray, entries: int) -> list[int]:
    """Row boundaries ``0 = r_0 < r_1 < ... < r_k = m`` (``[0, 0]`` without rows) cutting the
    rows of ``indptr`` into pieces of about :data:`PIECE_ENTRIES` entries, and as many rows at
    most."""
    m = indptr.size - 1
    by_entries = np.searchsorted(indptr, np.arange(PIECE_ENTRIES, entries, PIECE_ENTRIES,
                                                   dtype=indptr.dtype))  # else indptr is cast
    by_rows = np.arange(PIECE_ENTRIES, m, PIECE_ENTRIES)
    inner = np.union1d(by_entries, by_rows)
    return [0, *inner[(inner > 0) & (inner < m)].tolist(), m]


def _threads(pieces: int) -> ThreadPoolExecutor:
    """Threads for ``pieces`` pieces of work: as many as cores, :data:`MAX_THREADS` at most
    (numpy's loops and scipy's let go of the GIL, and two threads on one core only slow each
    other down)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return ThreadPoolExecutor(max(1, min(MAX_THREADS, cores or 1, pieces)))


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
    if index.size and _beyond(index, bound):
        low = int(index.min())
        raise ValueError(f"{name} holds {low if low < 0 else int(index.max())}, outside "
                         f"0..{bound - 1}: the matrix is corrupt (changed after scipy built "
                         "it); rebuild it from valid arrays")


def _beyond(index: np.ndarray, bound: int) -> bool:
    """True where an integer of ``index`` is outside ``0 .. bound - 1``: a maximum of the
    integers as unsigned ones (a negative one is then above ``bound``), one pass instead of a
    minimum and a maximum."""
    if index.dtype.kind == "i":
        if not index.dtype.isnative:
            return int(index.min()) < 0 or int(index.max()) >= bound
        index = index.view(f"u{index.dtype.itemsize}")
    starts = range(0, index.size, PIECE_ENTRIES)
    if len(starts) == 1:
        return int(index.max()) >= bound
    with _threads(len(starts)) as pool:
        return max(pool.map(lambda i: int(index[i:i + PIECE_ENTRIES].max()), starts)) >= bound


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
    if not np.all(indptr[1:] >= indptr[:-1]):
        at = int(np.argmax(indptr[1:] < indptr[:-1]))
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
