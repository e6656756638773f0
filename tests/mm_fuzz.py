"""Fuzzing clspmv's Matrix Market readers: a reference reader, mutated files, a worker process.

- :func:`reference` reads a file line by line in plain Python with regular expressions of its
  own: the grammar of ``clspmv/io/grammar.py`` written out again, independently of clspmv.io.
  It returns the entries in scipy's order (the file's own, then the mirrored ones) or the line
  of the first problem.
- :func:`mm_files` is a Hypothesis strategy: valid files of every format, field and symmetry,
  with comments, blank lines, tabs, CRLF and many number spellings, then mutated (banner,
  sizes, counts, tokens, number syntax, encodings, line endings, control bytes, truncation,
  lying headers, long lines, gzip framing).
- ``python mm_fuzz.py`` is the worker: it reads inputs from stdin, one per line (the file's
  name and its bytes, base64), under an address-space limit, and answers one line each.
  For every input it reads the file with ``read_coo``, ``read``, the validating path alone,
  ``read_rows`` and ``read_header``, and checks: valid per the reference -> the same entries,
  bit for bit; invalid -> ``MatrixFormatError`` naming the file and the reference's line (or
  ``OSError``); no file left in its private ``TMPDIR``; the peak of Python and numpy memory
  (tracemalloc) during ``read`` at most twice the returned arrays plus 64 MiB (each answer
  gives the largest peak's share of that bound: ``peak``). A CSR read that
  folds duplicates from the second entry held on (as ``read`` does from 2**18) gives the same
  matrix, its sums of three or more duplicates within a few ulps (:func:`_folded_sums_agree`).
  ``scipy.io.mmread`` is asked too where the reference reads the file, it holds no NUL byte
  and has rows and columns (scipy crashes on those): where it returns a matrix, it must be the
  same.

The worker announces each input before reading it, so that the parent knows which input
killed it (a signal, the address-space limit) or hung (the parent's timeout).
"""

from __future__ import annotations

import base64
import gzip
import io
import json
import math
import os
import re
import resource
import sys
import tempfile
import tracemalloc
import zlib
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

LINE_LIMIT = 1 << 20
INDEX_LIMIT = 2**31 - 1
BOUND_SLACK = 64 << 20
"""The additive part of the memory bound: peak <= 2 * returned arrays + 64 MiB."""
ADDRESS_LIMIT = 3 << 30
"""The worker's RLIMIT_AS: a backstop for native allocations (fast_matrix_market's), which
tracemalloc does not see. Looser than the bound: the interpreter, numpy, scipy and the
parser's threads take about 1 GiB of address space before any file is read."""
CSR_ROWS_LIMIT = 1 << 22
"""Above this many rows ``read`` (whose CSR row pointer is 4 bytes a row) is not called."""

# ----------------------------------------------------------------------------- the reference

_BLANK = rb"[ \t\r]"
_SPLIT = re.compile(_BLANK + b"+")
_INT = re.compile(rb"[+-]?[0-9]+\Z")
_REAL = re.compile(rb"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                   rb"|(?i:inf|infinity|nan))\Z")
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


@dataclass
class Reference:
    """What the reference makes of a file: ``error_line`` (0: the file is valid; -1: invalid,
    line unknown, as for corrupt gzip data) or the shape and the entries in scipy's order."""

    error_line: int = 0
    shape: tuple[int, int] = (0, 0)
    rows: list[int] = field(default_factory=list)
    cols: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


def _tokens(line: bytes) -> list[bytes]:
    return [t for t in _SPLIT.split(line) if t]


def _skipped(line: bytes) -> bool:
    toks = _tokens(line)
    return not toks or toks[0].startswith(b"%")


