"""The fast Matrix Market path: scipy's fast_matrix_market parser behind cheap checks.

``scipy.io.mmread`` (fast_matrix_market underneath since scipy 1.12, multithreaded) parses
the body. It is lenient where clspmv's validating reader is not: it ignores whatever follows
the last number of a line (``1 1 2.5 junk``, ``1.5D-03`` read as 1.5) and reads the longest
number at the start of a token. So its result is only taken when a scan of the body with
C-speed ``bytes`` methods shows the canonical layout that leaves no
room for that: exactly one data line per declared entry (no blank or comment lines), one or
two spaces between the tokens of a line (SuiteSparse pads non-negative values with one; no
leading or trailing blanks, no tabs or CRs), and only the characters numbers are written with
(digits, ``+-.eE``; no ``inf``/``nan``). A line holding more tokens than it should then shows
in the count of separators, since the parser refuses a line with fewer.
Anything else, and every error of the parser, returns ``None``: the caller then runs the
validating reader, which either reads the file or names the line that is wrong. The scan is a
second pass over the file, before the parse (the parser holds the GIL, so a scan beside it
would not overlap): it costs about a tenth to a third of the parse. Files written
by :func:`clspmv.io.write`, ``scipy.io.mmwrite`` and SuiteSparse take the fast path.

What the scan cannot see is a malformed token made of number characters inside that layout
(``1e``, ``1.2.3``, ``2-3`` glued to its neighbour); such a file is read as fast_matrix_market
reads it.
"""

from __future__ import annotations

import dataclasses
import gzip
import os
import tempfile
import zlib
from typing import IO

import numpy as np
import scipy.io
import scipy.sparse as sp

from clspmv.io.header import Header
from clspmv.io.source import CHUNK

_DIGITS = b"0123456789"
_NUMBERS = {  # the bytes of a canonical body, spaces and newlines aside
    "pattern": _DIGITS,
    "integer": _DIGITS + b"+-",
    "real": _DIGITS + b"+-.eE",
}
_GZIP_RATIO = 1100  # deflate never expands more than 1032:1


class _Scan:
    """Counts over the body bytes (after ``skip`` header bytes) of a stream.

    ``sink``, when given, receives every byte read (header included): the decompressed copy
    of a gzip file that the parser then reads.
    """

    def __init__(self, fh: IO[bytes] | None, header: Header, sink: IO[bytes] | None = None):
        self.newlines = self.separators = self.bad = self.size = 0
        self.last = b"\n"
        self.error: BaseException | None = None
        self._fh, self._skip, self._sink = fh, header.body_offset, sink
        self._numbers = _NUMBERS[header.field]
        self._gaps = header.tokens_per_entry - 1  # separators on a data line

    def run(self) -> None:
        """Scan the stream to its end."""
        assert self._fh is not None
        carry = b""  # the start of a line that the previous chunk ends with
        try:
            skip = self._skip
            # bytes, not a reused bytearray: bytes.translate is twice as fast.
            while data := self._fh.read(CHUNK):
                if self._sink is not None:
                    self._sink.write(data)
                if skip >= len(data):
                    skip -= len(data)
                    continue
                if skip:
                    data, skip = data[skip:], 0
                carry = self.add(data, carry)
            self.add(b"", carry)
        except (EOFError, OSError, zlib.error) as exc:  # truncated or corrupt gzip data
            self.error = exc

    def add(self, data: bytes, carry: bytes = b"") -> bytes:
        """Count ``data``, the next piece of the body after ``carry`` (the start of a line,
        already counted but for its spaces); return the start of a line ``data`` ends with.
        ``data`` empty: the body ends, ``carry`` is its last line."""
        if not data:
            self._separators(carry, 0, len(carry), 1)
            return b""
        self.size += len(data)
        # What is left once the number characters are gone: spaces, newlines and bad bytes
        # (a tenth of the data, counted quickly).
        rest = data.translate(None, self._numbers)
        newlines = rest.count(b"\n")
        spaces = rest.count(b" ")
        self.newlines += newlines
        self.bad += len(rest) - newlines - spaces
        self.last = data[-1:]
        first = data.find(b"\n") + 1
        if not first:
            return carry + data
        head = carry + data[:first]
        self._separators(head, 0, len(head), 1)
        cut = data.rfind(b"\n") + 1
        spaces -= data.count(b" ", 0, first) + data.count(b" ", cut)
        self._separators(data, first, cut, newlines - 1, spaces)
        return data[cut:]

    def _separators(
        self, data: bytes, start: int, end: int, lines: int, spaces: int | None = None
    ) -> None:
        """Count the separators of the ``lines`` whole lines ``data[start:end]`` (the last may
        lack its newline; ``spaces``: their spaces, if known): spaces less non-overlapping
        double spaces, so that a run of one or two spaces counts one and a longer run more.
        Where the spaces are just as many as the lines need, no run is longer than one: the
        double spaces are not counted."""
        if end <= start:
            return
        if spaces is None:
            spaces = data.count(b" ", start, end)
        if spaces != self._gaps * lines:
            spaces -= data.count(b"  ", start, end)
        self.separators += spaces

    def canonical(self, header: Header) -> bool:
        """Whether the body has exactly the canonical layout for ``header``."""
        if self.error is not None or self.bad:
            return False
        lines = self.newlines + (1 if self.size and self.last != b"\n" else 0)
        want = header.tokens_per_entry
        return lines == header.entries and self.separators == (want - 1) * header.entries


