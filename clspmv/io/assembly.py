"""The scipy matrix made of the entries read (:mod:`clspmv.io.held`).

:func:`coo` joins the entries as they are held. :func:`csr` converts entries held as read
with scipy (``coo_array(...).tocsr()``: duplicates summed in scipy's order); a read that folds
them converts at most :data:`~clspmv.io.entries.FOLD_ENTRIES` and a batch that way.
:func:`folded_csr` makes the CSR arrays of folded entries (:class:`FoldedEntries`), already one
per position and in CSR order, without a conversion: the column indices and the row pointer
are computed from the keys a block at a time (the column indices written over the keys), and
the sums become the values. Peak: the folded entries (16 bytes each) and the row pointer (4
bytes a row), within the bound of twice the arrays returned.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from clspmv.io.held import FoldedEntries, HeldEntries

_INT32_MAX = 2**31 - 1
_BLOCK = 1 << 16
"""Entries (or rows) computed at a time."""


def coo(own: HeldEntries, mirrored: HeldEntries, shape: tuple[int, int]) -> sp.coo_array:
    """The entries of ``own`` then ``mirrored`` as a float64 COO array (duplicates not
    summed); both are emptied."""
    rows, cols, values = own.take_after(mirrored)
    return sp.coo_array((values, (rows, cols)), shape=shape)


def csr(own: HeldEntries, mirrored: HeldEntries, shape: tuple[int, int]) -> sp.csr_array:
    """The entries of ``own`` then ``mirrored`` as a float64 CSR array with sorted indices,
    duplicates summed and explicit zeros kept, as scipy's ``tocsr`` makes it; both are
    emptied."""
    rows, cols, values = own.take_after(mirrored)
    return sp.coo_array((values, (rows, cols)), shape=shape).tocsr()


def folded_csr(folded: FoldedEntries, shape: tuple[int, int]) -> sp.csr_array:
    """The folded entries as a float64 CSR array with sorted indices (their sums the values,
    explicit zeros kept); ``folded`` is emptied."""
    keys, values = folded.keys, folded.sums
    folded.keys, folded.sums = np.zeros(0, dtype=np.int64), np.zeros(0)
    rows, cols = shape
    index = np.int32 if keys.size <= _INT32_MAX else np.int64
    indptr = np.empty(rows + 1, dtype=index)
    for lo in range(0, rows + 1, _BLOCK):  # row r starts at the first key >= r * cols
        starts = np.arange(lo, min(lo + _BLOCK, rows + 1), dtype=np.int64)
        starts *= cols
        indptr[lo:lo + starts.size] = np.searchsorted(keys, starts)
    A = sp.csr_array((values, _columns(keys, cols, index), indptr), shape=shape)
    A.has_canonical_format = True  # sorted indices, no duplicates
    return A


def _columns(keys: np.ndarray, cols: int, index: type) -> np.ndarray:
    """The column indices of ``keys`` as ``index`` integers, written over the keys (emptied)
    from the front, a block at a time: the block written never reaches keys not yet read, and
    no second array of the entries is made."""
    if index is np.int64:
        np.remainder(keys, cols, out=keys)
        return keys
    size = keys.size
    out = keys.view(np.int32)
    for lo in range(0, size, _BLOCK):
        hi = min(lo + _BLOCK, size)
        out[lo:hi] = keys[lo:hi] % cols  # over the bytes of keys[lo // 2:hi // 2], read
    del out
    keys.resize((size + 1) // 2, refcheck=False)  # frees the upper half
    return keys.view(np.int32)[:size]