def reference(data: bytes) -> Reference:
    """The reference reading of a whole file (see the module's docstring)."""
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return Reference(error_line=-1)
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    bad = Reference
    if not lines or len(lines[0]) > LINE_LIMIT:
        return bad(error_line=1)
    words = [w.lower() for w in _tokens(lines[0])]
    if (len(words) != 5 or words[0] != b"%%matrixmarket" or words[1] != b"matrix"
            or words[2] not in (b"coordinate", b"array")
            or words[3] not in (b"real", b"integer", b"pattern")
            or words[4] not in (b"general", b"symmetric", b"skew-symmetric")
            or (words[2] == b"array" and (words[3] == b"pattern" or words[4] != b"general"))):
        return bad(error_line=1)
    fmt, fld, sym = (w.decode() for w in words[2:])
    k = 1
    while k < len(lines) and len(lines[k]) <= LINE_LIMIT and _skipped(lines[k]):
        k += 1
    if k >= len(lines):
        return bad(error_line=max(len(lines), 1))
    if len(lines[k]) > LINE_LIMIT:
        return bad(error_line=k + 1)
    sizes = _tokens(lines[k])
    want = 3 if fmt == "coordinate" else 2
    if len(sizes) != want or not all(re.fullmatch(rb"[0-9]+", s) for s in sizes):
        return bad(error_line=k + 1)
    nums = [int(s) for s in sizes]
    nrows, ncols = nums[0], nums[1]
    if nrows > INDEX_LIMIT or ncols > INDEX_LIMIT or max(nums) > 2**63 - 1:
        return bad(error_line=k + 1)
    if fmt == "array":
        declared = nrows * ncols
    else:
        declared = nums[2]
        if sym != "general" and nrows != ncols:
            return bad(error_line=k + 1)
        cap = {"general": nrows * ncols, "symmetric": nrows * (nrows + 1) // 2,
               "skew-symmetric": nrows * (nrows - 1) // 2}[sym]
        if declared > cap:
            return bad(error_line=k + 1)
    own: list[tuple[int, int, float]] = []
    found = 0
    for n, line in enumerate(lines[k + 1:], k + 2):
        if len(line) > LINE_LIMIT:
            return bad(error_line=n)
        toks = _tokens(line)
        if toks and toks[0].startswith(b"%") or not toks:
            if _CONTROL.search(line) and toks and not toks[0].startswith(b"%"):
                return bad(error_line=n)
            continue
        if _CONTROL.search(line):
            return bad(error_line=n)
        if found >= declared:
            return bad(error_line=n)
        per_line = 1 if fmt == "array" else 2 if fld == "pattern" else 3
        if len(toks) != per_line:
            return bad(error_line=n)
        if fmt == "array":
            i, j = found % nrows + 1, found // nrows + 1
            value_token = toks[0]
        else:
            if not (_INT.match(toks[0]) and _INT.match(toks[1])):
                return bad(error_line=n)
            i, j = int(toks[0]), int(toks[1])
            if not (1 <= i <= nrows and 1 <= j <= ncols):
                return bad(error_line=n)
            value_token = toks[2] if fld != "pattern" else b"1"
        if fld == "integer":
            if not _INT.match(value_token) or not -2**63 <= int(value_token) < 2**63:
                return bad(error_line=n)
            value = float(np.float64(np.int64(int(value_token))))
        elif not _REAL.match(value_token):
            return bad(error_line=n)
        else:
            value = float(value_token)
        if sym == "skew-symmetric" and i == j:
            return bad(error_line=n)
        found += 1
        if fmt == "array" and value == 0:
            continue  # zeros of a dense file are not stored (NaN != 0 stays)
        own.append((i - 1, j - 1, value))
    if found < declared:
        return bad(error_line=max(len(lines), 1))
    sign = -1.0 if sym == "skew-symmetric" else 1.0
    mirrored = [(j, i, sign * v) for i, j, v in own if i != j] if sym != "general" else []
    ref = Reference(shape=(nrows, ncols))
    for i, j, v in own + mirrored:
        ref.rows.append(i)
        ref.cols.append(j)
        ref.values.append(v)
    return ref


# ----------------------------------------------------------------------------- the inputs

_MALFORMED_NUMBERS = [b"1.2.3", b"1e", b"2-3", b"1_0", b"--1", b".", b"e5", b"0x10", b"nan(1)",
                      b"1,5", b"\xd9\xa1", b"1e5e5", b"1e5.3", b"1.5e+", b"+-1", b"1.-3", b"1d5",
                      b"\xef\xbb\xbf1", b"1e-.5", b"infinit", b"", b"-", b"+"]


def _number(draw: st.DrawFn, fld: str) -> bytes:
    """A spelling of a valid value of field ``fld``."""
    if fld == "integer":
        value = draw(st.one_of(st.integers(-1000, 1000), st.integers(-2**63, 2**63 - 1)))
        text = str(value)
        if value >= 0 and draw(st.booleans()):
            text = draw(st.sampled_from(["+", "", "00"])) + text
        return text.encode()
    x = draw(st.floats(allow_nan=True, allow_infinity=True, width=64))
    style = draw(st.sampled_from(["%.17g", "%e", "%E", "%.3f", "%r", "%.0f", "%g"]))
    text = repr(x) if style == "%r" else style % x
    if math.isfinite(x):
        text = draw(st.sampled_from([text, text, "+" + text.lstrip("+") if x >= 0 else text,
                                     "1e400", "-1e-400", "4.9e-324", "0." + "0" * 30 + "1",
                                     "1" * 40, ".5", "5.", "-.5e-3", "1E+5", "007"]))
    else:
        text = draw(st.sampled_from([text, text.upper(), "infinity", "-Infinity", "NaN", "+nan"]))
    return text.encode()


@st.composite
def mm_files(draw: st.DrawFn) -> tuple[str, bytes]:
    """A file name and its bytes: a valid Matrix Market file, maybe mutated."""
    fmt = draw(st.sampled_from(["coordinate"] * 4 + ["array"]))
    fld = draw(st.sampled_from(["real", "integer"] + (["pattern"] if fmt == "coordinate" else [])))
    sym = "general" if fmt == "array" else draw(
        st.sampled_from(["general", "general", "symmetric", "skew-symmetric"]))
    nrows = draw(st.integers(0, 7))
    ncols = nrows if sym != "general" else draw(st.integers(0, 7))
    if draw(st.integers(0, 30)) == 0 and fmt == "coordinate":  # a tall matrix, few entries
        nrows = ncols = draw(st.sampled_from([10**6, 2 * 10**8, INDEX_LIMIT]))
        nrows = nrows if sym != "general" else nrows
    lines: list[bytes] = []
    if fmt == "array":
        for _ in range(nrows * ncols):
            lines.append(b"0" if draw(st.integers(0, 3)) == 0 else _number(draw, fld))
    else:
        count = draw(st.integers(0, 12)) if nrows and ncols else 0
        for _ in range(count):
            i = draw(st.integers(1, min(nrows, 9)))
            j = draw(st.integers(1, min(ncols, 9)))
            if sym != "general":
                i, j = max(i, j), min(i, j)
                if sym == "skew-symmetric" and i == j:
                    continue
            tokens = [str(i).encode(), str(j).encode()]
            if fld != "pattern":
                tokens.append(_number(draw, fld))
            sep = draw(st.sampled_from([b" ", b" ", b" ", b"  ", b"\t", b" \t "]))
            lead = draw(st.sampled_from([b"", b"", b"", b" ", b"\t"]))
            lines.append(lead + sep.join(tokens))
    size = f"{nrows} {ncols}" + (f" {len(lines)}" if fmt == "coordinate" else "")
    banner = f"%%MatrixMarket matrix {fmt} {fld} {sym}"
    if draw(st.booleans()):
        banner = draw(st.sampled_from([banner.upper(), banner.replace(" ", "\t"), banner + " "]))
    body = [banner.encode()]
    body += [b"% " + draw(st.binary(max_size=20)).replace(b"\n", b"")
             for _ in range(draw(st.integers(0, 2)))]
    body.append(size.encode())
    for line in lines:
        if draw(st.integers(0, 8)) == 0:
            body.append(draw(st.sampled_from([b"", b"%", b"% comment", b"  ", b"\t%x"])))
        body.append(line)
    body = _mutate_lines(draw, body)
    end = draw(st.sampled_from([b"\n"] * 6 + [b"\r\n", b"\r"]))
    data = end.join(body) + (end if draw(st.integers(0, 5)) else b"")
    data = _mutate_bytes(draw, data)
    gz = draw(st.integers(0, 3)) == 0
    if gz:
        data = _gzip(draw, data)
    return ("m.mtx.gz" if gz and draw(st.booleans()) else "m.mtx"), data


def _mutate_lines(draw: st.DrawFn, body: list[bytes]) -> list[bytes]:
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(["token", "token", "size", "banner", "drop", "dup",
                                     "garbage", "lie"]))
        k = draw(st.integers(0, len(body) - 1))
        words = body[k].split()
        if kind == "token" and words:
            w = draw(st.integers(0, len(words) - 1))
            words[w] = draw(st.sampled_from(_MALFORMED_NUMBERS + [
                b"0", b"-1", b"99999999999999999999", b"2147483648", b"9223372036854775808",
                b"1e99999999999999999999", b"+1", b"0007"]))
            body[k] = b" ".join(words)
        elif kind == "size" and len(body) > 1:
            k = next((n for n, line in enumerate(body[1:], 1) if line and line[:1] != b"%"), 1)
            words = body[k].split() or [b"1"]
            w = draw(st.integers(0, len(words) - 1))
            words[w] = draw(st.sampled_from([b"0", b"-3", b"3.0", b"x", b"2147483647",
                                             b"2147483648", b"1000000000000", b"+3",
                                             b"99999999999999999999", str(int(words[w]) + 1
                                             if words[w].isdigit() else 1).encode()]))
            if draw(st.integers(0, 4)) == 0:
                words.append(b"1")
            body[k] = b" ".join(words)
        elif kind == "banner":
            body[0] = draw(st.sampled_from([
                b"%%MatrixMarket matrix coordinate complex general",
                b"%%MatrixMarket matrix coordinate real hermitian",
                b"%%MatrixMarket matrix array pattern general",
                b"%%MatrixMarket matrix array real symmetric",
                b"%%MatrixMarket vector coordinate real general",
                b"%%MatrixMarket matrix coordinate real",
                b"%MatrixMarket matrix array real general",
                b"\xef\xbb\xbf" + body[0], b" " + body[0], body[0] + b" extra"]))
        elif kind == "drop" and len(body) > 1:
            del body[k]
        elif kind == "dup":
            body.insert(k, body[k])
        elif kind == "garbage":
            body.insert(k, draw(st.sampled_from([b"1 1 1 1", b"abc", b"\x00", b"1\x0b1 1",
                                                 b"\xff\xfe", b"1 1 1 % trailing"])))
        elif kind == "lie" and len(body) > 1:
            k = next((n for n, line in enumerate(body[1:], 1) if line and line[:1] != b"%"), 1)
            words = body[k].split()
            if len(words) == 3:
                words[draw(st.integers(0, 2))] = draw(st.sampled_from(
                    [b"200000000", b"2000000000", b"1000000000000"]))
                body[k] = b" ".join(words)
    return body


