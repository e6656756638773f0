"""clspmv.io.read's fast path (fast_matrix_market) against the validating reader."""

from __future__ import annotations

import gzip
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv import io as mmio
from clspmv.errors import MatrixFormatError
from clspmv.io import fast, reader
from clspmv.io.entries import Collector
from clspmv.io.header import parse_header
from clspmv.io.source import Source

from shared_data import MATRICES

REAL = sorted(MATRICES.glob("*.mtx.gz"))


def assert_same_csr(A: sp.csr_array, B: sp.csr_array) -> None:
    """Same shape, structure and bit-identical values."""
    assert A.shape == B.shape
    assert np.array_equal(A.indptr, B.indptr)
    assert np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data.view(np.uint64), B.data.view(np.uint64))


def read_validating(path: Path) -> sp.csr_array:
    """``path`` read by the validating reader alone."""
    return reader.collect(path, fast=False).csr()


def fast_result(path: Path, chunk_size: int = 1 << 22) -> sp.csr_array | None:
    """What the fast path alone makes of ``path`` (None: it leaves a piece to the other)."""
    with Source(path) as src:
        header = parse_header(src)
        kept = Collector(header, name=src.name)
        found = 0
        for piece in src.pieces(chunk_size):
            entries = fast.parse_canonical(piece.data, header, found)
            if entries is None:
                return None
            found += entries.count
            kept.add(entries)
    return kept.csr() if found == header.entries else None


@pytest.mark.skipif(not REAL, reason=f"no real matrices in {MATRICES}")
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_matrices_take_the_fast_path(path: Path) -> None:
    expected = read_validating(path)
    A = fast_result(path)
    assert A is not None, "a SuiteSparse file should take the fast path"
    assert_same_csr(A, expected)
    assert_same_csr(mmio.read(path), expected)


def _lines(rng: np.random.Generator, n: int, rows: int, cols: int, field: str,
           lower: bool = False, strict: bool = False) -> list[str]:
    r = rng.integers(1, rows + 1, n)
    c = rng.integers(1, cols + 1, n)
    if lower:
        r, c = np.maximum(r, c), np.minimum(r, c)
        if strict:
            keep = r != c
            r, c = r[keep], c[keep]
    if field == "pattern":
        return [f"{i} {j}" for i, j in zip(r, c, strict=True)]
    if field == "integer":
        v = rng.integers(-1000, 1000, r.size)
        return [f"{i} {j} {x}" for i, j, x in zip(r, c, v, strict=True)]
    v = rng.standard_normal(r.size) * 10.0 ** rng.integers(-20, 20, r.size)
    v[::7] = 0.0
    return [f"{i} {j} {x:.17g}" for i, j, x in zip(r, c, v, strict=True)]


KINDS = [
    ("real", "general", {}),
    ("real", "symmetric", {"lower": True}),
    ("real", "skew-symmetric", {"lower": True, "strict": True}),
    ("pattern", "general", {}),
    ("pattern", "symmetric", {"lower": True}),
    ("integer", "general", {}),
    ("integer", "symmetric", {"lower": True}),
]


def _file(tmp_path: Path, field: str, symmetry: str, lines: list[str], rows: int, cols: int,
          name: str = "m.mtx", sep: str = "\n", comment: str = "% made by a test\n") -> Path:
    text = (f"%%MatrixMarket matrix coordinate {field} {symmetry}\n{comment}"
            f"{rows} {cols} {len(lines)}\n" + sep.join(lines) + "\n")
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
    return path


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize(("field", "symmetry", "opts"), KINDS,
                         ids=[f"{f}-{s}" for f, s, _ in KINDS])
def test_generated_kinds_fast_equals_validating(
    tmp_path: Path, field: str, symmetry: str, opts: dict, gz: bool
) -> None:
    rng = np.random.default_rng(len(field) + len(symmetry))
    rows = 100
    cols = 80 if symmetry == "general" else rows
    lines = _lines(rng, 3000, rows, cols, field, **opts)  # hundreds of duplicates
    lines[3] = lines[3].replace(" ", "  ", 2).replace("  ", " ", 1)  # SuiteSparse padding
    path = _file(tmp_path, field, symmetry, lines, rows, cols, "m.mtx.gz" if gz else "m.mtx")
    expected = read_validating(path)
    A = fast_result(path)
    assert A is not None
    assert_same_csr(A, expected)
    assert_same_csr(mmio.read(path), expected)


