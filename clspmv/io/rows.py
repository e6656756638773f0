"""Reading rows ``start:stop`` of a Matrix Market file without holding the whole matrix.

The body is streamed a chunk of whole lines at a time; a chunk in the canonical layout is
parsed by fast_matrix_market (see :mod:`clspmv.io.fast`), any other through the validating
reader's pieces (so a malformed file raises the same
:class:`~clspmv.errors.MatrixFormatError` with its line). Only the entries that land in the
row range are kept: for a symmetric or skew-symmetric file
an entry ``(i, j)`` lands in row ``i`` and, mirrored, in row ``j``.
"""

from __future__ import annotations

import operator
import os
import tempfile

import numpy as np
import scipy.sparse as sp

from clspmv.io.fast import parse_lines
from clspmv.io.header import Header, parse_header
from clspmv.io.source import CHUNK, Source
from clspmv.io.validating import (
    Body,
    check_tokens,
    mirror,
    parse_triplets,
    parse_values,
    too_few,
    too_many,
)


def _bound(value: object, name: str) -> int:
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(f"{name} must be an integer, not {type(value).__name__}") from None


class _Kept:
    """The entries of the row range found so far: the file's own, then the mirrored ones."""

    def __init__(self, header: Header, start: int, stop: int) -> None:
        self.header, self.start, self.stop = header, start, stop
        self.own: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.mirrored: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.scratch = ""  # a file for fast_matrix_market to parse a chunk from

    def add(self, into: list, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        """Keep the entries of 0-based rows ``r`` that fall in the range."""
        keep = (r >= self.start) & (r < self.stop)
        if keep.any():
            into.append((r[keep] - self.start, c[keep], v[keep]))

    def matrix(self) -> sp.csr_matrix:
        parts = self.own + self.mirrored
        shape = (self.stop - self.start, self.header.cols)
        if not parts:
            return sp.csr_matrix(shape, dtype=np.float64)
        r, c, v = (np.concatenate(x) for x in zip(*parts, strict=True))
        A = sp.coo_matrix((v, (r, c)), shape=shape).tocsr()
        A.sum_duplicates()  # as read() does: duplicates summed, indices sorted, zeros kept
        return A


def read_rows(
    path: str | os.PathLike[str], start: int, stop: int, *, chunk_size: int = CHUNK
) -> sp.csr_matrix:
    """Read rows ``start`` to ``stop - 1`` of a Matrix Market file, streaming it.

    The result equals ``read(path)[start:stop]`` (same values, bit for bit) while memory
    holds only one chunk of the file and the entries of those rows: for distributing a
    matrix over processes that each read their own rows (see :func:`read_header` for the
    shape to partition).

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).
        start, stop: 0-based row range, ``0 <= start <= stop <= rows``.
        chunk_size: bytes of the file parsed at a time (memory scales with it).

    Returns:
        A float64 :class:`scipy.sparse.csr_matrix` of shape ``(stop - start, cols)`` with
        sorted indices: duplicates summed, explicit zeros kept, symmetric and
        skew-symmetric files mirrored, pattern entries 1.0 (as :func:`read`).

    Raises:
        ValueError: the range is not within the matrix's rows, or ``chunk_size < 1``.
        TypeError: ``start`` or ``stop`` is not an integer.
        MatrixFormatError: the file is malformed anywhere (the whole file is checked,
            whatever the range); the message names the line.
        OSError: the file cannot be opened.
    """
    start, stop = _bound(start, "start"), _bound(stop, "stop")
    if _bound(chunk_size, "chunk_size") < 1:
        raise ValueError(f"chunk_size must be at least 1, not {chunk_size}")
    src = Source(path)
    try:
        header = parse_header(src)
        if not 0 <= start <= stop <= header.rows:
            raise ValueError(
                f"row range {start}:{stop} is not within the {header.rows} rows of "
                f"{src.name}: use 0 <= start <= stop <= {header.rows}"
            )
        kept = _Kept(header, start, stop)
        found, line = 0, header.body_line
        carry = b""
        with tempfile.TemporaryDirectory() as tmp:
            kept.scratch = os.path.join(tmp, "lines.mtx")
            for chunk in src.chunks(chunk_size):
                data = carry + chunk
                cut = data.rfind(b"\n") + 1
                carry = data[cut:]
                if cut:
                    found, line = _scan(src, data[:cut], line, found, kept)
            if carry:
                found, line = _scan(src, carry, line, found, kept)
        if found < header.entries:
            raise too_few(src, line - 1, found, header)
        return kept.matrix()
    finally:
        src.close()


def _scan(src: Source, piece: bytes, line: int, found: int, kept: _Kept) -> tuple[int, int]:
    """Check and keep the entries of ``piece`` (whole lines from file line ``line`` on, the
    file's data lines ``found`` onwards); return the updated ``(found, line)``."""
    header = kept.header
    room = max(0, header.entries - found)
    if header.format == "coordinate":
        fast = parse_lines(piece, header, room, kept.scratch)
        if fast is not None:
            _keep(kept, *fast)
            return found + fast[0].size, line + piece.count(b"\n") + (piece[-1:] != b"\n")
    body = Body(src, piece, first_line=line)
    check_tokens(src, body, header, found, room)
    if body.count > room:
        raise too_many(src, int(body.line[room]), header)
    if body.count:
        if header.format == "array":
            values = parse_values(src, body, body.tokens, header)
            k = found + np.arange(body.count, dtype=np.int64)
            nonzero = values != 0  # as read(): zeros of a dense file are not stored
            kept.add(kept.own, (k % header.rows)[nonzero], (k // header.rows)[nonzero],
                     values[nonzero])
        else:
            _keep(kept, *parse_triplets(src, body, header))
    return found + body.count, body.last_line + 1


def _keep(kept: _Kept, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
    """Keep the entries (1-based ``r``, ``c``) in range, and their mirrors in range."""
    kept.add(kept.own, r - 1, c - 1, v)
    if kept.header.symmetry != "general":
        mr, mc, mv = mirror(r, c, v, kept.header.symmetry)
        kept.add(kept.mirrored, mr - 1, mc - 1, mv)