def _mutate_bytes(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["none"] * 6 + ["truncate", "insert", "long", "empty",
                                                "nonewlines", "blanklines"]))
    if kind == "truncate":
        return data[: draw(st.integers(0, len(data)))]
    if kind == "insert" and data:
        k = draw(st.integers(0, len(data)))
        return data[:k] + draw(st.sampled_from([b"\x00", b"\x1f", b"\xff", b"\r", b"\t", b"_",
                                               b"\n", b"\n\n", b"%", b"\x7f"])) + data[k:]
    if kind == "long":
        k = data.find(b"\n") + 1
        n = draw(st.sampled_from([LINE_LIMIT - 1, LINE_LIMIT, LINE_LIMIT + 1]))
        filler = draw(st.sampled_from([b"%", b"1", b" "]))
        return data[:k] + filler * n + b"\n" + data[k:]
    if kind == "empty":
        return b""
    if kind == "nonewlines":
        return data.replace(b"\n", b" ")
    if kind == "blanklines":
        k = data.rfind(b"\n") + 1
        return data[:k] + b"\n" * draw(st.integers(1, 100000)) + data[k:]
    return data


def _gzip(draw: st.DrawFn, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["plain"] * 4 + ["members", "cut", "flip", "trailing", "zeros"]))
    if kind == "members":
        k = draw(st.integers(0, len(data)))
        return gzip.compress(data[:k]) + gzip.compress(data[k:])
    packed = gzip.compress(data, compresslevel=draw(st.integers(1, 9)))
    if kind == "cut":
        return packed[: draw(st.integers(2, len(packed)))]
    if kind == "flip":
        k = draw(st.integers(2, len(packed) - 1))
        return packed[:k] + bytes([packed[k] ^ draw(st.integers(1, 255))]) + packed[k + 1:]
    if kind == "trailing":
        return packed + draw(st.sampled_from([b"x", b"\x1f\x8b", b"garbage"]))
    if kind == "zeros":
        return packed + b"\x00" * draw(st.integers(1, 8))
    return packed


