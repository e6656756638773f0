"""Matrix Market (``.mtx`` / ``.mtx.gz``) reading and writing.

:func:`read` parses ``coordinate`` files (fields ``real``, ``integer`` and ``pattern``;
symmetries ``general``, ``symmetric`` and ``skew-symmetric``) and ``array`` files (fields
``real`` and ``integer``, symmetry ``general``) into a float64 :class:`scipy.sparse.csr_matrix`.
Gzip compression is recognised by its magic bytes, whatever the file is called.

Only the banner, the comments and the size line are read line by line; the data body is
scanned in bulk with numpy, so a file of a million entries is read in about a second.
Every problem with a file raises :class:`~clspmv.errors.MatrixFormatError` with a message
of the form ``"<file>: line <N>: <what is wrong>"``, ``N`` being the 1-based number of the
offending line of the (decompressed) file. Declared sizes are checked before anything is
allocated: more than 2**31 - 1 rows or columns (the kernels' 32-bit indices) is an error, and a
declared entry count is only compared with the entries actually found.

:func:`write` writes ``coordinate real general`` or ``coordinate real symmetric`` files that
:func:`read` turns back into the same matrix, bit for bit.
"""

from __future__ import annotations

import gzip
import itertools
import os
import pathlib
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

import numpy as np
import scipy.sparse as sp

from clspmv.errors import MatrixFormatError
from clspmv.formats.base import INDEX_LIMIT

__all__ = ["read", "write"]

_GZIP_MAGIC = b"\x1f\x8b"
_BANNER = "%%matrixmarket"
_FORMATS = ("coordinate", "array")
_FIELDS = ("real", "integer", "pattern")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric")
_BANNER_LIMIT = 4096  # longest banner line accepted, in bytes
_CHUNK = 1 << 22  # bytes read at a time from the body
_INT64_MAX = int(np.iinfo(np.int64).max)
_WRITE_CHUNK = 1 << 16  # entries formatted per string operation in write()


def _show(token: bytes | str, limit: int = 40) -> str:
    """A short printable quotation of ``token`` for an error message."""
    if isinstance(token, bytes):
        token = token.decode("latin-1")
    token = token.strip()
    if len(token) > limit:
        token = token[:limit] + "..."
    return repr(token)


