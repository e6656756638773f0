"""The scipy matrix made of the entries read (:mod:`clspmv.io.held`).

:func:`coo` joins the entries as they are held. :func:`csr` converts entries held as read
with scipy (``coo_array(...).tocsr()``: duplicates summed in scipy's order); a read that folds
them converts at most :data:`~clspmv.io.entries.FOLD_ENTRIES` and a batch that way.
:func:`folded_csr` makes the CSR arrays of folded entries (:class:`FoldedEntries`), already one
per position and in CSR order, without a conversion: the column indices and the row pointer
are computed from the keys a block at a time (the column indices written over the keys), and
the sums become the values. Peak: the folded entries (16 bytes each) and the row pointer (4
bytes a row), within the bound of twice the arrays returned. Entries folded in column order
make the CSC arrays in the same way, then scipy's conversion the CSR ones: a peak of both,
twice the arrays returned plus the column pointer.

The row pointer is the one array sized by the declared rows rather than by the entries read:
:func:`row_pointer_refusal` says when it is absurd for what the file holds (a header that
declares billions of rows for a few entries), so that it is refused before it is allocated.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from clspmv.io.held import FoldedEntries, HeldEntries

_INT32_MAX = 2**31 - 1
_BLOCK = 1 << 16
"""Entries (or rows) computed at a time."""

ROW_POINTER_FREE = 256 << 20
"""Bytes of row pointer a CSR read allocates whatever its entries (67 million rows: a tall
matrix of few entries, which scipy reads too, costs a fraction of a second)."""
ROW_POINTER_RATIO = 64
"""Beyond :data:`ROW_POINTER_FREE`, the most bytes of row pointer allowed per byte of the
entries' arrays (column indices and values)."""


def index_dtype(entries: int) -> type:
    """The integer type of the column indices and row pointer of a CSR array of ``entries``
    entries (as scipy chooses it for at most 2**31 - 1 rows and columns)."""
    return np.int32 if entries <= _INT32_MAX else np.int64


def available_memory() -> int | None:
    """Bytes of memory the system can give now, or ``None`` where unknown.

    Linux's ``MemAvailable`` (free memory and the caches it can drop; ``os.sysconf``'s free
    pages leave the caches out and would refuse what fits), else the free pages; read by hand
    as no dependency of clspmv tells it.
    """
    try:
        with open("/proc/meminfo", "rb") as meminfo:
            for line in meminfo:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024  # in kB
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):  # not a name this system knows
        return None


def row_pointer_refusal(rows: int, entries: int) -> str | None:
    """Why a CSR array of ``rows`` rows made of (at most) ``entries`` entries is not made, or
    ``None`` where it is.

    Its row pointer is refused where it needs more than :data:`ROW_POINTER_FREE` bytes and
    either more than :data:`ROW_POINTER_RATIO` times the bytes of the entries' arrays or more
    memory than is available: allocating it would take minutes, or all the memory, before
    failing.
    """
    index = np.dtype(index_dtype(entries)).itemsize
    need = (rows + 1) * index
    if need <= ROW_POINTER_FREE:
        return None
    held = entries * (index + 8)  # column indices and values
    if need > ROW_POINTER_RATIO * held:
        why = (f"over {ROW_POINTER_RATIO} times the arrays of the entries held ({entries} "
               f"entr{'y' if entries == 1 else 'ies'}, {held} bytes)")
    elif (available := available_memory()) is not None and need > available:
        why = f"more than the {available} bytes ({_human(available)}) of memory available now"
    else:
        return None
    return (f"their CSR row pointer would need {need} bytes ({_human(need)}), {why}: read the "
            "file with clspmv.io.read_coo(path), in memory proportional to its entries, or fix "
            "the row count on the size line")


def _human(size: int) -> str:
    return f"{size / (1 << 30):.1f} GiB" if size >= 1 << 30 else f"{size / (1 << 20):.1f} MiB"


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
    explicit zeros kept); ``folded`` is emptied.

    Row-major keys give the CSR arrays directly; column-major ones the CSC arrays, then
    transposed by scipy's linear conversion (``tocsr``): the CSC and the CSR arrays, 24 bytes
    an entry, are the peak, within the bound while the CSC's column pointer is not much longer
    than the CSR's row pointer (:data:`~clspmv.io.entries.COLUMN_POINTER_EXTRA`).
    """
    keys, values = folded.keys, folded.sums
    folded.keys, folded.sums = np.zeros(0, dtype=np.int64), np.zeros(0)
    rows, cols = shape
    index = index_dtype(keys.size)
    if not folded.column_major:
        A = sp.csr_array((values, *_compressed(keys, rows, cols, index)), shape=shape)
        A.has_canonical_format = True  # sorted indices, no duplicates
        return A
    csc = sp.csc_array((values, *_compressed(keys, cols, rows, index)), shape=shape)
    del keys, values
    A = csc.tocsr()
    A.has_canonical_format = True
    return A


def _compressed(keys: np.ndarray, major: int, minor: int,
                index: type) -> tuple[np.ndarray, np.ndarray]:
    """The minor indices and the pointer of ``major + 1`` entries of the compressed arrays of
    ``keys`` (``major index * minor + minor index``, sorted), as ``index`` integers; the
    minor indices are written over the keys."""
    pointer = np.empty(major + 1, dtype=index)
    for lo in range(0, major + 1, _BLOCK):  # line i starts at the first key >= i * minor
        starts = np.arange(lo, min(lo + _BLOCK, major + 1), dtype=np.int64)
        starts *= minor
        pointer[lo:lo + starts.size] = np.searchsorted(keys, starts)
    return _minors(keys, minor, index), pointer


def _minors(keys: np.ndarray, minor: int, index: type) -> np.ndarray:
    """The minor indices of ``keys`` as ``index`` integers, written over the keys (emptied)
    from the front, a block at a time: the block written never reaches keys not yet read, and
    no second array of the entries is made."""
    if index is np.int64:
        np.remainder(keys, minor, out=keys)
        return keys
    size = keys.size
    out = keys.view(np.int32)
    for lo in range(0, size, _BLOCK):
        hi = min(lo + _BLOCK, size)
        out[lo:hi] = keys[lo:hi] % minor  # over the bytes of keys[lo // 2:hi // 2], read
    del out
    keys.resize((size + 1) // 2, refcheck=False)  # frees the upper half
    return keys.view(np.int32)[:size]