def test_array_files_take_the_fast_path(tmp_path: Path) -> None:
    for field, values in (("real", ["1.5", "0", "-2e3", "4", "0", "6.25"]),
                          ("integer", ["1", "0", "-2", "4", "0", "6"])):
        path = tmp_path / f"{field}.mtx"
        path.write_text(f"%%MatrixMarket matrix array {field} general\n3 2\n"
                        + "\n".join(values) + "\n")
        A = fast_result(path)
        assert A is not None
        assert_same_csr(A, read_validating(path))
        assert A.nnz == 4


# Bodies the fast parser would read leniently or that leave the canonical layout: the
# validating reader decides, so the result (matrix or message) is the validating one.
NON_CANONICAL = {
    "comment in body": ("1 1 1.5\n% note\n2 2 2.5\n", None),
    "blank line": ("1 1 1.5\n\n2 2 2.5\n", None),
    "tabs": ("1\t1\t1.5\n2\t2\t2.5\n", None),
    "crlf": ("1 1 1.5\r\n2 2 2.5\r\n", None),
    "leading blanks": (" 1 1 1.5\n2 2 2.5\n", None),
    "trailing blank": ("1 1 1.5 \n2 2 2.5\n", None),
    "inf and nan": ("1 1 inf\n2 2 -nan\n", None),
    "trailing token": ("1 1 1.5 7\n2 2 2.5\n", r"line 3: wrong number of tokens .*found 4"),
    "fortran exponent": ("1 1 1.5D-03\n2 2 2.5\n", r"line 3: value '1.5D-03' is not a number"),
    "junk after value": ("1 1 2.5x\n2 2 2.5\n", r"line 3: value '2.5x' is not a number"),
    "padded value and extra token": (
        "1 1  1.5 7\n2 2 2.5\n", r"line 3: wrong number of tokens .*found 4"),
    "extra token, other line short": (
        "1 1 1.5 7\n2 2\n", r"line 3: wrong number of tokens .*found 4"),
}


@pytest.mark.parametrize("case", NON_CANONICAL, ids=list(NON_CANONICAL))
def test_non_canonical_bodies_are_left_to_the_validating_reader(
    tmp_path: Path, case: str
) -> None:
    body, error = NON_CANONICAL[case]
    path = tmp_path / "m.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n2 2 2\n" + body.encode())
    assert fast_result(path) is None
    if error is None:
        assert_same_csr(mmio.read(path), read_validating(path))
    else:
        with pytest.raises(MatrixFormatError, match=error):
            mmio.read(path)


def test_integer_field_with_fraction_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "i.mtx"
    path.write_text("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 2.5\n")
    with pytest.raises(MatrixFormatError, match=r"line 3: value '2.5' is not an integer"):
        mmio.read(path)


def test_lying_entry_count_allocates_nothing(tmp_path: Path) -> None:
    # 10**12 entries declared, three given: the error comes without allocating for them.
    for name, data in (("a.mtx", b"1000000 1000000 1000000000000\n1 1 1\n2 2 2\n3 3 3\n"),
                       ("b.mtx.gz", b"1000000 1000000 100000000\n1 1 1\n2 2 2\n3 3 3\n")):
        text = b"%%MatrixMarket matrix coordinate real general\n" + data
        path = tmp_path / name
        path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
        tracemalloc.start()
        try:
            with pytest.raises(MatrixFormatError, match=r"line 5: too few entries: .* 3 entries"):
                mmio.read(path)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 << 20, f"{name}: {peak} bytes"


