"""Reading rows ``start:stop`` of a Matrix Market file without holding the whole matrix.

The body is streamed a piece of whole lines at a time, each piece read by the fast or the
validating path as :func:`clspmv.io.read` reads it (:mod:`clspmv.io.reader`), so a malformed
file raises the same :class:`~clspmv.errors.MatrixFormatError`. Only the entries that land in
the row range are kept: for a symmetric or skew-symmetric file an entry ``(i, j)`` lands in row
``i`` and, mirrored, in row ``j``.
"""

from __future__ import annotations

import operator
import os

import scipy.sparse as sp

from clspmv.io.entries import FOLD_ENTRIES
from clspmv.io.header import Header
from clspmv.io.reader import collect
from clspmv.io.source import CHUNK


def _bound(value: object, name: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


def read_rows(
    path: str | os.PathLike[str], start: int, stop: int, *, chunk_size: int = CHUNK
) -> sp.csr_array:
    """Read rows ``start`` to ``stop - 1`` of a Matrix Market file, streaming it.

    The result equals ``read(path)[start:stop]`` (same values, bit for bit, but sums of
    duplicates that either read summed while reading, see :func:`read`) while memory holds
    only one chunk of the file and the entries of those rows: for distributing a matrix over
    processes that each read their own rows (see :func:`read_header` for the shape to
    partition).

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).
        start, stop: 0-based row range, ``0 <= start <= stop <= rows``.
        chunk_size: bytes of the file parsed at a time (memory scales with it).

    Returns:
        A float64 :class:`scipy.sparse.csr_array` of shape ``(stop - start, cols)`` with
        sorted indices: duplicates summed, explicit zeros kept, symmetric and
        skew-symmetric files mirrored, pattern entries 1.0 (as :func:`read`).

    Raises:
        ValueError: the range is not within the matrix's rows, or ``chunk_size < 1``.
        TypeError: ``start`` or ``stop`` is not an integer.
        MatrixFormatError: the file is malformed anywhere (the whole file is checked,
            whatever the range), or the range's row pointer is absurd for its entries (as in
            :func:`read`); the message names the line.
        OSError: the file cannot be opened.
    """
    start, stop = _bound(start, "start"), _bound(stop, "stop")
    if _bound(chunk_size, "chunk_size") < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    name = os.fspath(path)

    def within(header: Header) -> tuple[int, int]:
        if not 0 <= start <= stop <= header.rows:
            raise ValueError(
                f"row range {start}:{stop} is not within the {header.rows} rows of "
                f"{name}: use 0 <= start <= stop <= {header.rows}"
            )
        return start, stop

    return collect(path, rows=within, chunk_size=chunk_size, fold_at=FOLD_ENTRIES).csr()
