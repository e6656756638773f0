"""The fast Matrix Market path: scipy's fast_matrix_market parser behind cheap checks.

``scipy.io.mmread`` (fast_matrix_market underneath since scipy 1.12, multithreaded) parses a
piece of the body, given a size line of its own. It is lenient where the grammar
(:mod:`clspmv.io.grammar`) is not: it reads the longest number at the start of a value and
ignores the rest of the line (``1.2.3`` is 1.2, ``1e`` is 1, ``2-3`` is 2, ``1 2-3 1`` is the
entry (1, 2) = -3), and a NUL byte crashes it. So a piece goes to it only where cheap scans
with C-speed ``bytes`` methods and numpy show the canonical layout, in which every token the
parser reads whole is a token of the grammar and nothing is left over:

- exactly one data line per entry (no blank or comment line), runs of spaces between its
  tokens (SuiteSparse pads non-negative values with one more), no leading or trailing blank,
  no tab or CR, and only the bytes numbers are written with (digits, ``+-.eE`` as the field
  allows: no ``inf``/``nan``, no ``_``, no control byte);
- a sign only at the start of a token or right after ``e``/``E``, and followed by a digit or
  a point; an ``e``/``E`` not at the end of a line;
- with the digits and signs taken out (the skeleton), no ``..``, ``e.``, ``ee``, ``e`` at the
  end of a token, and no ``.``/``e`` in a token other than the last of its line: what is left
  of a real is ``[.][e]``, so it has one point at most, before its exponent, and the exponent
  has digits.

Two passes over the piece: the skeleton (a translation that deletes digits and signs), which
gives the lines and separators, and one numpy pass over the piece translated to flags, for
the rules on neighbours (and the double spaces of padded values).

What that leaves (a value with no digit, such as ``.``, ``-`` or ``-.e5``, a ``+`` sign, an
index out of range, a token too large for its type) the parser refuses; every refusal, and
every piece that fails a scan, goes to the validating reader, which reads it or names the line
that is wrong. So both paths accept the same pieces and give the same entries (the
differential tests and the fuzz harness feed both the same files). The scans cost about as
much as the parse.
"""

from __future__ import annotations

import io

import numpy as np
import scipy.io
import scipy.sparse as sp

from clspmv.io.entries import Entries, array_positions
from clspmv.io.header import Header

_DIGITS = b"0123456789"
_NUMBER_BYTES = {  # the bytes of a canonical token, by field
    "pattern": _DIGITS,
    "integer": _DIGITS + b"+-",
    "real": _DIGITS + b"+-.eE",
}


def _skeleton_table(field: str) -> bytes:
    """Maps a byte to what the skeleton keeps of it: space, newline, ``.``, ``e`` (for ``E``
    too) or ``!`` (a byte no canonical piece holds); digits and signs are deleted."""
    table = bytearray(b"!" * 256)
    table[ord(" ")], table[ord("\n")] = ord(" "), ord("\n")
    if field == "real":
        table[ord(".")] = ord(".")
        table[ord("e")] = table[ord("E")] = ord("e")
    return bytes(table)


_SKELETON = {field: _skeleton_table(field) for field in _NUMBER_BYTES}
_DELETED = _DIGITS + b"+-"


def _pairs(roles: dict[str, str], bad: list[str]) -> bytes:
    """A translation of bytes for :func:`_holds_bad_pair`: the low four bits flag the byte's
    class among the four ``roles`` (the bytes of each), the high four the classes that must not
    follow it (``bad``: two-letter strings naming a class by one of its bytes; the first byte
    of a pair may be of any class, named in ``roles`` or by itself)."""
    def bit(b: int) -> int:
        return next((1 << k for k, cls in enumerate(roles.values()) if chr(b) in cls), 0)

    def not_after(b: int) -> int:
        same = [first for first, _ in bad if chr(b) == first or (bit(b) and bit(ord(first))
                                                                 == bit(b))]
        return sum({bit(ord(second)) for first, second in bad if first in same})

    return bytes(bit(b) | not_after(b) << 4 for b in range(256))


# In the skeleton (digits and signs taken out): one point at most, before the exponent, and
# neither in an index (a token followed by a space).
_SKELETON_PAIRS = _pairs({"point": ".", "exponent": "e", "space": " ", "newline": "\n"},
                         ["..", "e.", "ee", ". ", "e "])