class _Source:
    """A Matrix Market file opened for reading, which keeps count of the lines it has read.

    Gzip decompression failures (truncated or corrupt data) are turned into
    :class:`MatrixFormatError` naming the line that was being read.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.name = os.fspath(path)
        raw = open(path, "rb")  # closed in close()
        try:
            self.gzipped = raw.read(2) == _GZIP_MAGIC
            raw.seek(0)
        except BaseException:
            raw.close()
            raise
        self._raw = raw
        self._fh: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if self.gzipped else raw
        self.lineno = 0  # number of complete or partial lines consumed so far

    def close(self) -> None:
        """Close the file."""
        try:
            if self.gzipped:
                self._fh.close()
        finally:
            self._raw.close()

    def error(self, line: int, reason: str) -> MatrixFormatError:
        """A :class:`MatrixFormatError` for ``line`` of this file."""
        return MatrixFormatError(f"{self.name}: line {line}: {reason}")

    @contextmanager
    def _guard(self, line: Callable[[], int]) -> Iterator[None]:
        if not self.gzipped:
            yield
            return
        try:
            yield
        except (EOFError, OSError, zlib.error) as exc:
            raise self.error(
                line(), f"truncated or corrupt gzip data ({type(exc).__name__}: {exc})"
            ) from exc

    def readline(self, limit: int = -1) -> bytes:
        """The next line (with its newline), or ``b""`` at the end of the file."""
        with self._guard(lambda: self.lineno + 1):
            line = self._fh.readline(limit)
        if line:
            self.lineno += 1
        return line

    def read_rest(self) -> bytes:
        """Everything after the lines read so far, read in chunks."""
        chunks: list[bytes] = []
        newlines = 0
        # read1 on gzip returns what one step of decompression yields, so a failure is
        # reported close to the line where the good data ends.
        read = self._fh.read1 if self.gzipped else self._fh.read  # type: ignore[attr-defined]
        with self._guard(lambda: self.lineno + newlines + 1):
            while chunk := read(_CHUNK):
                chunks.append(chunk)
                newlines += chunk.count(b"\n")
        return b"".join(chunks)


def _parse_banner(src: _Source) -> tuple[str, str, str]:
    """Read and check the banner line; return ``(format, field, symmetry)``."""
    # A banner is short: limit the read so that a binary file without newlines is not slurped.
    line = src.readline(_BANNER_LIMIT)
    if not line:
        raise src.error(1, "missing Matrix Market banner: the file is empty")
    if len(line) == _BANNER_LIMIT and not line.endswith(b"\n"):
        raise src.error(
            1, f"missing Matrix Market banner: the first line is longer than {_BANNER_LIMIT} bytes"
        )
    words = line.decode("latin-1").split()
    if not words or words[0].lower() != _BANNER:
        raise src.error(
            1,
            "missing Matrix Market banner: expected '%%MatrixMarket matrix <format> <field> "
            f"<symmetry>', found {_show(line)}",
        )
    if len(words) != 5:
        raise src.error(
            1,
            "bad banner: expected 5 words '%%MatrixMarket matrix <format> <field> <symmetry>', "
            f"found {len(words)}: {_show(line)}",
        )
    obj, fmt, field, symmetry = (w.lower() for w in words[1:])
    if obj != "matrix":
        raise src.error(
            1, f"unknown object {_show(words[1])} in banner (only 'matrix' is supported)"
        )
    if fmt not in _FORMATS:
        raise src.error(
            1, f"unknown format {_show(words[2])} in banner (expected 'coordinate' or 'array')"
        )
    if field == "complex":
        raise src.error(1, "field 'complex' is not supported: complex matrices are not supported")
    if field not in _FIELDS:
        raise src.error(
            1,
            f"unknown field {_show(words[3])} in banner (expected 'real', 'integer' or 'pattern')",
        )
    if symmetry == "hermitian":
        raise src.error(
            1,
            "symmetry 'hermitian' is not supported: complex (Hermitian) matrices are not supported",
        )
    if symmetry not in _SYMMETRIES:
        raise src.error(
            1,
            f"unknown symmetry {_show(words[4])} in banner "
            "(expected 'general', 'symmetric' or 'skew-symmetric')",
        )
    if fmt == "array" and field == "pattern":
        raise src.error(1, "field 'pattern' is not valid with format 'array'")
    if fmt == "array" and symmetry != "general":
        raise src.error(
            1, f"format 'array' is supported only with symmetry 'general', not {_show(symmetry)}"
        )
    return fmt, field, symmetry


def _parse_size(src: _Source, fmt: str, symmetry: str) -> tuple[int, int, int]:
    """Skip comments and blank lines, read the size line; return ``(rows, cols, entries)``.

    ``entries`` is the number of data lines the body must hold. Nothing is allocated here:
    the declared sizes are only checked for consistency.
    """
    while True:
        line = src.readline()
        if not line:
            raise src.error(max(src.lineno, 1), "missing size line: the file ends after the header")
        stripped = line.strip()
        if stripped and not stripped.startswith(b"%"):
            break
    n = src.lineno
    tokens = stripped.split()
    want = 3 if fmt == "coordinate" else 2
    layout = "'rows cols entries'" if fmt == "coordinate" else "'rows cols'"
    if len(tokens) != want:
        raise src.error(
            n,
            f"bad size line: expected {want} integers {layout}, "
            f"found {len(tokens)} tokens: {_show(line)}",
        )
    sizes: list[int] = []
    for tok in tokens:
        try:
            value = int(tok)
        except ValueError:
            raise src.error(n, f"bad size line: {_show(tok)} is not an integer") from None
        if value < 0:
            raise src.error(n, f"bad size line: negative size {value}")
        if value > _INT64_MAX:
            raise src.error(n, f"bad size line: size {value} is too large")
        sizes.append(value)
    rows, cols = sizes[0], sizes[1]
    for size, what in ((rows, "rows"), (cols, "columns")):
        # Checked before anything is allocated: scipy would make a row pointer of that size.
        if size > INDEX_LIMIT:
            raise src.error(
                n,
                f"bad size line: {size} {what} is beyond the {INDEX_LIMIT} that clspmv's "
                "32-bit kernel indices can address",
            )
    if fmt == "array":
        return rows, cols, rows * cols
    entries = sizes[2]
    if symmetry != "general" and rows != cols:
        raise src.error(n, f"bad size line: a {symmetry} matrix must be square, not {rows}x{cols}")
    if symmetry == "general":
        bound = rows * cols
    elif symmetry == "symmetric":
        bound = rows * (rows + 1) // 2
    else:
        bound = rows * (rows - 1) // 2
    if entries > bound:
        raise src.error(
            n,
            f"bad size line: {entries} entries declared, but a {rows}x{cols} {symmetry} matrix "
            f"can store at most {bound}",
        )
    return rows, cols, entries


class _Body:
    """The data body split into tokens, with the line of every data line.

    Attributes: ``tokens`` (the tokens of the data lines, comment lines left out),
    ``line`` (the 1-based file line number of every data line), ``ntok`` (the number of
    tokens on every data line) and ``last_line`` (the number of the last line of the file).
    """

    def __init__(self, src: _Source, body: bytes) -> None:
        first_line = src.lineno + 1  # file line number of the body's first line
        buf = np.frombuffer(body, dtype=np.uint8)
        newlines = np.flatnonzero(buf == 0x0A)
        partial = 1 if body and body[-1] != 0x0A else 0
        self.last_line = src.lineno + newlines.size + partial

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


def _parse_column(
    src: _Source, body: _Body, tokens: list[bytes], dtype: type, what: str
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
    raise src.error(int(body.line[lo]), f"{what} {_show(tokens[lo])} is not {kind}")


def _read_body(
    src: _Source, fmt: str, field: str, symmetry: str, rows: int, cols: int, entries: int
) -> sp.csr_matrix:
    body = _Body(src, src.read_rest())
    want = 1 if fmt == "array" else (2 if field == "pattern" else 3)
    if fmt == "array":
        layout = "'value'"
    elif field == "pattern":
        layout = "'row col'"
    else:
        layout = "'row col value'"

    # Problems in file order: a malformed line among the declared entries, then too few
    # entries, then the first entry beyond the declared count.
    wrong = np.flatnonzero(body.ntok[:entries] != want)
    if wrong.size:
        k = int(wrong[0])
        raise src.error(
            int(body.line[k]),
            f"wrong number of tokens in entry {k + 1}: expected {want} {layout}, "
            f"found {int(body.ntok[k])}",
        )
    if body.count < entries:
        raise src.error(
            body.last_line,
            f"too few entries: the file ends here with {body.count} entries, "
            f"but the size line declares {entries}",
        )
    if body.count > entries:
        raise src.error(
            int(body.line[entries]),
            f"too many entries: the size line declares {entries}, this is entry {entries + 1}",
        )

    tokens = body.tokens
    value_type = np.int64 if field == "integer" else np.float64
    if fmt == "array":
        values = _parse_column(src, body, tokens, value_type, "value").astype(
            np.float64, copy=False
        )
        dense = values.reshape(cols, rows).T  # the file is column-major
        return sp.csr_matrix(dense)

    r = _parse_column(src, body, tokens[0::want], np.int64, "row index")
    c = _parse_column(src, body, tokens[1::want], np.int64, "column index")
    for index, size, name in ((r, rows, "row"), (c, cols, "column")):
        bad = (index < 1) | (index > size)
        if bad.any():
            k = int(np.argmax(bad))
            reason = (
                f"{name} index {int(index[k])} is not valid: indices are 1-based"
                if index[k] < 1
                else f"{name} index {int(index[k])} is out of range 1..{size}"
            )
            raise src.error(int(body.line[k]), reason)
    if field == "pattern":
        v = np.ones(entries, dtype=np.float64)
    else:
        v = _parse_column(src, body, tokens[2::want], value_type, "value").astype(
            np.float64, copy=False
        )

    if symmetry == "skew-symmetric":
        diagonal = r == c
        if diagonal.any():
            k = int(np.argmax(diagonal))
            raise src.error(
                int(body.line[k]),
                f"diagonal entry ({int(r[k])}, {int(c[k])}) in a skew-symmetric file "
                "(its diagonal is zero and must not be stored)",
            )
    if symmetry != "general":
        off = r != c
        sign = -1.0 if symmetry == "skew-symmetric" else 1.0
        r, c = np.concatenate([r, c[off]]), np.concatenate([c, r[off]])
        v = np.concatenate([v, sign * v[off]])
    A = sp.coo_matrix((v, (r - 1, c - 1)), shape=(rows, cols)).tocsr()
    A.sum_duplicates()  # sums duplicates and sorts indices; explicit zeros stay
    return A


def read(path: str | os.PathLike[str]) -> sp.csr_matrix:
    """Read a Matrix Market file into a float64 CSR matrix.

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).

    Returns:
        A :class:`scipy.sparse.csr_matrix` of dtype float64 with sorted column indices.
        Duplicate coordinate entries are summed; explicitly stored zeros are kept as
        entries. ``symmetric`` files are mirrored, ``skew-symmetric`` ones mirrored with
        negated values, and ``pattern`` entries get the value 1.0. Zeros of an ``array``
        (dense) file are not stored.

    Raises:
        MatrixFormatError: the file is malformed or of an unsupported kind (complex,
            Hermitian, vector); the message names the file and the line.
        OSError: the file cannot be opened.
    """
    src = _Source(path)
    try:
        fmt, field, symmetry = _parse_banner(src)
        rows, cols, entries = _parse_size(src, fmt, symmetry)
        return _read_body(src, fmt, field, symmetry, rows, cols, entries)
    finally:
        src.close()


def _canonical_csr(A: Any) -> sp.csr_matrix:
    """``A`` (any scipy.sparse matrix or array-like) as a float64 CSR matrix, duplicates summed."""
    if sp.issparse(A):
        if A.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {A.ndim} dimensions")
        if np.issubdtype(A.dtype, np.complexfloating):
            raise ValueError("complex matrices are not supported")
        csr = sp.csr_matrix(A, dtype=np.float64, copy=True)
    else:
        dense = np.asarray(A)
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {dense.ndim} dimensions")
        if np.iscomplexobj(dense):
            raise ValueError("complex matrices are not supported")
        csr = sp.csr_matrix(dense.astype(np.float64, copy=False))
    csr.sum_duplicates()
    return csr


def _is_symmetric(A: sp.csr_matrix) -> bool:
    """Whether ``A`` equals its transpose (numerically; explicit zeros are ignored, NaN == NaN)."""
    if A.shape[0] != A.shape[1]:
        return False
    B = A.copy()
    B.eliminate_zeros()
    T = B.T.tocsr()
    T.sum_duplicates()
    return (
        np.array_equal(B.indptr, T.indptr)
        and np.array_equal(B.indices, T.indices)
        and np.array_equal(B.data, T.data, equal_nan=True)
    )


def _format_entries(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, precision: int
) -> Iterator[bytes]:
    """The data lines ``"row col value"`` (1-based), a chunk of entries at a time."""
    line = f"%d %d %.{precision}g\n"
    for lo in range(0, vals.size, _WRITE_CHUNK):
        hi = min(lo + _WRITE_CHUNK, vals.size)
        flat: list[Any] = [None] * (3 * (hi - lo))
        flat[0::3] = (rows[lo:hi] + 1).tolist()
        flat[1::3] = (cols[lo:hi] + 1).tolist()
        flat[2::3] = vals[lo:hi].tolist()
        yield ((line * (hi - lo)) % tuple(flat)).encode("ascii")


def write(
    path: str | os.PathLike[str],
    A: Any,
    *,
    symmetry: str = "general",
    comment: str | None = None,
    precision: int = 17,
) -> pathlib.Path:
    """Write a matrix as a Matrix Market ``coordinate real`` file.

    Args:
        path: destination; gzip-compressed when it ends with ``.gz``.
        A: any scipy.sparse matrix or array, or a dense 2-D array-like, real-valued.
            Duplicates are summed before writing; explicitly stored zeros are written.
        symmetry: ``"general"`` writes every entry; ``"symmetric"`` writes the lower
            triangle only, after checking that ``A`` equals its transpose.
        comment: text written as ``%`` comment lines after the banner (may span lines).
        precision: significant digits of the values; the default 17 makes
            ``read(write(path, A))`` reproduce float64 values exactly.

    Returns:
        ``path`` as a :class:`pathlib.Path`.

    Raises:
        ValueError: ``A`` is not 2-D, is complex, is not symmetric (with
            ``symmetry="symmetric"``), or an argument is invalid.
    """
    if symmetry not in ("general", "symmetric"):
        raise ValueError(f"symmetry must be 'general' or 'symmetric', not {symmetry!r}")
    if isinstance(precision, bool) or not isinstance(precision, (int, np.integer)) or precision < 1:
        raise ValueError(f"precision must be a positive integer, not {precision!r}")
    csr = _canonical_csr(A)
    if symmetry == "symmetric":
        if csr.shape[0] != csr.shape[1]:
            raise ValueError(
                f"a symmetric matrix must be square, not {csr.shape[0]}x{csr.shape[1]}"
            )
        if not _is_symmetric(csr):
            raise ValueError("the matrix is not symmetric; write it with symmetry='general'")
        csr = sp.tril(csr, format="csr")
    coo = csr.tocoo()

    header = [f"%%MatrixMarket matrix coordinate real {symmetry}"]
    if comment is not None:
        header += [
            f"%{text}" if text.startswith(" ") or not text else f"% {text}"
            for text in comment.splitlines()
        ]
    header.append(f"{csr.shape[0]} {csr.shape[1]} {coo.nnz}")

    path = pathlib.Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(("\n".join(header) + "\n").encode("utf-8"))
        for chunk in _format_entries(
            coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data, int(precision)
        ):
            fh.write(chunk)
    return path
