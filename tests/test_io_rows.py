"""clspmv.io.read_rows (a row range, streamed) and clspmv.io.read_header."""

from __future__ import annotations

import csv
import gzip
import re
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv import io as mmio
from clspmv.errors import MatrixFormatError
from clspmv.io import reader

from shared_data import MATRICES

REAL = sorted(MATRICES.glob("*.mtx.gz"))
CORPUS = Path(__file__).parent / "data" / "malformed"
MANIFEST = list(csv.DictReader((CORPUS / "MANIFEST.csv").open(newline="")))


def assert_same_csr(A: sp.csr_array, B: sp.csr_array) -> None:
    """Same shape, structure and bit-identical values."""
    assert isinstance(A, sp.csr_array)
    assert A.shape == B.shape
    assert np.array_equal(A.indptr, B.indptr)
    assert np.array_equal(A.indices, B.indices)
    assert np.array_equal(A.data.view(np.uint64), B.data.view(np.uint64))


def ranges(rows: int) -> list[tuple[int, int]]:
    """Empty ranges, the first and the last row, the whole, and uneven blocks."""
    third = rows // 3
    return [(0, 0), (rows, rows), (third, third), (0, 1), (rows - 1, rows), (0, rows),
            (third, 2 * third + 1), (1, rows - 1)]


@pytest.mark.skipif(not REAL, reason=f"no real matrices in {MATRICES}")
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_matrices(path: Path) -> None:
    A = mmio.read(path)
    header = mmio.read_header(path)
    assert header.shape == A.shape
    for start, stop in ranges(A.shape[0]):
        assert_same_csr(mmio.read_rows(path, start, stop, chunk_size=1 << 16), A[start:stop])
    # A small chunk makes lines and runs of entries span chunk boundaries.
    start, stop = A.shape[0] // 4, A.shape[0] // 2
    assert_same_csr(mmio.read_rows(path, start, stop, chunk_size=4099), A[start:stop])


SYMMETRIC = {
    "symmetric": "%%MatrixMarket matrix coordinate real symmetric\n4 4 6\n1 1 1\n2 1 2\n"
                 "4 1 3\n3 3 4\n4 2 -5\n2 1 0.25\n",
    "upper-stored symmetric": "%%MatrixMarket matrix coordinate real symmetric\n4 4 3\n"
                              "1 4 3\n2 3 1.5\n4 4 9\n",
    "skew-symmetric": "%%MatrixMarket matrix coordinate real skew-symmetric\n4 4 3\n2 1 2\n"
                      "4 2 -5\n3 1 7\n",
    "pattern symmetric": "%%MatrixMarket matrix coordinate pattern symmetric\n4 4 4\n1 1\n"
                         "3 2\n4 1\n% c\n\n4 3\n",
    "integer general": "%%MatrixMarket matrix coordinate integer general\n3 5 4\n3 5 7\n"
                       "1 2 -3\n3 5 1\n2 2 0\n",
    "array": "%%MatrixMarket matrix array real general\n3 2\n1\n0\n-2.5\n4\n0\n6\n",
}


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("kind", SYMMETRIC, ids=list(SYMMETRIC))
def test_kinds_every_range(tmp_path: Path, kind: str, gz: bool) -> None:
    path = tmp_path / ("m.mtx.gz" if gz else "m.mtx")
    data = SYMMETRIC[kind].encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    A = mmio.read(path)
    rows = A.shape[0]
    for start in range(rows + 1):
        for stop in range(start, rows + 1):
            for chunk in (1, 7, 1 << 20):
                B = mmio.read_rows(path, start, stop, chunk_size=chunk)
                assert_same_csr(B, A[start:stop])


def test_symmetric_entry_lands_in_both_rows(tmp_path: Path) -> None:
    path = tmp_path / "s.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real skew-symmetric\n5 5 1\n5 2 3.5\n")
    assert mmio.read_rows(path, 1, 2).toarray().tolist() == [[0, 0, 0, 0, -3.5]]
    assert mmio.read_rows(path, 4, 5).toarray().tolist() == [[0, 3.5, 0, 0, 0]]
    assert mmio.read_rows(path, 2, 4).nnz == 0


def test_generated_with_duplicates(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    n = 20_000
    r, c = rng.integers(1, 301, n), rng.integers(1, 301, n)
    r, c = np.maximum(r, c), np.minimum(r, c)
    v = rng.standard_normal(n) * 10.0 ** rng.integers(-10, 10, n)
    lines = "".join(f"{i} {j} {x:.17g}\n" for i, j, x in zip(r, c, v, strict=True))
    path = tmp_path / "d.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real symmetric\n300 300 {n}\n{lines}")
    A = mmio.read(path)
    for start, stop in ranges(300):
        assert_same_csr(mmio.read_rows(path, start, stop, chunk_size=10_000), A[start:stop])