def body_could_hold(path: str | os.PathLike[str], gzipped: bool, header: Header) -> bool:
    """Whether the file is large enough for the declared entries (else the parser would
    allocate arrays for entries that are not there: the validating reader says so instead)."""
    size = os.path.getsize(path)
    room = size * _GZIP_RATIO if gzipped else size - header.body_offset
    # Each data line has ``want`` tokens of at least one byte and a separator after each.
    return header.entries * 2 * header.tokens_per_entry <= room + 1


def _parse(name: str) -> np.ndarray | sp.coo_matrix | None:
    try:
        return scipy.io.mmread(name)
    except (ValueError, OverflowError, RuntimeError):
        return None


def read_fast(path: str | os.PathLike[str], gzipped: bool, header: Header) -> sp.csr_matrix | None:
    """``path`` read by fast_matrix_market as a float64 CSR matrix, or ``None`` where the
    validating reader must decide (see the module's docstring)."""
    name = os.fspath(path)
    if gzipped:
        # fast_matrix_market reads Python streams 1 KiB per call: decompress to a file first.
        with tempfile.NamedTemporaryFile(suffix=".mtx") as tmp:
            with open(name, "rb") as raw, gzip.GzipFile(fileobj=raw) as fh:
                scan = _Scan(fh, header, sink=tmp)
                scan.run()
            tmp.flush()
            if not scan.canonical(header):
                return None
            result = _parse(tmp.name)
    elif name.endswith((".gz", ".bz2")):
        # scipy would decompress by the name: give it the plain file under a plain name.
        with tempfile.TemporaryDirectory() as tmp:
            link = os.path.join(tmp, "plain.mtx")
            try:
                os.symlink(os.path.abspath(name), link)
            except OSError:
                return None
            return read_fast(link, gzipped, header)
    else:
        # The scan goes first: the parser holds the GIL, so a scan beside it would not overlap.
        with open(name, "rb") as fh:
            scan = _Scan(fh, header)
            scan.run()
        if not scan.canonical(header):
            return None
        result = _parse(name)
    if result is None:
        return None
    return _to_csr(result, header)


def _to_csr(result: np.ndarray | sp.coo_matrix, header: Header) -> sp.csr_matrix | None:
    if result.shape != header.shape:
        return None
    if header.format == "array":
        if not isinstance(result, np.ndarray):
            return None
        return sp.csr_matrix(result.astype(np.float64, copy=False))
    if not sp.issparse(result):
        return None
    coo = result.tocoo() if result.format != "coo" else result
    n = header.entries
    # scipy appends the mirrored off-diagonal entries after the file's own, in file order:
    # the order of the validating reader, so duplicates are summed alike.
    row, col = coo.row, coo.col
    if header.symmetry == "general":
        expected = n
    else:
        diagonal = np.count_nonzero(row[:n] == col[:n])
        if header.symmetry == "skew-symmetric" and diagonal:
            return None  # the validating reader names the line
        expected = 2 * n - diagonal
    if coo.nnz != expected:
        return None
    if coo.nnz and (
        row.min() < 0 or col.min() < 0 or row.max() >= header.rows or col.max() >= header.cols
    ):
        return None
    A = sp.coo_matrix(
        (coo.data.astype(np.float64, copy=False), (row, col)), shape=header.shape
    ).tocsr()
    A.sum_duplicates()
    return A


def parse_lines(
    piece: bytes, header: Header, room: int, scratch: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Whole data lines ``piece`` of a coordinate file parsed by fast_matrix_market.

    Returns the 1-based rows and columns (int64) and the float64 values of the lines, in
    file order and not mirrored, or ``None`` where the validating reader must decide: the
    lines are not canonical, more than ``room`` (the entries still declared), or wrong.
    ``scratch`` is a file the lines are copied to, under a header of their own.
    """
    scan = _Scan(None, header)
    scan.add(b"", scan.add(piece))
    count = scan.newlines + (1 if piece[-1:] not in (b"", b"\n") else 0)
    if count > room or not scan.canonical(dataclasses.replace(header, entries=count)):
        return None
    with open(scratch, "wb") as fh:
        fh.write(f"%%MatrixMarket matrix coordinate {header.field} general\n"
                 f"{header.rows} {header.cols} {count}\n".encode())
        fh.write(piece)
    result = _parse(scratch)
    if result is None or not sp.issparse(result) or result.shape != header.shape:
        return None
    coo = result.tocoo()
    if coo.nnz != count:
        return None
    r = coo.row.astype(np.int64) + 1
    c = coo.col.astype(np.int64) + 1
    if count and (r.min() < 1 or c.min() < 1 or r.max() > header.rows or c.max() > header.cols):
        return None
    if header.symmetry == "skew-symmetric" and np.any(r == c):
        return None  # the validating reader names the line
    return r, c, coo.data.astype(np.float64, copy=False)
