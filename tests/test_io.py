"""Tests of clspmv.io: Matrix Market reading and writing."""

from __future__ import annotations

import gzip
import re
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from clspmv import io as mmio
from clspmv.errors import MatrixFormatError

BANNER = "%%MatrixMarket matrix coordinate real general\n"


def put(tmp_path: Path, text: str | bytes, name: str = "m.mtx") -> Path:
    """Write ``text`` to ``tmp_path / name`` and return the path."""
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def dense(A: sp.spmatrix) -> np.ndarray:
    return A.toarray()


def assert_same_csr(A: sp.csr_matrix, B: sp.csr_matrix) -> None:
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
    A = mmio.read(put(tmp_path, BANNER + "% comment\n\n2 3 2\n2 3 -1.5\n1 1 2e0\n"))
    assert isinstance(A, sp.csr_matrix)
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
def test_read_million_entries_quickly(tmp_path: Path) -> None:
    n = 1_000_000
    rng = np.random.default_rng(3)
    expected = sp.coo_matrix(
        (rng.standard_normal(n), (rng.integers(0, 100_000, n), rng.integers(0, 100_000, n))),
        shape=(100_000, 100_000),
    ).tocsr()
    path = mmio.write(tmp_path / "big.mtx", expected)
    start = time.perf_counter()
    A = mmio.read(path)
    elapsed = time.perf_counter() - start
    assert_same_csr(A, expected)
    assert elapsed < 10.0, f"reading 10^6 entries took {elapsed:.1f} s"  # about 1 s in practice


# --------------------------------------------------------------------------- malformed files

# (id, file text, 1-based line the error must name, regex of the reason)
MALFORMED: list[tuple[str, str, int, str]] = [
    ("empty file", "", 1, r"missing Matrix Market banner.*empty"),
    ("no banner", "3 3 1\n1 1 1\n", 1, r"missing Matrix Market banner"),
    ("banner not first", "% hi\n" + BANNER + "1 1 1\n1 1 1\n", 1, r"missing Matrix Market banner"),
    (
        "banner too short",
        "%%MatrixMarket matrix coordinate real\n1 1 0\n",
        1,
        r"bad banner.*5 words",
    ),
    (
        "unknown object",
        "%%MatrixMarket vector coordinate real general\n",
        1,
        r"unknown object 'vector'",
    ),
    (
        "unknown format",
        "%%MatrixMarket matrix sparse real general\n",
        1,
        r"unknown format 'sparse'",
    ),
    (
        "unknown field",
        "%%MatrixMarket matrix coordinate double general\n",
        1,
        r"unknown field 'double'",
    ),
    (
        "complex field",
        "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n",
        1,
        r"complex.*not supported",
    ),
    (
        "hermitian",
        "%%MatrixMarket matrix coordinate real hermitian\n",
        1,
        r"[Cc]omplex.*not supported",
    ),
    (
        "unknown symmetry",
        "%%MatrixMarket matrix coordinate real upper\n",
        1,
        r"unknown symmetry 'upper'",
    ),
    ("array pattern", "%%MatrixMarket matrix array pattern general\n1 1\n", 1, r"pattern.*array"),
    (
        "array symmetric",
        "%%MatrixMarket matrix array real symmetric\n1 1\n1\n",
        1,
        r"array.*general",
    ),
    ("missing size line", BANNER + "% only comments\n\n", 3, r"missing size line"),
    ("size not integer", BANNER + "% c\n3 3 x\n", 3, r"bad size line: 'x' is not an integer"),
    ("size float", BANNER + "3.0 3 1\n", 2, r"bad size line: '3.0' is not an integer"),
    ("size negative", BANNER + "3 -3 1\n", 2, r"bad size line: negative size -3"),
    ("size two tokens", BANNER + "3 3\n", 2, r"bad size line: expected 3 integers.*found 2"),
    ("size four tokens", BANNER + "3 3 1 1\n", 2, r"bad size line: expected 3 integers.*found 4"),
    (
        "array size three tokens",
        "%%MatrixMarket matrix array real general\n2 2 4\n",
        2,
        r"bad size line: expected 2 integers.*found 3",
    ),
    (
        "symmetric not square",
        "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n",
        2,
        r"bad size line: .*must be square",
    ),
    ("more entries than cells", BANNER + "2 2 5\n", 2, r"bad size line: 5 entries.*at most 4"),
    (
        "symmetric more than triangle",
        "%%MatrixMarket matrix coordinate real symmetric\n2 2 4\n",
        2,
        r"bad size line: 4 entries.*at most 3",
    ),
    (
        "skew more than triangle",
        "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 2\n",
        2,
        r"bad size line: 2 entries.*at most 1",
    ),
    (
        "too few entries",
        BANNER + "3 3 5\n1 1 1\n2 2 2\n",
        4,
        r"too few entries: .* 2 entries.* declares 5",
    ),
    ("too few entries, no final newline", BANNER + "3 3 5\n1 1 1\n\n2 2 2", 5, r"too few entries"),
    ("too few entries, trailing comment", BANNER + "3 3 5\n1 1 1\n% end\n", 4, r"too few entries"),
    ("no entries at all", BANNER + "3 3 1\n", 2, r"too few entries: .* 0 entries.* declares 1"),
    (
        "too many entries",
        BANNER + "3 3 2\n1 1 1\n% c\n2 2 2\n3 3 3\n1 2 3\n",
        6,
        r"too many entries: .*declares 2.*entry 3",
    ),
    (
        "too few array values",
        "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n",
        5,
        r"too few entries.* 3 entries.* declares 4",
    ),
    (
        "two tokens",
        BANNER + "3 3 2\n1 1 1\n2 2\n",
        4,
        r"wrong number of tokens.*expected 3.*found 2",
    ),
    (
        "four tokens",
        BANNER + "3 3 2\n1 1 1\n2 2 2 2\n",
        4,
        r"wrong number of tokens.*expected 3.*found 4",
    ),
    (
        "pattern with value",
        "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 1 1\n",
        3,
        r"wrong number of tokens.*expected 2.*found 3",
    ),
    (
        "two array values on a line",
        "%%MatrixMarket matrix array real general\n2 1\n1 2\n",
        3,
        r"wrong number of tokens.*expected 1.*found 2",
    ),
    ("row index zero", BANNER + "3 3 2\n1 1 1\n0 2 2\n", 4, r"row index 0 .*1-based"),
    ("column index zero", BANNER + "3 3 2\n1 1 1\n2 0 2\n", 4, r"column index 0 .*1-based"),
    (
        "row index too large",
        BANNER + "3 3 2\n1 1 1\n4 2 2\n",
        4,
        r"row index 4 is out of range 1..3",
    ),
    (
        "column index too large",
        BANNER + "% c\n3 5 2\n1 1 1\n\n% body comment\n2 6 2\n",
        7,
        r"column index 6 is out of range 1..5",
    ),
    ("negative index", BANNER + "3 3 1\n-1 2 2\n", 3, r"row index -1 .*1-based"),
    ("non-numeric value", BANNER + "3 3 2\n1 1 1\n2 2 abc\n", 4, r"value 'abc' is not a number"),
    (
        "fortran exponent",
        BANNER + "3 3 2\n1 1 1.0D+00\n2 2 2\n",
        3,
        r"value '1.0D\+00' is not a number",
    ),
    (
        "non-integer index",
        BANNER + "3 3 2\n1 1 1\n1.5 2 2\n",
        4,
        r"row index '1.5' is not an integer",
    ),
    (
        "non-numeric index",
        BANNER + "3 3 2\n1 x 1\n1 2 2\n",
        3,
        r"column index 'x' is not an integer",
    ),
    (
        "integer field with fraction",
        "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 1\n2 2 2.5\n",
        4,
        r"value '2.5' is not an integer",
    ),
    (
        "non-numeric array value",
        "%%MatrixMarket matrix array real general\n2 1\n1\nfoo\n",
        4,
        r"value 'foo' is not a number",
    ),
    (
        "skew diagonal",
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1\n2 2 1\n",
        4,
        r"diagonal entry \(2, 2\) in a skew-symmetric file",
    ),
    ("control byte", BANNER + "3 3 1\n1 1\x00 1\n", 3, r"invalid control byte 0x00"),
]


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_malformed(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = put(tmp_path, text, "bad.mtx")
    with pytest.raises(MatrixFormatError, match=r"line \d+") as info:
        mmio.read(path)
    message = str(info.value)
    assert message.startswith(f"{path}: line {line}: "), message
    assert re.search(reason, message), message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [case[1:] for case in MALFORMED[:10]],
    ids=[case[0] for case in MALFORMED[:10]],
)
def test_malformed_gzip(tmp_path: Path, text: str, line: int, reason: str) -> None:
    path = put(tmp_path, gzip.compress(text.encode()), "bad.mtx.gz")
    with pytest.raises(MatrixFormatError, match=rf"bad\.mtx\.gz: line {line}: .*{reason}"):
        mmio.read(path)