@pytest.mark.parametrize("fast", [True, False], ids=["fast", "validating"])
def test_both_chunk_parsers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool) -> None:
    used = []
    parse = reader.parse_canonical

    def spy(*args):
        result = parse(*args) if fast else None
        used.append(result is not None)
        return result

    monkeypatch.setattr(reader, "parse_canonical", spy)
    rng = np.random.default_rng(9)
    n = 5000
    r, c = rng.integers(1, 201, n), rng.integers(1, 201, n)
    r, c = np.maximum(r, c), np.minimum(r, c)
    keep = r != c
    r, c = r[keep], c[keep]
    v = rng.standard_normal(r.size)
    lines = "".join(f"{i} {j} {x:.17g}\n" for i, j, x in zip(r, c, v, strict=True))
    path = tmp_path / "k.mtx"
    path.write_text(f"%%MatrixMarket matrix coordinate real skew-symmetric\n200 200 {r.size}\n"
                    + lines)
    A = mmio.read(path)
    for start, stop in ((0, 200), (50, 51), (199, 200)):
        assert_same_csr(mmio.read_rows(path, start, stop, chunk_size=8192), A[start:stop])
    assert used and all(x == fast for x in used)


def test_bad_ranges(tmp_path: Path) -> None:
    path = tmp_path / "m.mtx"
    path.write_text("%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n")
    for start, stop in ((-1, 2), (2, 1), (0, 4)):
        with pytest.raises(ValueError, match=r"row range .* not within the 3 rows"):
            mmio.read_rows(path, start, stop)
    with pytest.raises(TypeError, match="start must be an integer"):
        mmio.read_rows(path, 0.5, 2)
    with pytest.raises(ValueError, match="chunk_size"):
        mmio.read_rows(path, 0, 2, chunk_size=0)
    assert mmio.read_rows(path, np.int64(0), np.int32(3)).shape == (3, 3)


@pytest.mark.parametrize("case", MANIFEST, ids=[row["file"] for row in MANIFEST])
def test_malformed_corpus(case: dict[str, str]) -> None:
    # The whole file is checked whatever the range: every rank of a distributed read fails.
    path = CORPUS / case["file"]
    low, _, high = case["line"].partition("-")
    with pytest.raises(MatrixFormatError) as info:
        mmio.read_rows(path, 0, 0, chunk_size=16)
    message = str(info.value)
    match = re.match(rf"{re.escape(str(path))}: line (\d+): ", message)
    assert match, message
    assert int(low) <= int(match.group(1)) <= int(high or low), message
    assert re.search(case["reason"], message), message


def test_memory_stays_bounded(tmp_path: Path) -> None:
    n, size = 120_000, 30_000
    rng = np.random.default_rng(7)
    A = sp.coo_matrix(
        (rng.standard_normal(n), (rng.integers(0, size, n), rng.integers(0, size, n))),
        shape=(size, size),
    ).tocsr()
    path = mmio.write(tmp_path / "big.mtx", A)  # about 5 MB of text

    def peak(fn) -> int:
        tracemalloc.start()
        try:
            fn()
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    rows = peak(lambda: mmio.read_rows(path, 500, 600, chunk_size=1 << 16))
    whole = peak(lambda: mmio.read(path))
    assert whole > 16 * n  # the measure sees the whole matrix's arrays
    assert rows < 2 << 20, f"read_rows held {rows} bytes"
    assert_same_csr(mmio.read_rows(path, 500, 600, chunk_size=1 << 16), A[500:600])


def test_read_header(tmp_path: Path) -> None:
    path = tmp_path / "h.mtx.gz"
    path.write_bytes(gzip.compress(
        b"%%MatrixMarket matrix coordinate Pattern SYMMETRIC\n% c\n\n7 7 3\n1 1\n2 1\n7 7\n"))
    h = mmio.read_header(path)
    assert (h.shape, h.nnz, h.entries) == ((7, 7), 3, 3)
    assert (h.format, h.field, h.symmetry) == ("coordinate", "pattern", "symmetric")
    assert (h.body_line, h.tokens_per_entry) == (5, 2)
    with pytest.raises(MatrixFormatError, match="line 1: .*[Hh]ermitian"):
        path.write_text("%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n")
        mmio.read_header(path)


def test_read_header_does_not_read_the_body(tmp_path: Path) -> None:
    path = tmp_path / "b.mtx"
    path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n2 2 1\n\x00garbage")
    assert mmio.read_header(path).shape == (2, 2)
    with pytest.raises(MatrixFormatError, match="line 3: invalid control byte"):
        mmio.read(path)