# In the piece: a sign after a digit or a point; a sign followed by a sign, an exponent mark or
# a line end; an exponent mark followed by a line end; and two spaces (counted, not refused).
_NEIGHBOURS = _pairs({"space": " ", "sign": "+-", "exponent": "eE", "newline": "\n"},
                     [*(f"{d}+" for d in "0123456789."), "++", "+e", "+\n", "e\n", "  "])
_SPACE_BIT = np.uint8(1)  # the class bit of a space in _NEIGHBOURS (its first role)
_ENDS_A_TOKEN_BADLY = (b"+", b"-", b"e", b"E")  # a sign or an exponent mark at a line end


def _holds_bad_pair(data: bytes, pairs: bytes) -> bool:
    """Whether ``data`` followed by a newline holds one of the pairs of :func:`_pairs`."""
    flags = np.frombuffer(data.translate(pairs), dtype=np.uint8)
    if not flags.size:
        return False
    if flags[-1] >> 4 & pairs[ord("\n")]:
        return True
    found = np.right_shift(flags[:-1], 4)
    np.bitwise_and(found, flags[1:], out=found)
    return bool(found.any())


def _double_spaces(data: bytes) -> int:
    """The number of pairs of spaces side by side in ``data``, or -1 where it holds another
    pair of :data:`_NEIGHBOURS` or ends with a sign or an exponent mark."""
    if data[-1:] in _ENDS_A_TOKEN_BADLY:
        return -1
    flags = np.frombuffer(data.translate(_NEIGHBOURS), dtype=np.uint8)
    found = np.right_shift(flags[:-1], 4)
    np.bitwise_and(found, flags[1:], out=found)
    doubles = int(np.count_nonzero(found))
    if doubles and (found & ~_SPACE_BIT).any():
        return -1
    return doubles


def canonical_lines(data: bytes, header: Header) -> int:
    """The number of data lines of ``data`` (whole lines of a body) if they have the canonical
    layout described in the module's docstring, else -1.

    A separator is a run of spaces: the spaces of the skeleton less the pairs of spaces side by
    side. A line with a leading, trailing or extra blank then shows in the count, unless a line
    with fewer tokens makes up for it, which the parser refuses; it refuses a blank line too
    (one entry short).
    """
    field = header.field
    skeleton = data.translate(_SKELETON[field], _DELETED)
    if b"!" in skeleton:
        return -1
    lines = skeleton.count(b"\n") + (data[-1:] != b"\n")
    gaps = (header.tokens_per_entry - 1) * lines
    separators = skeleton.count(b" ")
    if field != "pattern" or separators != gaps:
        doubles = _double_spaces(data)
        if doubles < 0:
            return -1
        if separators != gaps:
            separators -= doubles
    if separators != gaps:
        return -1
    if field == "real" and _holds_bad_pair(skeleton, _SKELETON_PAIRS):
        return -1
    return lines


def parse_canonical(data: bytes, header: Header, found: int) -> Entries | None:
    """The entries of ``data`` (whole data lines of a body, the file's ``found`` onwards) as
    fast_matrix_market reads them, or ``None`` where the validating reader must decide: the
    piece is not canonical, holds more lines than the entries still declared, or the parser
    refuses it (see the module's docstring)."""
    count = canonical_lines(data, header)
    if count < 0 or count > header.entries - found:
        return None
    if count == 0:
        return Entries.empty()
    if header.format == "array":
        size = f"{count} 1"
    else:
        size = f"{header.rows} {header.cols} {count}"
    banner = f"%%MatrixMarket matrix {header.format} {header.field} general\n{size}\n"
    try:
        result = scipy.io.mmread(io.BytesIO(banner.encode() + data))
    except (ValueError, OverflowError, RuntimeError):
        return None
    if header.format == "array":
        if not isinstance(result, np.ndarray) or result.shape != (count, 1):
            return None
        return array_positions(header, found, result[:, 0].astype(np.float64, copy=False))
    if not sp.issparse(result) or result.nnz != count:
        return None
    r, c = result.row, result.col
    if header.symmetry == "skew-symmetric" and np.any(r == c):
        return None  # the validating reader names the line
    return Entries(r.astype(np.int32, copy=False), c.astype(np.int32, copy=False),
                   result.data.astype(np.float64, copy=False), count)