def test_absurd_declared_entries_fail_fast(tmp_path: Path) -> None:
    text = BANNER + "1000000 1000000 1000000000000\n1 1 1\n2 2 2\n3 3 3\n"
    path = put(tmp_path, text)
    start = time.perf_counter()
    with pytest.raises(
        MatrixFormatError, match=r"line 5: too few entries.* 3 entries.* 1000000000000"
    ):
        mmio.read(path)
    assert time.perf_counter() - start < 1.0


def test_absurd_declared_entries_beyond_bound(tmp_path: Path) -> None:
    path = put(tmp_path, BANNER + "10 10 1000000000000\n1 1 1\n")
    with pytest.raises(MatrixFormatError, match=r"line 2: bad size line: .*at most 100"):
        mmio.read(path)


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


def test_truncated_gzip_in_header(tmp_path: Path) -> None:
    path = put(tmp_path, gzip_body(10)[:12], "t.mtx.gz")
    with pytest.raises(MatrixFormatError, match=r"line 1: truncated or corrupt gzip"):
        mmio.read(path)


def test_corrupt_gzip(tmp_path: Path) -> None:
    data = bytearray(gzip_body(20000))
    data[len(data) // 2 : len(data) // 2 + 16] = bytes(16)
    path = put(tmp_path, bytes(data), "c.mtx.gz")
    with pytest.raises(MatrixFormatError, match=r"line \d+: truncated or corrupt gzip"):
        mmio.read(path)


def test_corrupt_gzip_crc(tmp_path: Path) -> None:
    data = bytearray(gzip_body(50))
    data[-8] ^= 0xFF  # the CRC-32 in the trailer
    path = put(tmp_path, bytes(data), "c.mtx.gz")
    with pytest.raises(MatrixFormatError, match=r"line \d+: truncated or corrupt gzip.*CRC"):
        mmio.read(path)
