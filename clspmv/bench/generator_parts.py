"""Building blocks of the matrix generators (:mod:`clspmv.bench.generators` and
:mod:`clspmv.bench.generators_irregular`): canonical CSR from sorted arrays or from (row, column)
pairs, sorted distinct random columns, and the checks of the generators' arguments."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["check_fraction", "check_positive", "distinct_sorted", "from_pairs", "sorted_csr"]


def sorted_csr(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray,
               shape: tuple[int, int]) -> sp.csr_matrix:
    """A CSR matrix from arrays already sorted by column within each row, without duplicates."""
    index_dtype = np.int32 if max(shape + (indices.size,)) < 2**31 - 1 else np.int64
    A = sp.csr_matrix((data, indices.astype(index_dtype, copy=False),
                       indptr.astype(index_dtype, copy=False)), shape=shape)
    A.has_sorted_indices = True
    A.has_canonical_format = True
    return A


def from_pairs(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int],
               rng: np.random.Generator) -> sp.csr_matrix:
    """The CSR matrix with an entry at each (row, col) pair, repeated pairs merged; values
    uniform in [0, 1)."""
    keys = np.sort(rows.astype(np.int64) * shape[1] + cols)  # np.unique is far slower
    keys = keys[np.r_[True, keys[1:] != keys[:-1]]] if keys.size else keys
    indptr = np.zeros(shape[0] + 1, np.int64)
    np.cumsum(np.bincount(keys // shape[1], minlength=shape[0]), out=indptr[1:])
    return sorted_csr(indptr, keys % shape[1], rng.random(keys.size), shape)


def distinct_sorted(rng: np.random.Generator, rows: int, k: int, n: int) -> np.ndarray:
    """``rows`` x ``k`` strictly increasing column indices in [0, n): k sorted draws from
    [0, n-k] plus 0..k-1 (distinct by construction, close to uniform for k << n)."""
    cols = rng.integers(0, n - k + 1, size=(rows, k), dtype=np.int64)
    cols.sort(axis=1)
    cols += np.arange(k, dtype=np.int64)
    return cols


def check_positive(**values: float) -> None:
    """Raise ValueError naming the first of ``values`` below 1."""
    for name, value in values.items():
        if value < 1:
            raise ValueError(f"{name} must be >= 1, got {value}")


def check_fraction(name: str, value: float) -> None:
    """Raise ValueError unless ``value`` (the argument ``name``) lies in [0, 1]."""
    if not 0 <= value <= 1:
        raise ValueError(f"{name} must be between 0 and 1, got {value}")
