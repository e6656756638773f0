"""The Matrix Market header: banner and size line, checked before anything is allocated."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from clspmv.formats.base import INDEX_LIMIT
from clspmv.io.grammar import is_skipped, words
from clspmv.io.source import Source, show

_BANNER = "%%matrixmarket"
_FORMATS = ("coordinate", "array")
_FIELDS = ("real", "integer", "pattern")
_SYMMETRIES = ("general", "symmetric", "skew-symmetric")
_BOM = b"\xef\xbb\xbf"
_INT64_MAX = int(np.iinfo(np.int64).max)


@dataclass(frozen=True)
class Header:
    """What the banner and the size line of a Matrix Market file declare.

    Attributes:
        rows, cols: the matrix's shape.
        entries: the number of data lines (entries stored in the file; ``rows * cols`` for an
            ``array`` file). A symmetric or skew-symmetric matrix has up to twice as many
            stored entries once mirrored.
        format: ``"coordinate"`` or ``"array"``.
        field: ``"real"``, ``"integer"`` or ``"pattern"``.
        symmetry: ``"general"``, ``"symmetric"`` or ``"skew-symmetric"``.
        body_line: the 1-based line number of the first line after the size line.
    """

    rows: int
    cols: int
    entries: int
    format: str
    field: str
    symmetry: str
    body_line: int

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)``."""
        return (self.rows, self.cols)

    @property
    def nnz(self) -> int:
        """The entries stored in the file (``entries``), as scipy's ``mminfo`` counts them."""
        return self.entries

    @property
    def tokens_per_entry(self) -> int:
        """Tokens on every data line: 1 (array), 2 (pattern) or 3."""
        if self.format == "array":
            return 1
        return 2 if self.field == "pattern" else 3


def parse_header(src: Source) -> Header:
    """Read and check the banner, the comments and the size line of ``src``."""
    fmt, field, symmetry = _parse_banner(src)
    rows, cols, entries = _parse_size(src, fmt, symmetry)
    return Header(rows, cols, entries, fmt, field, symmetry, src.lineno + 1)


def read_header(path: str | os.PathLike[str]) -> Header:
    """Read only the header of a Matrix Market file: shape, entry count, field, symmetry.

    Cheap whatever the file's size (the body is not read), for partitioning a matrix
    before reading parts of it with :func:`clspmv.io.read_rows`.

    Args:
        path: a ``.mtx`` file, gzip-compressed or not (recognised by its magic bytes).

    Returns:
        A :class:`Header` (``shape``, ``nnz``, ``format``, ``field``, ``symmetry``, ...).

    Raises:
        MatrixFormatError: the banner or the size line is malformed, declares an
            unsupported kind (complex, Hermitian) or impossible sizes.
        OSError: the file cannot be opened.
    """
    with Source(path) as src, src.blaming_corruption():
        return parse_header(src)


def _parse_banner(src: Source) -> tuple[str, str, str]:
    """Read and check the banner line; return ``(format, field, symmetry)``."""
    line = src.readline()
    if not line:
        raise src.error(1, "missing Matrix Market banner: the file is empty")
    if line.startswith(_BOM):
        raise src.error(1, "the file starts with a UTF-8 byte order mark: remove it (a Matrix "
                           "Market file starts with '%%MatrixMarket')")
    tokens = words(line)
    if not tokens or tokens[0].lower() != _BANNER.encode():
        raise src.error(
            1,
            "missing Matrix Market banner: expected '%%MatrixMarket matrix <format> <field> "
            f"<symmetry>', found {show(line)}",
        )
    if len(tokens) != 5:
        raise src.error(
            1,
            "bad banner: expected 5 words '%%MatrixMarket matrix <format> <field> <symmetry>', "
            f"found {len(tokens)}: {show(line)}",
        )
    names = [w.decode("latin-1") for w in tokens]
    obj, fmt, field, symmetry = (w.lower() for w in names[1:])
    if obj != "matrix":
        raise src.error(
            1, f"unknown object {show(names[1])} in banner (only 'matrix' is supported)"
        )
    if fmt not in _FORMATS:
        raise src.error(
            1, f"unknown format {show(names[2])} in banner (expected 'coordinate' or 'array')"
        )
    if field == "complex":
        raise src.error(1, "field 'complex' is not supported: complex matrices are not supported")
    if field not in _FIELDS:
        raise src.error(
            1,
            f"unknown field {show(names[3])} in banner (expected 'real', 'integer' or 'pattern')",
        )
    if symmetry == "hermitian":
        raise src.error(
            1,
            "symmetry 'hermitian' is not supported: complex (Hermitian) matrices are not supported",
        )
    if symmetry not in _SYMMETRIES:
        raise src.error(
            1,
            f"unknown symmetry {show(names[4])} in banner "
            "(expected 'general', 'symmetric' or 'skew-symmetric')",
        )
    if fmt == "array" and field == "pattern":
        raise src.error(1, "field 'pattern' is not valid with format 'array'")
    if fmt == "array" and symmetry != "general":
        raise src.error(
            1, f"format 'array' is supported only with symmetry 'general', not {show(symmetry)}"
        )
    return fmt, field, symmetry


def _parse_size(src: Source, fmt: str, symmetry: str) -> tuple[int, int, int]:
    """Skip comments and blank lines, read the size line; return ``(rows, cols, entries)``.

    ``entries`` is the number of data lines the body must hold. Nothing is allocated here:
    the declared sizes are only checked for consistency.
    """
    while True:
        line = src.readline()
        if not line:
            raise src.error(max(src.lineno, 1), "missing size line: the file ends after the header")
        if not is_skipped(line):
            break
    n = src.lineno
    tokens = words(line)
    want = 3 if fmt == "coordinate" else 2
    layout = "'rows cols entries'" if fmt == "coordinate" else "'rows cols'"
    if len(tokens) != want:
        raise src.error(
            n,
            f"bad size line: expected {want} integers {layout}, "
            f"found {len(tokens)} tokens: {show(line)}",
        )
    sizes: list[int] = []
    for tok in tokens:
        if tok.startswith(b"-") and tok[1:].isdigit():
            raise src.error(n, f"bad size line: negative size {tok.decode()}")
        if not tok.isdigit():  # bytes.isdigit: ASCII digits only
            raise src.error(n, f"bad size line: {show(tok)} is not an integer")
        if len(tok.lstrip(b"0")) > 19 or int(tok) > _INT64_MAX:
            raise src.error(n, f"bad size line: size {show(tok)[1:-1]} is too large")
        sizes.append(int(tok))
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