def test_hermitian_and_complex_refused_before_parsing(tmp_path: Path) -> None:
    for banner, reason in (("complex general", "complex"), ("real hermitian", "[Hh]ermitian")):
        path = tmp_path / "h.mtx"
        path.write_text(f"%%MatrixMarket matrix coordinate {banner}\n1 1 1\n1 1 1 0\n")
        with pytest.raises(MatrixFormatError, match=rf"line 1: .*{reason}.*not supported"):
            mmio.read(path)


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 16, 37])
def test_pieces_of_any_size(tmp_path: Path, chunk: int) -> None:
    # Pieces of whole lines however the reads cut them: padded values (and any run of spaces)
    # stay canonical, one token too many (or a leading blank) never does.
    good = ["1 1  1.5", "2 1 -2.5", "3 3  3", "2 2  0.25e-3", "1   3 7"]
    path = _file(tmp_path, "real", "general", good, 3, 3)
    A = fast_result(path, chunk)
    assert A is not None
    assert_same_csr(A, read_validating(path))
    assert_same_csr(reader.collect(path, chunk_size=chunk).csr(), A)
    for bad in (["1 1  1.5 7", "2 1 -2.5", "3 3 3"], ["1 1 1.5", " 2 1 2", "3 3 3"],
                ["1 1 1.5", "2 1 2", "3 3  3 1"]):
        assert fast_result(_file(tmp_path, "real", "general", bad, 3, 3, "b.mtx"), chunk) is None


# The tester's examples (issue 46) and their kin: tokens fast_matrix_market reads a prefix of.
# With or without a comment line before them (which sends the piece to the validating reader),
# the file is refused with the same message.
LENIENT = {
    "1.2.3": "value '1.2.3' is not a number",
    "1e": "value '1e' is not a number",
    "2-3": "value '2-3' is not a number",
    "1_0": "value '1_0' is not a number",
    "1e5e5": "value '1e5e5' is not a number",
    "1e5.3": "value '1e5.3' is not a number",
    "1.5e+": "value '1.5e\\+' is not a number",
    "1e-.5": "value '1e-.5' is not a number",
    "1.-3": "value '1.-3' is not a number",
    "--1": "value '--1' is not a number",
    "0x10": "value '0x10' is not a number",
}


@pytest.mark.parametrize("token", LENIENT, ids=list(LENIENT))
@pytest.mark.parametrize("comment", ["", "% a comment\n"], ids=["fast", "validating"])
def test_one_language(tmp_path: Path, token: str, comment: str) -> None:
    path = tmp_path / "m.mtx"
    line = 4 if comment else 3
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n3 3 2\n{comment}"
                    f"1 1 {token}\n2 2 2\n")
    with pytest.raises(MatrixFormatError, match=rf"line {line}: {LENIENT[token]}$"):
        mmio.read(path)
    with pytest.raises(MatrixFormatError, match=rf"line {line}: {LENIENT[token]}$"):
        read_validating(path)


@pytest.mark.parametrize("line", ["1 2-3 1", "2+3 1 1", "1.5 1 1", "1e0 1 1", "+1 1 1"])
def test_index_tokens(tmp_path: Path, line: str) -> None:
    path = tmp_path / "m.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real general\n3 3 1\n{line}\n")
    expected = "row" if line.split()[0] != "1" else "column"
    if line.startswith("+1"):  # a sign is allowed: the fast parser refuses it, the other reads it
        assert_same_csr(mmio.read(path), read_validating(path))
        assert mmio.read(path)[0, 0] == 1.0
        return
    with pytest.raises(MatrixFormatError, match=rf"line 3: {expected} index .* not an integer"):
        mmio.read(path)


def test_nul_byte_never_reaches_the_parser(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # fast_matrix_market crashes the process (SIGSEGV) on a NUL byte in a line.
    parse = fast.scipy.io.mmread

    def guarded(source, **kwargs):
        assert b"\0" not in source.getvalue()
        return parse(source, **kwargs)

    monkeypatch.setattr(fast.scipy.io, "mmread", guarded)
    path = tmp_path / "n.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\x00\n2 2 2\n")
    with pytest.raises(MatrixFormatError, match=r"line 3: invalid control byte 0x00"):
        mmio.read(path)
