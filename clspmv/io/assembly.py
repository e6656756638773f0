"""The scipy matrix made of the held entries (:mod:`clspmv.io.held`).

:func:`coo` joins the entries as they are. :func:`csr` gives what scipy's COO to CSR
conversion gives (``coo_matrix(...).tocsr()``, bit for bit), without ever holding both the
entries (16 bytes each) and the CSR arrays (12 bytes each) whole:

1. the second half of the entries (in order) is converted by scipy, without summing its
   duplicates, and freed; then the first half likewise;
2. the two halves' CSR arrays are merged, every row holding the first half's entries of that
   row, then the second's (so each row holds its entries in order, as scipy places them), a
   block of rows at a time: the column indices first, then the values;
3. scipy sorts each row's columns and sums its duplicates (``sum_duplicates``, in place).

Peak: 22 bytes an entry (all the entries and the second half's CSR arrays, at step 1) and 8
bytes a row (the halves' row pointers). Where converting them at once (28 bytes an entry, 4 a
row) stays within the bound of a matrix without duplicates (24 and 8) with :data:`WHOLE_SPARE`
to spare, that is, up to the rows plus 8 million entries, the entries are converted at once,
as scipy does (the merge would cost about a third more time).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from clspmv.io.held import HeldEntries

_INT32_MAX = 2**31 - 1
WHOLE_SPARE = 32 << 20
"""Bytes of the bound's 64 MiB that converting the entries at once may take."""
_BLOCK = 1 << 17
"""Entries of each half (or rows) merged at a time."""


def coo(own: HeldEntries, mirrored: HeldEntries, shape: tuple[int, int]) -> sp.coo_matrix:
    """The entries of ``own`` then ``mirrored`` as a float64 COO matrix (duplicates not
    summed); both are emptied."""
    rows, cols, values = own.take_after(mirrored)
    return sp.coo_matrix((values, (rows, cols)), shape=shape)


def csr(own: HeldEntries, mirrored: HeldEntries, shape: tuple[int, int]) -> sp.csr_matrix:
    """The entries of ``own`` then ``mirrored`` as a float64 CSR matrix with sorted indices,
    duplicates summed and explicit zeros kept, as scipy's ``tocsr`` makes it (see the module's
    docstring); both are emptied."""
    entries = own.take_after(mirrored)
    total = entries[0].size
    if 4 * total <= 4 * shape[0] + WHOLE_SPARE:
        rows, cols, values = entries
        return sp.coo_matrix((values, (rows, cols)), shape=shape).tocsr()
    half = total // 2
    second = _unsummed([array[half:] for array in entries], shape)
    for array in entries:
        array.resize(half, refcheck=False)  # frees the second half
    del array
    first = _unsummed(entries, shape)
    index = np.int32 if total <= _INT32_MAX else np.int64
    A = _merged(first, second, shape, index)
    A.sum_duplicates()
    return A


def _unsummed(entries: list[np.ndarray], shape: tuple[int, int]) -> list[np.ndarray]:
    """``[indptr, indices, data]`` of scipy's CSR conversion of ``[rows, cols, values]``, each
    row's entries in order and not summed; the list ``entries`` is emptied."""
    rows, cols, values = entries
    entries.clear()
    coo = sp.coo_matrix((values, (rows, cols)), shape=shape)
    del rows, cols, values
    # Declared free of duplicates, the COO matrix is converted without summing them: they are
    # summed once, after the halves are merged, in the order scipy sums them.
    coo.has_canonical_format = True
    A = coo.tocsr()
    return [A.indptr, A.indices, A.data]


def _merged(first: list[np.ndarray], second: list[np.ndarray], shape: tuple[int, int],
            index: type) -> sp.csr_matrix:
    """The CSR matrix whose every row holds the entries of that row of ``first``, then those of
    ``second`` (both ``[indptr, indices, data]``, emptied but for their row pointers)."""
    p1, p2 = first[0], second[0]
    blocks = _blocks(p1, p2)
    indices = _merge(blocks, p1, p2, first.pop(1), second.pop(1), index)
    data = _merge(blocks, p1, p2, first.pop(1), second.pop(1), np.float64)
    indptr = np.add(p1, p2, out=p1 if p1.dtype == index else None, dtype=index)
    return sp.csr_matrix((data, indices, indptr), shape=shape)


def _blocks(p1: np.ndarray, p2: np.ndarray) -> np.ndarray:
    """Row boundaries of blocks that hold at most :data:`_BLOCK` rows and about as many entries
    of each half, or one row (cut on both sides of a row that holds more)."""
    rows = p1.size - 1
    cuts = [np.arange(0, rows, _BLOCK), [rows]]
    for p in (p1, p2):
        after = np.minimum(np.searchsorted(p, np.arange(0, int(p[-1]), _BLOCK)), rows)
        cuts += [after, np.maximum(after - 1, 0)]
    return np.unique(np.concatenate(cuts))


def _merge(blocks: np.ndarray, p1: np.ndarray, p2: np.ndarray, a1: np.ndarray, a2: np.ndarray,
           dtype: type) -> np.ndarray:
    """The array of the merged matrix made of ``a1`` and ``a2``, arrays of the halves whose row
    pointers are ``p1`` and ``p2``: row ``i`` of the first half goes to ``p1[i] + p2[i]``
    onwards, of the second to ``p1[i + 1] + p2[i]`` onwards."""
    out = np.empty(a1.size + a2.size, dtype=dtype)
    for lo, hi in zip(blocks[:-1].tolist(), blocks[1:].tolist(), strict=True):
        s1, e1, s2, e2 = int(p1[lo]), int(p1[hi]), int(p2[lo]), int(p2[hi])
        if hi - lo == 1:  # one row (maybe a long one): two slices
            out[s1 + s2:e1 + s2] = a1[s1:e1]
            out[e1 + s2:e1 + e2] = a2[s2:e2]
            continue
        to = np.repeat(p2[lo:hi].astype(np.int64), np.diff(p1[lo:hi + 1]))
        to += np.arange(s1, e1)
        out[to] = a1[s1:e1]
        to = np.repeat(p1[lo + 1:hi + 1].astype(np.int64), np.diff(p2[lo:hi + 1]))
        to += np.arange(s2, e2)
        out[to] = a2[s2:e2]
    return out
