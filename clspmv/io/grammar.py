"""The one Matrix Market language that every clspmv reader accepts.

Both paths of :func:`clspmv.io.read` (fast_matrix_market behind cheap checks, and the reader
that names the bad line), :func:`clspmv.io.read_rows` and :func:`clspmv.io.read_coo` accept
exactly the files below and give the same entries; anything else raises
:class:`~clspmv.errors.MatrixFormatError`. Bytes, not text: no encoding is assumed.

::

    file     = banner-line {skipped-line} size-line {skipped-line | data-line}
    line     = bytes up to a line feed (LF) or the end of the file, at most LINE_LIMIT bytes
    blank    = space | tab | CR            (so CRLF line ends work; a lone CR is a blank too)
    skipped-line = blank* | blank* "%" any*          (comments may hold any byte but LF)
    banner-line  = blank* "%%MatrixMarket" blank+ "matrix" blank+ format blank+ field
                   blank+ symmetry blank*            (words case-insensitive)
    format   = "coordinate" | "array"
    field    = "real" | "integer" | "pattern"        (not with "array")
    symmetry = "general" | "symmetric" | "skew-symmetric"   ("array": "general" only)
    size-line = blank* size blank+ size [blank+ size] blank*  (3 sizes: coordinate, 2: array)
    size     = digit+                      (rows and columns at most 2**31 - 1, the kernels'
                                            32-bit indices; entries at most rows * cols, or
                                            the triangle of a symmetric or skew-symmetric one)
    data-line = blank* token {blank+ token} blank*   (3 tokens "row col value", 2 for
                                            pattern, 1 "value" for array, column-major)
    index    = sign? digit+                (then 1 <= index <= rows or cols)
    integer  = sign? digit+                (an "integer" value: within int64)
    real     = sign? (digit+ ["." digit*] | "." digit+) [("e"|"E") sign? digit+]
             | sign? ("inf" | "infinity" | "nan")    (case-insensitive)
    sign     = "+" | "-"

A data line holds any other byte (NUL, a control byte, a non-ASCII byte) only inside a token,
which then is not a number. The body holds exactly the declared number of data lines; a
skew-symmetric file stores no diagonal entry. Values are converted with correct rounding
(beyond the float64 range: ±inf, below it: ±0 or subnormal); an ``integer`` value is converted
to int64, then to float64.

Where this differs from ``scipy.io.mmread`` (fast_matrix_market), which is more lenient: scipy
reads the longest number at the start of a value and ignores the rest of the line (``1.2.3`` is
1.2, ``1e`` is 1, ``2-3`` is 2, ``1 1 1.5 junk`` is 1.5, ``1_0`` is 1, ``1 2-3 1`` is the entry
(1, 2) = -3), crashes on a NUL byte in a data line (SIGSEGV) and on an ``array`` file without
rows or columns (SIGFPE), and reads ``array`` files of every symmetry and complex files. clspmv
refuses the lenient readings and those kinds, and reads the empty ``array`` file (a valid matrix
without rows) without crashing. clspmv accepts a ``+`` sign, which scipy
refuses. Python's ``float``/``int`` accept underscores between digits; this grammar does not.
The mirrors of a skew-symmetric ``integer`` file are negated as float64 here (a 0 gives -0.0)
and as int64 by scipy.
"""

from __future__ import annotations

import re

BLANKS = b" \t\r"
"""The bytes that separate tokens (besides the line feed that ends a line)."""
_BLANK_RUN = re.compile(rb"[ \t\r]+")
INTEGER = re.compile(rb"[+-]?[0-9]+")
"""An index or an ``integer`` value (then range-checked)."""


def words(line: bytes) -> list[bytes]:
    """The tokens of a header line, split at runs of blanks (the line feed left out)."""
    return [w for w in _BLANK_RUN.split(line.rstrip(b"\n")) if w]


def is_skipped(line: bytes) -> bool:
    """Whether ``line`` is blank or a comment (``%`` after blanks)."""
    stripped = line.rstrip(b"\n").lstrip(BLANKS)
    return not stripped.strip(BLANKS) or stripped.startswith(b"%")