# ----------------------------------------------------------------------------- the worker


def _same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint64), b.view(np.uint64)))


def _folded_sums_agree(A, expected, ref: Reference) -> bool:
    """Whether ``A``, read with duplicates folded along the way, is the matrix ``expected``.

    The structure must be the same, and every value the same bits, but a sum of three or more
    duplicates: folding adds a position's values one at a time, a fold at a time (the file's
    own entries since the previous fold in file order, then their mirrors), and scipy adds them
    in the order its unstable sort of a row of more than 16 entries leaves them.
    Such a sum may differ by rounding: by at most (n - 1) * 2**-52 * sum(|term|) for n terms,
    the bound of any order of summation; both NaN where a term is NaN; anything where the
    terms' magnitudes reach the overflow threshold (the order then decides between infinities,
    NaN and finite values).
    """
    if not (A.shape == expected.shape and np.array_equal(A.indptr, expected.indptr)
            and np.array_equal(A.indices, expected.indices)):
        return False
    terms: dict[tuple[int, int], list[float]] = {}
    for key in zip(ref.rows, ref.cols, ref.values, strict=True):
        terms.setdefault(key[:2], []).append(key[2])
    rows = np.repeat(np.arange(A.shape[0]), np.diff(A.indptr)).tolist()
    for i, j, a, b in zip(rows, A.indices.tolist(), A.data.tolist(), expected.data.tolist(),
                          strict=True):
        t = terms[i, j]
        if len(t) < 3:
            same = _same_bits(np.array([a]), np.array([b]))
        elif any(math.isnan(x) for x in t):
            same = math.isnan(a) and math.isnan(b)
        else:
            size = math.fsum(abs(x) for x in t)
            same = size > 1e307 or abs(a - b) <= (len(t) - 1) * 2**-52 * size
        if not same:
            return False
    return True


