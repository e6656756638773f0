"""The one canonical form every matrix takes on its way to a device: CSR with sorted indices,
duplicates summed (before rounding), explicit zeros kept and 32-bit indices."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .errors import IndexOverflowError
from .formats.base import INDEX_DTYPE, INDEX_LIMIT
from .precision import resolve


def canonical_csr(A: object, dtype: object = None) -> sp.csr_matrix:
    """A copy of ``A`` as CSR with sorted indices, duplicates summed, explicit zeros kept,
    32-bit indices and values of ``dtype`` (default: A's float type, else float64; ``"mixed"``
    stores float32 values).

    Duplicates are summed before the values are rounded to ``dtype`` (in float64 for anything
    but COO input of a float type, which scipy sums in that type); values beyond the range of
    ``dtype`` become ±Inf, with numpy's "overflow encountered in cast" warning.

    ``A`` may be any scipy.sparse matrix or array, or a dense 2-D array (whose zeros are dropped).
    Raises :class:`IndexOverflowError` when the matrix does not fit 32-bit indices.
    """
    if sp.issparse(A):
        source = np.dtype(A.dtype)
        shape = A.shape
    else:
        dense = np.asarray(A)
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
    if sp.issparse(A):
        csr = sp.csr_matrix(A, copy=True)  # COO input: scipy sums duplicates in A's dtype
        if not csr.has_canonical_format:
            # Duplicates are summed in float64, before rounding to dtype: rounding first would
            # lose what cancels (1 + 2**-30 and -1 would sum to 0 in float32).
            csr = csr.astype(np.float64, copy=False)
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
