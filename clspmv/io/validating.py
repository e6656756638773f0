"""The validating Matrix Market reader: every problem reported with its line.

The data body is scanned in bulk with numpy (about a second per million entries); every
problem raises :class:`~clspmv.errors.MatrixFormatError` ``"<file>: line <N>: <what>"``.
:func:`clspmv.io.read` runs it only where its fast path cannot vouch for a file;
:func:`clspmv.io.read_rows` runs its pieces on one chunk of the body at a time.
"""

from __future__ import annotations

import itertools
import os

import numpy as np
import scipy.sparse as sp

from clspmv.io.header import Header, parse_header
from clspmv.io.source import Source, show


class Body:
    """The data body split into tokens, with the line of every data line.

    Attributes: ``tokens`` (the tokens of the data lines, comment lines left out),
    ``line`` (the 1-based file line number of every data line), ``ntok`` (the number of
    tokens on every data line) and ``last_line`` (the number of the last line of the file).
    """

    def __init__(self, src: Source, body: bytes, first_line: int | None = None) -> None:
        if first_line is None:
            first_line = src.lineno + 1  # file line number of the body's first line
        buf = np.frombuffer(body, dtype=np.uint8)
        newlines = np.flatnonzero(buf == 0x0A)
        partial = 1 if body and body[-1] != 0x0A else 0
        self.last_line = first_line - 1 + newlines.size + partial

        # Control bytes other than the whitespace ones would make bytes.split() and the
        # scan below disagree about token boundaries; they have no place in a body anyway.
        bad = (buf < 0x09) | ((buf > 0x0D) & (buf < 0x20))
        if bad.any():
            pos = int(np.argmax(bad))
            line = first_line + int(np.searchsorted(newlines, pos))
            raise src.error(line, f"invalid control byte 0x{body[pos]:02x}")

        # A token starts at a non-whitespace byte that follows whitespace or the start.
        space = buf <= 0x20
        start = np.empty(buf.size, dtype=bool)
        if buf.size:
            start[0] = not space[0]
            np.greater(space[:-1], space[1:], out=start[1:])
        tok_pos = np.flatnonzero(start)
        tok_line = np.searchsorted(newlines, tok_pos)  # 0-based body line of every token
        tokens = body.split()
        if len(tokens) != tok_pos.size:  # pragma: no cover - guarded by the control-byte check
            raise AssertionError("token scan disagrees with bytes.split()")

        first_of_line = np.ones(tok_pos.size, dtype=bool)
        first_of_line[1:] = tok_line[1:] != tok_line[:-1]
        comment = first_of_line & (buf[tok_pos] == ord("%"))
        if comment.any():
            nlines = newlines.size + partial
            is_comment_line = np.zeros(nlines, dtype=bool)
            is_comment_line[tok_line[comment]] = True
            keep = ~is_comment_line[tok_line]
            tokens = list(itertools.compress(tokens, keep.tolist()))
            tok_line = tok_line[keep]
            first_of_line = first_of_line[keep]
        starts = np.flatnonzero(first_of_line)
        self.tokens: list[bytes] = tokens
        self.line = first_line + tok_line[starts]
        self.ntok = np.diff(np.append(starts, tok_line.size))

    @property
    def count(self) -> int:
        """Number of data lines."""
        return int(self.line.size)


def parse_column(
    src: Source, body: Body, tokens: list[bytes], dtype: type, what: str
) -> np.ndarray:
    """Convert one column of tokens (one per entry) to ``dtype`` in bulk.

    On failure the first bad token is found by bisection, which costs about two more
    conversions of the column, and reported with its line.
    """
    try:
        return np.array(tokens, dtype=dtype)
    except (ValueError, OverflowError):
        pass
    lo, hi = 0, len(tokens)  # invariant: tokens[lo:hi] holds a bad token
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            np.array(tokens[lo:mid], dtype=dtype)
        except (ValueError, OverflowError):
            hi = mid
        else:
            lo = mid
    kind = "an integer" if dtype is np.int64 else "a number"
    raise src.error(int(body.line[lo]), f"{what} {show(tokens[lo])} is not {kind}")


def _layout(header: Header) -> str:
    if header.format == "array":
        return "'value'"
    return "'row col'" if header.field == "pattern" else "'row col value'"


