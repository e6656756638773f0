"""The validating Matrix Market reader: a piece of the body parsed, every problem with its line.

It reads any piece that :mod:`clspmv.io.grammar` allows (comments and blank lines in the body,
tabs, CRLF, ``inf``/``nan``, ``+`` signs, ...) and raises
:class:`~clspmv.errors.MatrixFormatError` ``"<file>: line <N>: <what>"`` for the first line
that breaks it, in file order. The work is done in bulk with numpy on parts of at most
:data:`PART` bytes, so memory stays bounded whatever a line holds (about a second per million
entries).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from clspmv.io.entries import Entries, array_positions
from clspmv.io.grammar import INTEGER
from clspmv.io.header import Header
from clspmv.io.source import Piece, Source, show

PART = 1 << 19
"""Bytes of the body tokenized at a time (a part ends at a line end)."""

_SPACE = np.zeros(256, dtype=bool)
_SPACE[list(b" \t\n\r")] = True
# bytes.split() splits at VT and FF too, which the grammar does not: they become another
# control byte (a line that holds one is refused anyway; a comment line may).
_SPLIT = bytes(1 if b in b"\x0b\x0c" else b for b in range(256))
_CONTROL = np.zeros(256, dtype=bool)
_CONTROL[[b for b in range(0x20) if b not in b"\t\n\r"]] = True  # bytes no data line may hold


class Body:
    """The data lines of a part of the body, split into tokens.

    Attributes: ``tokens`` (the tokens of the data lines; blank and comment lines left out),
    ``line`` (the file line number of every data line), ``ntok`` (tokens on every data line),
    ``last_line`` (the number of the part's last line) and ``control`` (``(line, byte)`` of the
    first control byte on a data line, or ``None``).
    """

    def __init__(self, data: bytes, first_line: int) -> None:
        buf = np.frombuffer(data, dtype=np.uint8)
        newlines = np.flatnonzero(buf == 0x0A)
        partial = 1 if data and data[-1] != 0x0A else 0
        self.last_line = first_line - 1 + newlines.size + partial

        # A token starts at a non-space byte that follows a space or the start.
        space = _SPACE[buf]
        start = np.empty(buf.size, dtype=bool)
        if buf.size:
            start[0] = not space[0]
            np.greater(space[:-1], space[1:], out=start[1:])
        tok_pos = np.flatnonzero(start)
        tok_line = np.searchsorted(newlines, tok_pos)  # 0-based line of the part of each token
        tokens = data.translate(_SPLIT).split()
        first_of_line = np.ones(tok_pos.size, dtype=bool)
        first_of_line[1:] = tok_line[1:] != tok_line[:-1]
        comment_line = np.zeros(newlines.size + partial, dtype=bool)
        comment_line[tok_line[first_of_line & (buf[tok_pos] == ord("%"))]] = True

        self.control: tuple[int, int] | None = None
        control = np.flatnonzero(_CONTROL[buf])
        if control.size:
            where = np.searchsorted(newlines, control)
            on_data = ~comment_line[where]
            if on_data.any():
                k = int(np.argmax(on_data))
                self.control = (first_line + int(where[k]), int(buf[control[k]]))

        keep = ~comment_line[tok_line]
        if not keep.all():
            tokens = [t for t, k in zip(tokens, keep.tolist(), strict=True) if k]
            tok_line, first_of_line = tok_line[keep], first_of_line[keep]
        starts = np.flatnonzero(first_of_line)
        self.tokens: list[bytes] = tokens
        self.line = first_line + tok_line[starts]
        self.ntok = np.diff(np.append(starts, tok_line.size))
        self.underscore = b"_" in data  # Python's int() and float() accept 1_0; the grammar not

    @property
    def count(self) -> int:
        """Number of data lines."""
        return int(self.line.size)


def _first_failure(tokens: list[bytes], dtype: type) -> int:
    """The index of the first token numpy cannot convert to ``dtype``, by bisection (about two
    more conversions of the column)."""
    lo, hi = 0, len(tokens)  # invariant: tokens[lo:hi] holds a bad token
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            np.array(tokens[lo:mid], dtype=dtype)
        except (ValueError, OverflowError):
            hi = mid
        else:
            lo = mid
    return lo


def _column(tokens: list[bytes], dtype: type, underscore: bool) -> tuple[np.ndarray, int]:
    """``(values, bad)``: the tokens converted up to the first one the grammar refuses
    (``bad``, or -1 where there is none)."""
    bad = next((k for k, t in enumerate(tokens) if b"_" in t), -1) if underscore else -1
    head = tokens if bad < 0 else tokens[:bad]
    try:
        return np.array(head, dtype=dtype), bad
    except (ValueError, OverflowError):
        bad = _first_failure(head, dtype)
        return np.array(head[:bad], dtype=dtype), bad


class _Problems:
    """The problems found in a part, of which the first in file order is raised."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.found: list[tuple[int, int, str]] = []  # (line, rank on the line, message)

    def add(self, line: int, rank: int, message: str) -> None:
        self.found.append((line, rank, message))

    def raise_first(self) -> None:
        if self.found:
            line, _, message = min(self.found)
            raise self.src.error(line, message)