def _check_error(err: Exception, path: str, ref: Reference) -> str | None:
    from clspmv.errors import MatrixFormatError

    if isinstance(err, OSError) and not isinstance(err, MatrixFormatError):
        return None
    if not isinstance(err, MatrixFormatError):
        return f"{type(err).__name__} instead of MatrixFormatError: {err}"
    if ref.error_line == 0:
        return f"refused a valid file: {err}"
    match = re.match(rf"{re.escape(path)}: line (\d+): ", str(err))
    if not match:
        return f"message without the file and line: {err}"
    if ref.error_line > 0 and int(match.group(1)) != ref.error_line:
        return f"line {match.group(1)} named, the reference says {ref.error_line}: {err}"
    return None


largest_peak = 0.0
"""The largest share of the memory bound that a read of the current input took."""


def _within_bound(peak: int, returned: int) -> bool:
    """Whether ``peak`` is within the bound of a read returning ``returned`` bytes (noted in
    :data:`largest_peak`)."""
    global largest_peak
    share = peak / (2 * returned + BOUND_SLACK)
    largest_peak = max(largest_peak, share)
    return share <= 1


def check(name: str, data: bytes, tmp: str) -> str | None:
    """Every check of the module's docstring on one input; the first failure, or None."""
    import scipy.io
    import scipy.sparse as sp

    from clspmv import io as mmio
    from clspmv.io import reader

    path = os.path.join(tmp, "in", name)
    with open(path, "wb") as fh:
        fh.write(data)
    ref = reference(data)

    def attempt(fn):  # (result, problem)
        try:
            return fn(), None
        except Exception as err:  # noqa: BLE001 - every exception is judged
            return None, err

    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    coo, err = attempt(lambda: mmio.read_coo(path))
    peak_coo = tracemalloc.get_traced_memory()[1] - base
    leftovers = os.listdir(os.path.join(tmp, "tmp"))
    if leftovers:
        return f"files left in TMPDIR: {leftovers}"
    if err is not None:
        problem = _check_error(err, path, ref)
        if problem:
            return f"read_coo: {problem}"
        for fn in (lambda: mmio.read(path), lambda: reader.collect(path, fast=False).coo(),
                   lambda: mmio.read_header(path) and mmio.read_rows(path, 0, 0)):
            _, err2 = attempt(fn)
            if err2 is None:
                return f"read_coo refused ({err}) but another reader accepted"
            if str(err2) != str(err) and not isinstance(err2, ValueError | OSError):
                return f"two readers disagree: {err} / {err2}"
            if isinstance(err2, type(err)) and str(err2) != str(err):
                return f"two readers disagree: {err} / {err2}"
        tracemalloc.reset_peak()
        return None if _within_bound(peak_coo, 0) else f"peak {peak_coo} bytes for a refused file"
    if ref.error_line != 0:
        return f"accepted a file the reference refuses at line {ref.error_line}"
    if coo.shape != ref.shape or not (np.array_equal(coo.row, ref.rows)
                                      and np.array_equal(coo.col, ref.cols)
                                      and _same_bits(coo.data, ref.values)):
        return "read_coo differs from the reference"
    returned = coo.row.nbytes + coo.col.nbytes + coo.data.nbytes
    if not _within_bound(peak_coo, returned):
        return f"read_coo peak {peak_coo} > 2 * {returned} + 64 MiB"
    slow = reader.collect(path, fast=False).coo()
    if not (np.array_equal(slow.row, coo.row) and np.array_equal(slow.col, coo.col)
            and _same_bits(slow.data, coo.data)):
        return "the validating path differs from the fast path"
    if ref.shape[0] <= CSR_ROWS_LIMIT:
        expected = sp.coo_matrix((np.asarray(ref.values, dtype=np.float64),
                                  (np.asarray(ref.rows, dtype=np.int64),
                                   np.asarray(ref.cols, dtype=np.int64))),
                                 shape=ref.shape).tocsr()
        expected.sum_duplicates()
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        A = mmio.read(path)
        peak = tracemalloc.get_traced_memory()[1] - base
        returned = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
        if not _within_bound(peak, returned):
            return f"read peak {peak} > 2 * {returned} + 64 MiB"
        if not (A.shape == expected.shape and np.array_equal(A.indptr, expected.indptr)
                and np.array_equal(A.indices, expected.indices)
                and _same_bits(A.data, expected.data)):
            return "read differs from the reference"
        for fold_at in (2, 3):
            folded = reader.collect(path, fold_at=fold_at).csr()
            if not _folded_sums_agree(folded, expected, ref):
                return f"a read folding duplicates from {fold_at} entries on differs"
        rows = ref.shape[0]
        chunk = 7 if len(data) < 1 << 14 else 1 << 16  # lines cut across pieces
        for start, stop in ((0, rows), (rows // 3, rows - rows // 3)):
            B = mmio.read_rows(path, start, stop, chunk_size=chunk)
            S = A[start:stop]
            if not (np.array_equal(B.indptr, S.indptr) and np.array_equal(B.indices, S.indices)
                    and _same_bits(B.data, S.data)):
                return f"read_rows({start}, {stop}) differs from read()[{start}:{stop}]"
        plain = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
        if b"\x00" not in plain and min(ref.shape) > 0:  # scipy crashes on both (NUL: SIGSEGV,
            # an array file with no rows or columns: SIGFPE)
            try:
                theirs = scipy.io.mmread(io.BytesIO(plain))
            except Exception:  # noqa: BLE001 - scipy refusing what clspmv reads is documented
                theirs = None
            if isinstance(theirs, np.ndarray):
                if not np.array_equal(theirs.astype(np.float64), A.toarray(), equal_nan=True):
                    return "scipy.io.mmread returns another matrix"
            elif theirs is not None and not (
                    np.array_equal(theirs.row, coo.row) and np.array_equal(theirs.col, coo.col)
                    and (np.array_equal(theirs.data.astype(np.float64), coo.data,
                                        equal_nan=True)
                         or (theirs.data == np.iinfo(np.int64).min).any())):
                # Values compared as numbers: scipy negates the mirrors of a skew-symmetric
                # integer file as int64 (0 stays +0.0, -2**63 wraps), clspmv as float64.
                return "scipy.io.mmread returns other entries"
    if mmio.read_header(path).shape != ref.shape:
        return "read_header's shape differs"
    return None


def worker() -> None:
    """Answer the inputs on stdin (see the module's docstring)."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_LIMIT, ADDRESS_LIMIT))
    tmp = tempfile.mkdtemp(prefix="clspmv-fuzz-")
    os.mkdir(os.path.join(tmp, "in"))
    os.mkdir(os.path.join(tmp, "tmp"))
    os.environ["TMPDIR"] = os.path.join(tmp, "tmp")
    tempfile.tempdir = None  # TMPDIR is read again
    import scipy.io  # noqa: F401 - imported before tracing, which would slow the imports down
    import scipy.sparse  # noqa: F401

    from clspmv import io  # noqa: F401
    from clspmv.io import reader  # noqa: F401

    tracemalloc.start()
    global largest_peak
    for raw in sys.stdin:
        job = json.loads(raw)
        print(json.dumps({"start": job["id"]}), flush=True)
        largest_peak = 0.0
        try:
            problem = check(job["name"], base64.b64decode(job["data"]), tmp)
        except Exception as err:  # noqa: BLE001 - reported to the parent
            problem = f"harness error {type(err).__name__}: {err}"
        print(json.dumps({"done": job["id"], "problem": problem, "peak": largest_peak}),
              flush=True)


if __name__ == "__main__":
    worker()