def check_tokens(src: Source, body: Body, header: Header, first_entry: int, upto: int) -> None:
    """Every one of the first ``upto`` data lines of ``body`` has the right number of tokens.

    ``first_entry`` is the 0-based number of the body's first data line in the file.
    """
    want = header.tokens_per_entry
    wrong = np.flatnonzero(body.ntok[:upto] != want)
    if wrong.size:
        k = int(wrong[0])
        raise src.error(
            int(body.line[k]),
            f"wrong number of tokens in entry {first_entry + k + 1}: expected {want} "
            f"{_layout(header)}, found {int(body.ntok[k])}",
        )


def too_few(src: Source, last_line: int, found: int, header: Header) -> Exception:
    """The error for a file that ends at ``last_line`` after ``found`` entries."""
    return src.error(
        last_line,
        f"too few entries: the file ends here with {found} entries, "
        f"but the size line declares {header.entries}",
    )


def too_many(src: Source, line: int, header: Header) -> Exception:
    """The error for the first data line beyond the declared count, on ``line``."""
    return src.error(
        line,
        f"too many entries: the size line declares {header.entries}, "
        f"this is entry {header.entries + 1}",
    )


def parse_values(src: Source, body: Body, tokens: list[bytes], header: Header) -> np.ndarray:
    """The value tokens (one per data line of ``body``) as float64."""
    value_type = np.int64 if header.field == "integer" else np.float64
    return parse_column(src, body, tokens, value_type, "value").astype(np.float64, copy=False)


def parse_triplets(
    src: Source, body: Body, header: Header
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 1-based row and column indices and the float64 values of a coordinate ``body``.

    Every data line must have the right number of tokens (see :func:`check_tokens`);
    indices are checked against the shape and skew-symmetric diagonals refused.
    """
    want = header.tokens_per_entry
    tokens = body.tokens
    r = parse_column(src, body, tokens[0::want], np.int64, "row index")
    c = parse_column(src, body, tokens[1::want], np.int64, "column index")
    for index, size, name in ((r, header.rows, "row"), (c, header.cols, "column")):
        bad = (index < 1) | (index > size)
        if bad.any():
            k = int(np.argmax(bad))
            reason = (
                f"{name} index {int(index[k])} is not valid: indices are 1-based"
                if index[k] < 1
                else f"{name} index {int(index[k])} is out of range 1..{size}"
            )
            raise src.error(int(body.line[k]), reason)
    if header.field == "pattern":
        v = np.ones(r.size, dtype=np.float64)
    else:
        v = parse_values(src, body, tokens[2::want], header)
    if header.symmetry == "skew-symmetric":
        diagonal = r == c
        if diagonal.any():
            k = int(np.argmax(diagonal))
            raise src.error(
                int(body.line[k]),
                f"diagonal entry ({int(r[k])}, {int(c[k])}) in a skew-symmetric file "
                "(its diagonal is zero and must not be stored)",
            )
    return r, c, v


def mirror(
    r: np.ndarray, c: np.ndarray, v: np.ndarray, symmetry: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The mirrored off-diagonal entries of a symmetric (or skew-, negated) file's entries."""
    off = r != c
    sign = -1.0 if symmetry == "skew-symmetric" else 1.0
    return c[off], r[off], sign * v[off]


def read_validating(path: str | os.PathLike[str]) -> sp.csr_matrix:
    """Read a Matrix Market file, checking everything (see :func:`clspmv.io.read`)."""
    src = Source(path)
    try:
        header = parse_header(src)
        return _read_body(src, header)
    finally:
        src.close()


def _read_body(src: Source, header: Header) -> sp.csr_matrix:
    body = Body(src, src.read_rest())
    entries = header.entries
    # Problems in file order: a malformed line among the declared entries, then too few
    # entries, then the first entry beyond the declared count.
    check_tokens(src, body, header, 0, entries)
    if body.count < entries:
        raise too_few(src, body.last_line, body.count, header)
    if body.count > entries:
        raise too_many(src, int(body.line[entries]), header)

    if header.format == "array":
        values = parse_values(src, body, body.tokens, header)
        dense = values.reshape(header.cols, header.rows).T  # the file is column-major
        return sp.csr_matrix(dense)

    r, c, v = parse_triplets(src, body, header)
    if header.symmetry != "general":
        mr, mc, mv = mirror(r, c, v, header.symmetry)
        r, c, v = np.concatenate([r, mr]), np.concatenate([c, mc]), np.concatenate([v, mv])
    A = sp.coo_matrix((v, (r - 1, c - 1)), shape=header.shape).tocsr()
    A.sum_duplicates()  # sums duplicates and sorts indices; explicit zeros stay
    return A
