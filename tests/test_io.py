"""Tests of clspmv.io: Matrix Market reading and writing."""

from __future__ import annotations

import csv
import gzip
import os
import re
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from clspmv import io as mmio
from clspmv.errors import MatrixFormatError
from clspmv.io import assembly, held, reader

BANNER = "%%MatrixMarket matrix coordinate real general\n"


def put(tmp_path: Path, text: str | bytes, name: str = "m.mtx") -> Path:
    """Write ``text`` to ``tmp_path / name`` and return the path."""
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def dense(A: sp.spmatrix) -> np.ndarray:
    return A.toarray()


def assert_same_csr(A: sp.csr_array, B: sp.csr_array) -> None:
    """Same shape, structure and bit-identical values."""
    assert A.shape == B.shape
    assert np.array_equal(A.indptr, B.indptr)
    assert np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data.view(np.uint64), B.data.view(np.uint64))


def random_csr(rows: int, cols: int, nnz: int, seed: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(nnz) * 10.0 ** rng.integers(-300, 300, nnz)
    A = sp.csr_matrix(
        (values, (rng.integers(0, rows, nnz), rng.integers(0, cols, nnz))), shape=(rows, cols)
    )
    A.sum_duplicates()
    return A


# --------------------------------------------------------------------------- writing


def test_round_trip_general(tmp_path: Path) -> None:
    A = random_csr(50, 30, 400)
    A.data[:3] = [np.pi, -1e-310, 2.0**-1074]  # subnormals survive too
    path = mmio.write(tmp_path / "a.mtx", A)
    assert path == tmp_path / "a.mtx"
    text = path.read_text()
    assert text.startswith("%%MatrixMarket matrix coordinate real general\n")
    assert f"50 30 {A.nnz}\n" in text
    assert_same_csr(mmio.read(path), A)


def test_round_trip_gz(tmp_path: Path) -> None:
    A = random_csr(40, 40, 300, seed=1)
    path = mmio.write(tmp_path / "a.mtx.gz", A)
    assert path.read_bytes()[:2] == b"\x1f\x8b"
    assert_same_csr(mmio.read(path), A)


def test_round_trip_symmetric(tmp_path: Path) -> None:
    L = sp.tril(random_csr(30, 30, 200, seed=2))
    A = (L + L.T).tocsr()
    path = mmio.write(tmp_path / "s.mtx", A, symmetry="symmetric", comment="two\nlines")
    lines = path.read_text().splitlines()
    assert lines[0] == "%%MatrixMarket matrix coordinate real symmetric"
    assert lines[1:3] == ["% two", "% lines"]
    lower = sp.tril(A).nnz
    assert lines[3] == f"30 30 {lower}"
    assert len(lines) == 4 + lower
    entries = np.array([line.split()[:2] for line in lines[4:]], dtype=int)
    assert np.all(entries[:, 0] >= entries[:, 1])  # lower triangle only
    assert_same_csr(mmio.read(path), A)


def test_write_symmetric_rejects_unsymmetric(tmp_path: Path) -> None:
    A = sp.csr_matrix(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(ValueError, match="not symmetric"):
        mmio.write(tmp_path / "x.mtx", A, symmetry="symmetric")
    with pytest.raises(ValueError, match="square"):
        mmio.write(tmp_path / "x.mtx", sp.csr_matrix((2, 3)), symmetry="symmetric")
    with pytest.raises(ValueError, match="symmetry"):
        mmio.write(tmp_path / "x.mtx", A, symmetry="hermitian")


def test_write_symmetric_ignores_asymmetric_explicit_zeros(tmp_path: Path) -> None:
    # Numerically symmetric: an explicit zero at (0, 1) with nothing at (1, 0).
    A = sp.csr_matrix((np.array([1.0, 0.0, 5.0]), ([0, 0, 1], [0, 1, 1])), shape=(2, 2))
    mmio.write(tmp_path / "s.mtx", A, symmetry="symmetric")
    assert np.array_equal(dense(mmio.read(tmp_path / "s.mtx")), dense(A))


def test_write_accepts_dense_and_other_sparse_types(tmp_path: Path) -> None:
    M = np.array([[0, 2, 0], [1, 0, 3]], dtype=np.int32)
    for i, A in enumerate([M, M.tolist(), sp.coo_array(M), sp.lil_matrix(M), sp.csc_matrix(M)]):
        B = mmio.read(mmio.write(tmp_path / f"d{i}.mtx", A))
        assert B.dtype == np.float64
        assert B.nnz == 3
        assert np.array_equal(dense(B), M)


def test_write_sums_duplicates_and_keeps_explicit_zeros(tmp_path: Path) -> None:
    A = sp.coo_matrix((np.array([1.0, 2.0, 0.0]), ([0, 0, 1], [1, 1, 0])), shape=(2, 2))
    B = mmio.read(mmio.write(tmp_path / "d.mtx", A))
    assert B.nnz == 2
    assert B[0, 1] == 3.0
    assert B[1, 0] == 0.0


def test_write_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="complex"):
        mmio.write(tmp_path / "c.mtx", np.eye(2, dtype=complex))
    with pytest.raises(ValueError, match="complex"):
        mmio.write(tmp_path / "c.mtx", sp.csr_matrix(np.eye(2, dtype=complex)))
    with pytest.raises(ValueError, match="2-D"):
        mmio.write(tmp_path / "c.mtx", np.ones(3))
    with pytest.raises(ValueError, match="precision"):
        mmio.write(tmp_path / "c.mtx", np.eye(2), precision=0)


def test_write_precision(tmp_path: Path) -> None:
    path = mmio.write(tmp_path / "p.mtx", np.array([[1 / 3]]), precision=5)
    assert path.read_text().splitlines()[-1] == "1 1 0.33333"


@settings(max_examples=40, deadline=None)
@given(
    shape=st.tuples(st.integers(0, 6), st.integers(0, 6)),
    entries=st.lists(
        st.tuples(
            st.integers(0, 5),
            st.integers(0, 5),
            st.floats(allow_nan=False, allow_infinity=True, width=64),
        ),
        max_size=30,
    ),
    gz=st.booleans(),
)
def test_round_trip_property(
    tmp_path_factory: pytest.TempPathFactory,
    shape: tuple[int, int],
    entries: list[tuple[int, int, float]],
    gz: bool,
) -> None:
    rows, cols = shape
    kept = [(i, j, v) for i, j, v in entries if i < rows and j < cols]
    r, c, v = (list(x) for x in zip(*kept, strict=True)) if kept else ([], [], [])
    A = sp.coo_matrix((np.array(v, dtype=float), (r, c)), shape=shape).tocsr()
    A.sum_duplicates()
    if np.isnan(A.data).any():  # inf + -inf duplicates
        return
    path = tmp_path_factory.mktemp("rt") / ("p.mtx.gz" if gz else "p.mtx")
    assert_same_csr(mmio.read(mmio.write(path, A)), A)


# --------------------------------------------------------------------------- reading


def test_read_general(tmp_path: Path) -> None:
    path = put(tmp_path, BANNER + "% comment\n\n2 3 2\n2 3 -1.5\n1 1 2e0\n")
    A = mmio.read(path)
    assert isinstance(A, sp.csr_array)  # sparse arrays, not the matrix class (issue 43)
    assert isinstance(mmio.read_coo(path), sp.coo_array)
    assert isinstance(mmio.read_rows(path, 0, 1), sp.csr_array)
    assert A.dtype == np.float64
    assert A.has_sorted_indices
    assert np.array_equal(dense(A), [[2.0, 0, 0], [0, 0, -1.5]])


def test_read_symmetric(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 1\n2 1 2\n3 1 3\n3 3 4\n"
    A = mmio.read(put(tmp_path, text))
    assert np.array_equal(dense(A), [[1, 2, 3], [2, 0, 0], [3, 0, 4]])
    assert A.nnz == 6


def test_read_skew_symmetric(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 2\n3 2 -5\n"
    A = mmio.read(put(tmp_path, text))
    assert np.array_equal(dense(A), [[0, -2, 0], [2, 0, 5], [0, -5, 0]])


def test_read_pattern(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 2\n1 1\n3 2\n"
    A = mmio.read(put(tmp_path, text))
    assert A.dtype == np.float64
    assert np.array_equal(dense(A), [[1, 0, 0], [0, 0, 1], [0, 1, 0]])


def test_read_integer(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 7\n2 1 -3\n"
    A = mmio.read(put(tmp_path, text))
    assert A.dtype == np.float64
    assert np.array_equal(dense(A), [[0, 7], [-3, 0]])


def test_read_array_is_column_major(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix array real general\n% c\n2 3\n1\n4\n0\n5\n3\n6.5\n"
    A = mmio.read(put(tmp_path, text))
    assert np.array_equal(dense(A), [[1, 0, 3], [4, 5, 6.5]])
    assert A.nnz == 5  # zeros of a dense file are not stored


def test_read_array_integer(tmp_path: Path) -> None:
    text = "%%MatrixMarket matrix array integer general\n1 2\n3\n-4\n"
    assert np.array_equal(dense(mmio.read(put(tmp_path, text))), [[3, -4]])


def test_read_sums_duplicates_and_sorts(tmp_path: Path) -> None:
    text = BANNER + "2 3 5\n1 3 1\n1 1 2\n1 3 10\n2 2 1\n2 2 -1\n"
    A = mmio.read(put(tmp_path, text))
    assert A.has_sorted_indices
    assert np.array_equal(A.indices, [0, 2, 1])
    assert np.array_equal(A.data, [2.0, 11.0, 0.0])  # 1 + (-1) stays a stored zero


def test_read_keeps_explicit_zeros(tmp_path: Path) -> None:
    A = mmio.read(put(tmp_path, BANNER + "2 2 2\n1 1 0.0\n2 2 -0\n"))
    assert A.nnz == 2
    assert np.array_equal(A.data, [0.0, 0.0])
    # scipy's COO -> CSR conversion, which read relies on, keeps explicit zeros.
    B = sp.coo_matrix((np.array([0.0, 1.0]), ([0, 1], [0, 1])), shape=(2, 2)).tocsr()
    assert B.nnz == 2


def test_read_empty_matrix(tmp_path: Path) -> None:
    A = mmio.read(put(tmp_path, BANNER + "0 0 0\n"))
    assert A.shape == (0, 0)
    assert A.nnz == 0
    A = mmio.read(put(tmp_path, BANNER + "4 5 0"))
    assert A.shape == (4, 5)


def test_read_tolerant_whitespace(tmp_path: Path) -> None:
    text = (
        "%%matrixmarket MATRIX Coordinate REAL General\r\n"
        "  2 2 2  \r\n"
        "\t1   1\t1.5\r\n"
        "%  a comment in the body\r\n"
        "\r\n"
        "2 2 2.5"  # no final newline
    )
    assert np.array_equal(dense(mmio.read(put(tmp_path, text))), [[1.5, 0], [0, 2.5]])


def test_read_gzip_detected_by_magic(tmp_path: Path) -> None:
    text = BANNER + "1 1 1\n1 1 3\n"
    # gzip content without .gz, and plain content with .gz
    assert mmio.read(put(tmp_path, gzip.compress(text.encode()), "a.mtx"))[0, 0] == 3.0
    assert mmio.read(put(tmp_path, text, "b.mtx.gz"))[0, 0] == 3.0


def test_read_accepts_str_path(tmp_path: Path) -> None:
    path = put(tmp_path, BANNER + "1 1 1\n1 1 3\n")
    assert mmio.read(str(path))[0, 0] == 3.0


def test_read_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        mmio.read(tmp_path / "nope.mtx")


@pytest.mark.slow
def test_read_million_entries(tmp_path: Path) -> None:
    n = 1_000_000
    rng = np.random.default_rng(3)
    expected = sp.coo_matrix(
        (rng.standard_normal(n), (rng.integers(0, 100_000, n), rng.integers(0, 100_000, n))),
        shape=(100_000, 100_000),
    ).tocsr()
    path = mmio.write(tmp_path / "big.mtx", expected)
    assert_same_csr(mmio.read(path), expected)  # its speed: tools/read_speed.py, not a test


# --------------------------------------------------------------------------- malformed files

# One file per case in tests/data/malformed/, described by its MANIFEST.csv: the file, the line
# the error must name ("N", or "N-M" where decompression decides), a regex of the reason, and
# what is wrong with it.
CORPUS = Path(__file__).parent / "data" / "malformed"
MANIFEST = list(csv.DictReader((CORPUS / "MANIFEST.csv").open(newline="")))
MEMORY_LIMIT = 16 << 20
"""Bytes a malformed file may make the reader allocate (it reads 4 MiB chunks): far below what
any declared size needs."""


def test_manifest_lists_every_file() -> None:
    files = {p.name for p in CORPUS.iterdir() if p.name != "MANIFEST.csv"}
    listed = [row["file"] for row in MANIFEST]
    assert len(listed) == len(set(listed))
    assert files == set(listed)
    assert len(listed) >= 60


@pytest.mark.parametrize("case", MANIFEST, ids=[row["file"] for row in MANIFEST])
def test_malformed_corpus(case: dict[str, str]) -> None:
    path = CORPUS / case["file"]
    low, _, high = case["line"].partition("-")
    tracemalloc.start()
    try:
        with pytest.raises(MatrixFormatError) as info:
            mmio.read(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    message = str(info.value)
    match = re.match(rf"{re.escape(str(path))}: line (\d+): ", message)
    assert match, message
    assert int(low) <= int(match.group(1)) <= int(high or low), message
    assert re.search(case["reason"], message), message
    assert isinstance(info.value, ValueError)
    assert peak < MEMORY_LIMIT, f"reading {case['file']} allocated {peak} bytes"


def test_memory_measure_sees_what_scipy_allocates(tmp_path: Path) -> None:
    # The corpus' memory bound can fail: a valid file of 10**7 empty rows needs a 40 MB row pointer.
    path = put(tmp_path, BANNER + "10000000 1 0\n")
    tracemalloc.start()
    try:
        assert mmio.read(path).shape == (10_000_000, 1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak > MEMORY_LIMIT


def test_dimension_guard_uses_the_kernel_index_limit(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mmio.header, "INDEX_LIMIT", 100)
    with pytest.raises(MatrixFormatError,
                       match=r"line 2: bad size line: 101 rows is beyond the 100"):
        mmio.read(put(tmp_path, BANNER + "101 3 0\n"))
    assert mmio.read(put(tmp_path, BANNER + "100 100 0\n")).shape == (100, 100)


def gzip_body(lines: int) -> bytes:
    text = (
        BANNER
        + f"{lines} 1 {lines}\n"
        + "".join(f"{i} 1 {i * 0.123456789:.17g}\n" for i in range(1, lines + 1))
    )
    return gzip.compress(text.encode())


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip_body(20000)
    path = put(tmp_path, data[: len(data) // 2], "t.mtx.gz")
    with pytest.raises(
        MatrixFormatError, match=r"t\.mtx\.gz: line \d+: truncated or corrupt gzip"
    ) as info:
        mmio.read(path)
    line = int(re.search(r"line (\d+)", str(info.value)).group(1))
    assert 1000 < line < 20003  # in the body, near where the good data ends


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip_body(20000))
    data[len(data) // 2 : len(data) // 2 + 16] = bytes(16)
    path = put(tmp_path, bytes(data), "c.mtx.gz")
    with pytest.raises(MatrixFormatError, match=r"line \d+: truncated or corrupt gzip"):
        mmio.read(path)


# --------------------------------------------------------------------------- issue 46: bounds

ARRAY_NO_ROWS = b"%%MatrixMarket matrix array real general\n0 3\n"


def traced_peak(fn) -> tuple[object, int]:
    """``fn()`` and the peak of Python and numpy memory it allocated (tracemalloc)."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_array_file_without_rows(tmp_path: Path) -> None:
    # 45 bytes that crash fast_matrix_market with SIGFPE: read without it.
    assert len(ARRAY_NO_ROWS) == 45
    path = put(tmp_path, ARRAY_NO_ROWS)
    assert mmio.read(path).shape == (0, 3)
    assert mmio.read_coo(path).shape == (0, 3)
    assert mmio.read(put(tmp_path, b"%%MatrixMarket matrix array real general\n0 0\n")).shape \
        == (0, 0)


def refused(read, path: Path, pattern: str = "") -> str:
    """The message of the MatrixFormatError ``read(path)`` raises, which matches ``pattern``."""
    with pytest.raises(MatrixFormatError, match=pattern) as info:
        read(path)
    return str(info.value)


def _gzip_stream(path: Path, head: bytes, filler: bytes, size: int) -> None:
    """``head`` then ``size`` bytes of ``filler``, gzip-compressed without holding them."""
    with gzip.open(path, "wb", compresslevel=9) as fh:
        fh.write(head)
        block = filler * (1 << 20)
        for _ in range(size // len(block)):
            fh.write(block)


def test_gzip_of_newlines_stays_small(tmp_path: Path) -> None:
    # A valid header and then blank lines: memory bounded by a piece, not the body (the issue's
    # 209 KB file held 0.2 GiB; 64 MiB of them here).
    path = tmp_path / "nl.mtx.gz"
    _gzip_stream(path, BANNER.encode() + b"2 2 1\n", b"\n", 64 << 20)
    assert path.stat().st_size < 200_000
    _, peak = traced_peak(lambda: refused(mmio.read, path,
                                          r"line 67108866: too few entries: .* 0 entries"))
    assert peak < 32 << 20, peak


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_body_without_newlines(tmp_path: Path, gz: bool) -> None:
    # No line end in 8 MiB: refused after LINE_LIMIT bytes, in linear time and bounded memory.
    path = tmp_path / ("x.mtx.gz" if gz else "x.mtx")
    head = BANNER.encode() + b"2 2 1\n"
    if gz:
        _gzip_stream(path, head, b"1", 8 << 20)
    else:
        path.write_bytes(head + b"1" * (8 << 20))
    for read in (mmio.read, lambda p: mmio.read_rows(p, 0, 1), mmio.read_coo):
        _, peak = traced_peak(lambda read=read: refused(
            read, path, r"line 3: line longer than 1048576 bytes"))
        assert peak < 24 << 20, peak


def test_line_limit_is_exact(tmp_path: Path) -> None:
    comment = b"%" * (1 << 20)  # a line of exactly LINE_LIMIT bytes is fine, one more is not
    path = put(tmp_path, BANNER.encode() + comment + b"\n1 1 1\n1 1 5\n")
    assert mmio.read(path)[0, 0] == 5.0
    path = put(tmp_path, BANNER.encode() + b"1 1 1\n" + comment + b"%\n1 1 5\n")
    with pytest.raises(MatrixFormatError, match="line 3: line longer than 1048576 bytes"):
        mmio.read(path)


def test_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))
    monkeypatch.setattr(tempfile, "tempdir", None)
    A = random_csr(300, 200, 5000)
    path = mmio.write(tmp_path / "a.mtx.gz", A)
    assert_same_csr(mmio.read(path), A)
    assert_same_csr(mmio.read_rows(path, 10, 20), A[10:20])
    assert list(private.iterdir()) == []


def test_tall_header_allocates_nothing_before_the_entries(tmp_path: Path) -> None:
    # 76 bytes declaring 2 * 10**8 rows and one entry: read_coo holds the entry only; read's
    # CSR row pointer (4 bytes a row) is allocated once, after the body was read and checked.
    text = b"%%MatrixMarket matrix coordinate real general\n200000000 200000000 1\n1 1 1.0\n"
    assert len(text) == 76
    path = put(tmp_path, text)
    coo, peak = traced_peak(lambda: mmio.read_coo(path))
    assert coo.shape == (200_000_000, 200_000_000) and coo.nnz == 1
    assert peak < 8 << 20, peak  # a read of one piece (4 MiB), not a row pointer of 800 MB
    lying = put(tmp_path, text.replace(b"1 1 1.0\n", b""), "lying.mtx")
    _, peak = traced_peak(lambda: refused(mmio.read, lying, "too few entries"))
    assert peak < 8 << 20, peak
    tall = put(tmp_path, text.replace(b"200000000", b"20000000"), "tall.mtx")
    A, peak = traced_peak(lambda: mmio.read(tall))
    returned = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    assert A.shape == (20_000_000, 20_000_000) and A.nnz == 1
    assert peak <= 2 * returned + (64 << 20), (peak, returned)


ABSURD_ROWS = (r"line 2: the size line declares 2000000000 rows{}: their CSR row pointer would "
               r"need {} bytes \({} GiB\), over 64 times the arrays of the entries held \({}\): "
               r"read the file with clspmv\.io\.read_coo\(path\), in memory proportional to its "
               r"entries, or fix the row count on the size line$")


def test_absurd_row_count_is_refused_before_the_row_pointer(tmp_path: Path) -> None:
    # 78 bytes declaring 2 * 10**9 rows for one entry: the CSR row pointer would take 8 GB (and
    # minutes, or a MemoryError); read and read_rows refuse it, allocating nothing of the kind.
    text = b"%%MatrixMarket matrix coordinate real general\n2000000000 2000000000 1\n1 1 1.0\n"
    assert len(text) == 78
    path = put(tmp_path, text)
    _, peak = traced_peak(lambda: refused(
        mmio.read, path, ABSURD_ROWS.format("", 8000000004, 7.5, "1 entry, 12 bytes")))
    assert peak < 8 << 20, peak
    _, peak = traced_peak(lambda: refused(
        lambda p: mmio.read_rows(p, 5, 1_900_000_000), path, ABSURD_ROWS.format(
            ", of which rows 5:1900000000 are read", 7599999984, 7.1, "0 entries, 0 bytes")))
    assert peak < 8 << 20, peak
    # What the message offers reads it, and so does a range of few rows.
    coo = mmio.read_coo(path)
    assert coo.shape == (2_000_000_000, 2_000_000_000) and coo.nnz == 1
    A = mmio.read_rows(path, 0, 10)
    assert A.shape == (10, 2_000_000_000) and A.nnz == 1 and A[0, 0] == 1.0


def test_tall_matrix_of_few_entries_still_reads(tmp_path: Path) -> None:
    lines = ["1 3 1.5", "500000 2 -2.0", "1000000 1 3.0"]
    path = put(tmp_path, f"{BANNER}1000000 3 3\n" + "\n".join(lines) + "\n")
    expected = scipy.io.mmread(path).tocsr()
    assert_same_csr(mmio.read(path), expected)
    assert_same_csr(mmio.read_rows(path, 400_000, 1_000_000), expected[400_000:])


def test_row_pointer_beyond_the_memory_available(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    # Within 64 times its entries (4 MB of row pointer for 10,000 entries) but beyond the
    # memory available (scaled down: 1 MiB free allowance, 2 MiB available): refused.
    A = random_csr(1_000_000, 50, 10_000, seed=5)
    path = mmio.write(tmp_path / "a.mtx", A)
    monkeypatch.setattr(assembly, "ROW_POINTER_FREE", 1 << 20)
    assert_same_csr(mmio.read(path), A)
    monkeypatch.setattr(assembly, "available_memory", lambda: 2 << 20)
    refused(mmio.read, path, r"line 2: the size line declares 1000000 rows: their CSR row "
            r"pointer would need 4000004 bytes \(3\.8 MiB\), more than the 2097152 bytes "
            r"\(2\.0 MiB\) of memory available now: read the file with clspmv\.io\.read_coo")
    monkeypatch.setattr(assembly, "available_memory", lambda: None)  # unknown: read
    assert_same_csr(mmio.read(path), A)


def test_available_memory_is_within_the_physical_memory() -> None:
    available = assembly.available_memory()
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert isinstance(available, int) and 0 < available <= physical, (available, physical)


def test_validating_path_memory(tmp_path: Path) -> None:
    # CRLF sends every piece to the validating reader: its memory is bounded by a piece, not
    # the file (it used to need about 13 times the file).
    A = random_csr(20_000, 20_000, 300_000, seed=4)
    plain = mmio.write(tmp_path / "a.mtx", A).read_bytes()
    path = put(tmp_path, plain.replace(b"\n", b"\r\n"), "crlf.mtx")
    assert path.stat().st_size > 10 << 20
    B, peak = traced_peak(lambda: mmio.read(path))
    assert_same_csr(B, A)
    returned = B.data.nbytes + B.indices.nbytes + B.indptr.nbytes
    assert peak <= 2 * returned + (64 << 20), (peak, returned)
    # read_coo holds the entries as read (read also folds them, 2**18 at a time).
    coo, peak = traced_peak(lambda: mmio.read_coo(path))
    assert coo.nnz == A.nnz
    assert peak < path.stat().st_size * 2


def test_read_coo_is_scipys_order(tmp_path: Path) -> None:
    text = ("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 3\n2 1 1.5\n3 1 -2\n"
            "3 2 4\n")
    path = put(tmp_path, text)
    coo = mmio.read_coo(path)
    theirs = scipy.io.mmread(path)
    assert np.array_equal(coo.row, theirs.row) and np.array_equal(coo.col, theirs.col)
    assert np.array_equal(coo.data, theirs.data)
    assert_same_csr(mmio.read(path), theirs.tocsr())


# --------------------------------------------------------------------------- assembly, folding


def _sequential_sums(keys: list[int], values: list[float]) -> dict[int, float]:
    """Each key's values added one at a time in order, from -0.0, in plain Python."""
    sums: dict[int, float] = {}
    for key, value in zip(keys, values, strict=True):
        sums[key] = sums.get(key, -0.0) + value
    return sums


@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("seed", range(40))
def test_folded_entries_sum_in_order(seed: int, column_major: bool,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    # Batches added one after the other (new positions merged in blocks of 3 here; some
    # batches increasing beyond the positions held, which are appended): the keys sorted and
    # distinct, each sum its values added in the order given, bit for bit.
    monkeypatch.setattr(held, "_BLOCK", 3)
    rng = np.random.default_rng(seed)
    rows, cols = int(rng.integers(1, 30)), int(rng.integers(1, 30))
    folded = held.FoldedEntries((rows, cols), column_major=column_major)
    width = rows if column_major else cols  # keys: major * width + minor
    keys: list[int] = []
    values: list[float] = []
    for _ in range(int(rng.integers(1, 6))):
        n = int(rng.integers(0, 60))
        r, c = rng.integers(0, rows, n), rng.integers(0, min(cols, 1 + seed), n)
        if seed % 3 == 0 and rng.random() < 0.7:  # increasing, beyond the keys held
            after = max(keys, default=-1) + 1
            k = np.unique(rng.integers(after, after + 3 * n + 1, n))
            major, minor, n = k // width, k % width, k.size
            r, c = (minor, major) if column_major else (major, minor)
        v = rng.standard_normal(n) * 10.0 ** rng.integers(-20, 20, n)
        v[rng.random(n) < 0.1] = -0.0
        folded.add([r.astype(np.int32), c.astype(np.int32), v])
        keys += (c * rows + r if column_major else r * cols + c).tolist()
        values += v.tolist()
    sums = _sequential_sums(keys, values)
    assert folded.keys.tolist() == sorted(sums)
    assert np.array_equal(folded.sums.view(np.uint64),
                          np.array([sums[k] for k in sorted(sums)]).view(np.uint64))


@pytest.mark.parametrize("column_major", [False, True])
@pytest.mark.parametrize("index", [np.int32, np.int64])
def test_folded_csr_is_scipys(index: type, column_major: bool,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    # Distinct entries (explicit zeros, empty rows and columns, a last row) folded and made
    # CSR a block of 5 at a time: scipy's tocsr, bit for bit, the minor indices written over
    # the keys as 32-bit or 64-bit integers (which scipy may narrow again); column-major keys
    # made CSC, then transposed.
    monkeypatch.setattr(assembly, "_BLOCK", 5)
    monkeypatch.setattr(assembly, "_INT32_MAX", 2**31 - 1 if index is np.int32 else 10)
    A = random_csr(40, 23, 300, seed=2)
    A.data[::7] = 0.0
    coo = A.tocoo()
    folded = held.FoldedEntries(A.shape, column_major=column_major)
    order = np.random.default_rng(2).permutation(A.nnz)
    folded.add([coo.row[order].astype(np.int32), coo.col[order].astype(np.int32),
                coo.data[order]])
    B = assembly.folded_csr(folded, A.shape)
    assert_same_csr(B, A)
    assert folded.size == 0


def _duplicates_file(tmp_path: Path, lines: int) -> Path:
    """A gzip symmetric file of ``lines`` lines, half ``2 1 0.5`` (mirrored), half ``1 1
    0.25``: a 2x2 matrix's worth of entries."""
    body = b"2 1 0.5\n" * (lines // 2) + b"1 1 0.25\n" * (lines - lines // 2)
    path = tmp_path / "dups.mtx.gz"
    head = f"%%MatrixMarket matrix coordinate real symmetric\n3000 3000 {lines}\n".encode()
    path.write_bytes(gzip.compress(head + body, compresslevel=1))
    return path


def test_file_of_duplicates_is_folded_while_read(tmp_path: Path) -> None:
    # Three million lines for three entries: held as read, they would take 16 bytes a line
    # (and the CSR conversion more); folded, the read stays within the bound of a tiny matrix.
    lines = 3_000_000
    path = _duplicates_file(tmp_path, lines)
    A, peak = traced_peak(lambda: mmio.read(path))
    assert A.nnz == 3 and A.shape == (3000, 3000)
    assert (A[1, 0], A[0, 1], A[0, 0]) == (0.5 * (lines // 2),) * 2 + (0.25 * (lines // 2),)
    returned = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    assert peak <= 2 * returned + (64 << 20), (peak, returned)
    rows, peak_rows = traced_peak(lambda: mmio.read_rows(path, 0, 2))
    assert_same_csr(rows, A[0:2])
    assert peak_rows <= 2 * returned + (64 << 20)
    # Unfolded (as read_coo keeps them), the same entries are beyond that bound.
    _, unfolded = traced_peak(lambda: reader.collect(path).csr())
    assert unfolded > 2 * returned + (64 << 20)


def test_folding_sums_in_file_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Values whose sum depends on the order, on four positions (so that every fold pays):
    # folded every few entries, each position's sum is still its values added one at a time in
    # file order.
    folds = []
    add = held.FoldedEntries.add
    monkeypatch.setattr(held.FoldedEntries, "add",
                        lambda self, entries: folds.append(1) or add(self, entries))
    rng = np.random.default_rng(7)
    where = [(1, 1), (2, 3), (1, 2), (3, 1)]
    entries = [(*where[k // 2 % 4], float(rng.choice([1e16, -1e16, 1.0, 3.0, -0.0, 2.5e-16])))
               for k in range(400)]
    lines = [f"{i} {j} {v!r}" for i, j, v in entries]
    path = put(tmp_path, f"{BANNER}3 200 {len(lines)}\n" + "\n".join(lines) + "\n")
    for fold_at in (8, 13, 40):
        folds.clear()
        A = reader.collect(path, fold_at=fold_at).csr()
        assert len(folds) > 10
        assert A.nnz == 4
        for i, j in where:
            values = [v for r, c, v in entries if (r, c) == (i, j)]
            total = values[0]
            for v in values[1:]:
                total += v
            assert np.float64(A[i - 1, j - 1]).tobytes() == np.float64(total).tobytes()


def test_every_entry_is_sorted_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file without duplicates: folded as it is read, every entry is sorted in one batch only
    # (the positions already folded are merged with a batch, not sorted again), and the result
    # is scipy's, bit for bit (nothing to sum).
    sorted_entries = []
    add = held.FoldedEntries.add
    monkeypatch.setattr(held.FoldedEntries, "add", lambda self, entries:
                        sorted_entries.append(entries[0].size) or add(self, entries))
    A = random_csr(300, 300, 5000, seed=3)
    path = mmio.write(tmp_path / "a.mtx", A)
    assert_same_csr(reader.collect(path, fold_at=1000, chunk_size=1 << 12).csr(), A)
    assert sum(sorted_entries) == A.nnz and len(sorted_entries) > 3


def test_error_line_after_fast_pieces(tmp_path: Path) -> None:
    # The reader tells the source the first line of each piece (counted while parsing the one
    # before, one line an entry on the fast path): the line of a problem after many pieces is
    # still exact.
    lines = [f"{i % 50 + 1} {i % 7 + 1} {i}.5" for i in range(3000)]
    lines[2500] = "1 1 2.5.5"
    path = put(tmp_path, f"{BANNER}% two header lines\n100 100 3000\n" + "\n".join(lines) + "\n")
    for chunk in (1 << 10, 1 << 12):
        with pytest.raises(MatrixFormatError, match=r"line 2504: value '2\.5\.5' is not"):
            reader.collect(path, chunk_size=chunk)