def _layout(header: Header) -> str:
    if header.format == "array":
        return "'value'"
    return "'row col'" if header.field == "pattern" else "'row col value'"


def _indices(problems: _Problems, body: Body, tokens: list[bytes], size: int, name: str,
             rank: int) -> tuple[np.ndarray, int]:
    """A column of 1-based indices checked against ``size``; returns it and the number of its
    leading entries that are good."""
    values, bad = _column(tokens, np.int64, body.underscore)
    out = np.flatnonzero((values < 1) | (values > size))
    if out.size:
        k = int(out[0])
        index = int(values[k])
        problems.add(int(body.line[k]), rank,
                     f"{name} index {index} is not valid: indices are 1-based" if index < 1
                     else f"{name} index {index} is out of range 1..{size}")
        return values, k
    if bad >= 0:
        token = tokens[bad]
        reason = (f"is out of range 1..{size}" if INTEGER.fullmatch(token)
                  else "is not an integer")
        problems.add(int(body.line[bad]), rank, f"{name} index {show(token)} {reason}")
        return values, bad
    return values, len(tokens)


def _values(problems: _Problems, body: Body, tokens: list[bytes], field: str,
            rank: int) -> tuple[np.ndarray, int]:
    """A column of values as float64; returns it and the number of its leading good entries."""
    dtype = np.int64 if field == "integer" else np.float64
    values, bad = _column(tokens, dtype, body.underscore)
    if bad < 0:
        return values.astype(np.float64, copy=False), len(tokens)
    token = tokens[bad]
    if dtype is np.int64:
        reason = ("is beyond the int64 range of an integer field" if INTEGER.fullmatch(token)
                  else "is not an integer")
    else:
        reason = "is not a number"
    problems.add(int(body.line[bad]), rank, f"value {show(token)} {reason}")
    return values.astype(np.float64, copy=False), bad


def parse_part(src: Source, data: bytes, first_line: int, header: Header,
               found: int) -> tuple[Entries, int]:
    """The entries of ``data`` (whole lines from file line ``first_line``, the file's data
    lines ``found`` onwards) and the number of its last line; raises for its first problem."""
    body = Body(data, first_line)
    problems = _Problems(src)
    if body.control is not None:
        line, byte = body.control
        problems.add(line, 0, f"invalid control byte 0x{byte:02x}")
    room = header.entries - found
    want = header.tokens_per_entry
    limit = min(body.count, room)
    wrong = np.flatnonzero(body.ntok[:limit] != want)
    if wrong.size:
        k = int(wrong[0])
        problems.add(int(body.line[k]), 1,
                     f"wrong number of tokens in entry {found + k + 1}: expected {want} "
                     f"{_layout(header)}, found {int(body.ntok[k])}")
        limit = k
    if body.count > room:
        problems.add(int(body.line[room]), 1,
                     f"too many entries: the size line declares {header.entries}, "
                     f"this is entry {header.entries + 1}")
    tokens = body.tokens[: limit * want]  # the lines before limit hold want tokens each

    if header.format == "array":
        v, good = _values(problems, body, tokens, header.field, 2)
        problems.raise_first()
        return array_positions(header, found, v), body.last_line

    r, good_r = _indices(problems, body, tokens[0::want], header.rows, "row", 2)
    c, good_c = _indices(problems, body, tokens[1::want], header.cols, "column", 3)
    if header.field == "pattern":
        v, good_v = np.ones(limit, dtype=np.float64), limit
    else:
        v, good_v = _values(problems, body, tokens[2::want], header.field, 4)
    good = min(good_r, good_c, good_v)
    if header.symmetry == "skew-symmetric":
        diagonal = np.flatnonzero(r[:good] == c[:good])
        if diagonal.size:
            k = int(diagonal[0])
            problems.add(int(body.line[k]), 5,
                         f"diagonal entry ({int(r[k])}, {int(c[k])}) in a skew-symmetric file "
                         "(its diagonal is zero and must not be stored)")
    problems.raise_first()
    return Entries((r - 1).astype(np.int32), (c - 1).astype(np.int32), v, limit), body.last_line


def parse_piece(src: Source, piece: Piece, header: Header,
                found: int) -> Iterator[tuple[Entries, int]]:
    """:func:`parse_part` over a piece of any size, :data:`PART` bytes at a time: the entries
    of each part and the number of its last line."""
    data, line = piece
    if not data.strip(b" \t\r\n"):  # blank lines only: nothing to tokenize
        yield Entries.empty(), line - 1 + data.count(b"\n") + (data[-1:] != b"\n")
        return
    start = 0
    while start < len(data):
        end = len(data)
        if end - start > PART:  # cut after the last line end within PART bytes, or the next
            end = (data.rfind(b"\n", start, start + PART) + 1
                   or data.find(b"\n", start + PART) + 1 or end)
        entries, last_line = parse_part(src, data[start:end], line, header, found)
        yield entries, last_line
        found += entries.count
        line = last_line + 1
        start = end
