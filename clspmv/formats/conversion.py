"""Numpy helpers the formats' conversions (``from_csr``) share: row lengths and entry positions,
the padding refusal rule, and the checks of the parameters common to several formats."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp

from ..errors import IndexOverflowError, UnsuitableFormatError
from .checks import check_int
from .kernels import INDEX_DTYPE, INDEX_LIMIT
from .layout import Layout

MAX_PADDING_RATIO = 10.0
"""A padded layout larger than this many times CSR's bytes (and than PADDING_FLOOR) is refused."""
PADDING_FLOOR = 16 << 20

UNROLL_FACTORS = (1, 2, 4, 8)
"""Values of the ``unroll`` parameter (the kernels' ``UNROLL``): entries of a row handled per
iteration of the forward product's inner loop, each into a partial sum of its own."""


def row_lengths(csr: sp.csr_matrix) -> np.ndarray:
    """Entries per row as int64."""
    return np.diff(csr.indptr).astype(np.int64)


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple``."""
    return -(-n // multiple) * multiple


def entry_rows(csr: sp.csr_matrix) -> np.ndarray:
    """The row index of every stored entry (int64)."""
    return np.repeat(np.arange(csr.shape[0], dtype=np.int64), row_lengths(csr))


def positions_in_runs(lengths: np.ndarray) -> np.ndarray:
    """For runs of ``lengths`` laid end to end, each element's position within its run
    (0, 1, 2, ...; int64)."""
    lengths = np.asarray(lengths, np.int64)
    return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths)


def position_in_row(csr: sp.csr_matrix) -> np.ndarray:
    """For every stored entry, its position within its row (0, 1, 2, ...)."""
    return positions_in_runs(row_lengths(csr))


def entry_index(csr: sp.csr_matrix, row_base: np.ndarray, stride: int = 1) -> np.ndarray:
    """For every stored entry of row ``r`` at position ``p`` in it, ``row_base[r] + stride * p``
    (int64): where a layout storing each row's entries ``stride`` slots apart from the row's
    first slot ``row_base[r]`` puts them. One repeat over the entries and one add, instead of
    :func:`entry_rows` and :func:`position_in_row` and the arithmetic on both."""
    indptr = csr.indptr.astype(np.int64)
    out = np.repeat(np.asarray(row_base, np.int64) - stride * indptr[:-1], np.diff(indptr))
    steps = np.arange(csr.nnz, dtype=np.int64)
    if stride != 1:
        steps *= stride
    out += steps
    return out


DIAGONAL_CHUNK_ENTRIES = 1 << 18
"""About this many entries per step of :func:`entry_diagonals`: temporaries the cache holds.
(One step over a whole matrix of 46-78 M entries wrote and re-read arrays of 8 bytes per entry
from memory and took 2-10x as long: reports/2026-11-26-dia.)"""


def entry_diagonals(csr: sp.csr_matrix) -> Iterator[tuple[int, int, np.ndarray]]:
    """``(start, stop, diagonal)`` for the entries ``start:stop`` of ``csr`` in steps of whole
    rows (about :data:`DIAGONAL_CHUNK_ENTRIES` entries each): the diagonal of each entry,
    column - row + (m - 1), in ``[0, m + n - 1)`` (int64)."""
    m = csr.shape[0]
    indptr = csr.indptr
    step = max(1, DIAGONAL_CHUNK_ENTRIES * m // max(csr.nnz, 1))
    for r0 in range(0, m, step):
        r1 = min(m, r0 + step)
        start, stop = int(indptr[r0]), int(indptr[r1])
        if start == stop:
            continue
        diagonal = np.repeat(np.arange(m - 1 - r0, m - 1 - r1, -1, dtype=np.int64),
                             np.diff(indptr[r0:r1 + 1]))
        diagonal += csr.indices[start:stop]
        yield start, stop, diagonal


def occupied_diagonals(csr: sp.csr_matrix) -> np.ndarray:
    """Ascending offsets (column - row, int64) of the diagonals holding a stored entry: a
    presence table over the m + n - 1 diagonals instead of a sort, O(nnz + m + n)."""
    m, n = csr.shape
    present = np.zeros(max(m + n - 1, 0), bool)
    for _, _, diagonal in entry_diagonals(csr):
        present[diagonal] = True
    return np.flatnonzero(present) - (m - 1)


def csr_bytes(csr: sp.csr_matrix) -> int:
    """Device bytes of the plain CSR layout: the yardstick padded layouts are measured against."""
    return csr.nnz * (csr.data.itemsize + INDEX_DTYPE.itemsize) + (csr.shape[0] + 1) * 4


def check_padding(name: str, padded_bytes: int, csr: sp.csr_matrix) -> None:
    """Refuse a layout whose padding would be absurd, before anything is allocated."""
    reference = csr_bytes(csr)
    if padded_bytes > max(MAX_PADDING_RATIO * reference, PADDING_FLOOR):
        raise UnsuitableFormatError(
            f"format {name!r} would need {padded_bytes} bytes for this {csr.shape[0]}x"
            f"{csr.shape[1]} matrix with {csr.nnz} entries, against {reference} bytes in CSR "
            f"(more than {MAX_PADDING_RATIO:g}x); use 'csr-vector', 'sell' or 'hyb' instead"
        )


def check_flag(name: str, value: object, default: bool) -> bool:
    """A parameter that is on or off: ``default`` for None, else True or False, or 1 or 0 as
    :attr:`Format.params` stores it (a pickled or copied matrix converts again with its stored
    parameters); TypeError for anything else."""
    if value is None:
        return default
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer))
                                                and value in (0, 1)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {value!r}")


def check_unroll(unroll: object) -> int:
    """``unroll`` as an int, or ValueError unless it is one of :data:`UNROLL_FACTORS`."""
    if isinstance(unroll, bool) or not isinstance(unroll, (int, np.integer)) \
            or int(unroll) not in UNROLL_FACTORS:
        raise ValueError(f"unroll must be one of {UNROLL_FACTORS}, got {unroll!r}")
    return int(unroll)


def check_threads(threads: object, choices: tuple[int, ...], layout: Layout) -> int:
    """``threads`` (work-items per row) as an int; ValueError unless it is one of ``choices``
    and at most the layout's work-group size (TypeError unless an int)."""
    count = check_int("threads_per_row", threads)
    if count not in choices or count > layout.work_group_size:
        raise ValueError(
            f"threads_per_row must be one of {choices} and at most the work-group "
            f"size {layout.work_group_size}, got {threads}"
        )
    return count


def check_column_map(column_map: object, columns: int) -> np.ndarray:
    """``column_map`` as the kernels' index type: ``columns`` distinct non-negative indices (one
    per column of a block), else ValueError (IndexOverflowError beyond 32-bit indices)."""
    cmap = np.asarray(column_map)
    if cmap.ndim != 1 or cmap.size != columns or (cmap.size and (
            cmap.dtype.kind not in "iu" or cmap.min() < 0)):
        raise ValueError(f"column_map must hold {columns} non-negative integer column indices "
                         f"(one per column of the block), got shape {cmap.shape} and dtype "
                         f"{cmap.dtype}")
    if cmap.size and cmap.max() > INDEX_LIMIT:
        raise IndexOverflowError("column_map holds indices beyond the kernels' 32-bit range")
    if np.unique(cmap).size != cmap.size:
        raise ValueError("column_map must not repeat a column (a transpose product would "
                         "write one entry of y twice)")
    return cmap.astype(INDEX_DTYPE)
