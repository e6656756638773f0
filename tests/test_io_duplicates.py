"""The memory bound of a CSR read (issue 46) where duplicates come late: a matrix written two or
three times in one file, duplicates interleaved with new entries after many distinct ones, a
few positions repeated after many distinct ones, a symmetric file that lists both triangles.

Each read must peak at most at twice the arrays it returns plus a slack (tracemalloc), and sum
each position's values in file order. One file at the scale of :func:`clspmv.io.read` (its
2**18 entries before the first fold, 64 MiB of slack); the others through the same collector
at 1/64 of that scale (2**12 entries, 1 MiB of slack, pieces of 64 KiB) so that they take a
second each while still holding far more duplicates than the slack.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv import io as mmio
from clspmv.io import entries, held, reader

SCALED_FOLD = 1 << 12
SCALED_CHUNK = 1 << 16
SCALED_SLACK = 1 << 20
_VALUES = [b" 1.0e+16", b"-1.0e+16", b" 1.0e+00", b" 3.0e+00", b"-0.0e+00", b" 2.5e-16",
           b" 1.0e-01", b"-7.0e-01"]
"""Values of one width, whose sums depend on their order."""


def _digits(numbers: np.ndarray, width: int) -> np.ndarray:
    """``numbers`` (non-negative, below 10**width) as columns of zero-padded ASCII digits."""
    return np.stack([numbers // 10**k % 10 + ord("0") for k in range(width - 1, -1, -1)],
                    axis=1).astype(np.uint8)


def _body(rows: np.ndarray, cols: np.ndarray, values: np.ndarray | None) -> bytes:
    """Data lines ``row col [value]`` (1-based, zero-padded; ``values`` index :data:`_VALUES`)
    built with numpy: millions of lines in a fraction of a second."""
    parts = [_digits(rows + 1, 7), np.full((rows.size, 1), ord(" "), np.uint8),
             _digits(cols + 1, 7)]
    if values is not None:
        table = np.frombuffer(b"".join(_VALUES), np.uint8).reshape(len(_VALUES), -1)
        parts += [np.full((rows.size, 1), ord(" "), np.uint8), table[values]]
    parts.append(np.full((rows.size, 1), ord("\n"), np.uint8))
    return np.hstack(parts).tobytes()


def _file(tmp_path: Path, shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray,
          values: np.ndarray | None = None, symmetry: str = "general") -> Path:
    field = "pattern" if values is None else "real"
    head = (f"%%MatrixMarket matrix coordinate {field} {symmetry}\n"
            f"{shape[0]} {shape[1]} {rows.size}\n").encode()
    path = tmp_path / "late.mtx"
    path.write_bytes(head + _body(rows, cols, values))
    return path


def _distinct(count: int, shape: tuple[int, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` distinct positions in a scattered order (a multiplicative walk)."""
    size = shape[0] * shape[1]
    keys = np.arange(1, count + 1, dtype=np.int64) * 2_654_435_761 % size
    assert np.unique(keys).size == count
    keys = np.random.default_rng(seed).permutation(keys)
    return keys // shape[1], keys % shape[1]


def _expected(shape: tuple[int, int], rows: np.ndarray, cols: np.ndarray,
              values: np.ndarray | None) -> sp.csr_matrix:
    """The matrix whose every value is its position's values added one at a time in file
    order, from -0.0 (as Python adds them)."""
    data = (np.ones(rows.size) if values is None
            else np.array([float(v) for v in _VALUES])[values])
    keys = rows.astype(np.int64) * shape[1] + cols
    positions, slot = np.unique(keys, return_inverse=True)
    sums = np.full(positions.size, -0.0)
    np.add.at(sums, slot, data)  # unbuffered: in order, one at a time
    return sp.csr_matrix((sums, (positions // shape[1], positions % shape[1])), shape=shape)


def _peak(read) -> tuple[sp.csr_matrix, int]:
    tracemalloc.start()
    try:
        A = read()
        return A, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _check(A: sp.csr_matrix, peak: int, slack: int, expected: sp.csr_matrix) -> None:
    returned = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    bound = 2 * returned + slack
    assert peak <= bound, f"peak {peak} > bound {bound} ({peak / bound:.2f} of it)"
    assert A.shape == expected.shape
    assert np.array_equal(A.indptr, expected.indptr)
    assert np.array_equal(A.indices, expected.indices)
    assert np.array_equal(A.data.view(np.uint64), expected.data.view(np.uint64))


@pytest.mark.slow
def test_matrix_written_twice_within_the_bound(tmp_path: Path) -> None:
    # The case at full scale: 3 million distinct positions, then the same again. Held
    # as read (the entries stayed unfolded once the first 2**18 showed no duplicates) the read
    # peaked at 1.2 times the bound.
    shape = (1000, 10_000)
    rows, cols = _distinct(3_000_000, shape, seed=1)
    path = _file(tmp_path, shape, np.tile(rows, 2), np.tile(cols, 2))
    del rows, cols
    A, peak = _peak(lambda: mmio.read(path))
    returned = A.data.nbytes + A.indices.nbytes + A.indptr.nbytes
    assert peak <= 2 * returned + (64 << 20), (peak, returned)
    assert A.nnz == 3_000_000 and np.all(A.data == 2.0)


def _written(times: int, tmp_path: Path):
    shape = (400, 2000)
    rows, cols = _distinct(150_000, shape, seed=times)
    values = np.random.default_rng(times).integers(0, len(_VALUES), rows.size * times)
    return shape, np.tile(rows, times), np.tile(cols, times), values


def _interleaved(tmp_path: Path):
    # 60,000 distinct positions, then 300,000 lines: every fourth a new position, the others
    # repeating earlier ones.
    shape = (400, 2000)
    rows, cols = _distinct(135_000, shape, seed=5)
    rng = np.random.default_rng(5)
    late = np.arange(300_000)
    fresh = late % 4 == 0
    pick = np.where(fresh, 60_000 + late // 4, rng.integers(0, 60_000 + late // 4))
    order = np.concatenate([np.arange(60_000), pick])
    return shape, rows[order], cols[order], rng.integers(0, len(_VALUES), order.size)


def _few_repeated(tmp_path: Path):
    # 60,000 distinct positions, then 300,000 lines on 10 of them.
    shape = (400, 2000)
    rows, cols = _distinct(60_000, shape, seed=6)
    rng = np.random.default_rng(6)
    order = np.concatenate([np.arange(60_000), rng.integers(0, 10, 300_000) * 997])
    return shape, rows[order], cols[order], rng.integers(0, len(_VALUES), order.size)


@pytest.mark.parametrize("case", ["twice", "three times", "interleaved late", "few repeated"])
def test_late_duplicates_within_the_bound(tmp_path: Path, case: str) -> None:
    # Each case holds over 2 MiB of duplicates (16 bytes a line) that only start after the
    # first fold, so that a collector that stopped folding there peaks far above the bound.
    make = {"twice": lambda p: _written(2, p), "three times": lambda p: _written(3, p),
            "interleaved late": _interleaved, "few repeated": _few_repeated}[case]
    shape, rows, cols, values = make(tmp_path)
    path = _file(tmp_path, shape, rows, cols, values)
    expected = _expected(shape, rows, cols, values)
    assert 16 * (rows.size - expected.nnz) > 2 * SCALED_SLACK
    A, peak = _peak(lambda: reader.collect(path, chunk_size=SCALED_CHUNK,
                                           fold_at=SCALED_FOLD).csr())
    _check(A, peak, SCALED_SLACK, expected)


def test_symmetric_file_of_both_triangles_within_the_bound(tmp_path: Path) -> None:
    # Each off-diagonal entry listed as (i, j) and as (j, i): every position gets the file's
    # own entry and a mirrored one, twice the entries held for the positions returned.
    shape = (1000, 1000)
    rows, cols = _distinct(150_000, shape, seed=7)
    lower = rows > cols
    rows, cols = rows[lower], cols[lower]
    both_rows, both_cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
    path = _file(tmp_path, shape, both_rows, both_cols, symmetry="symmetric")
    expected = _expected(shape, np.concatenate([both_rows, both_cols]),
                         np.concatenate([both_cols, both_rows]), None)
    A, peak = _peak(lambda: reader.collect(path, chunk_size=SCALED_CHUNK,
                                           fold_at=SCALED_FOLD).csr())
    _check(A, peak, SCALED_SLACK, expected)
    assert np.all(A.data == 2.0)


@pytest.mark.parametrize("times", [1, 2])
@pytest.mark.parametrize("case", ["column pointer fits", "too wide", "symmetric"])
def test_column_major_file_within_the_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            times: int, case: str) -> None:
    # A file written column by column (as SuiteSparse writes them), once or twice: a general
    # one folded in column-major keys (its entries appended, the result transposed once) where
    # the CSC column pointer is not much longer than the row pointer, else (and a symmetric
    # one, whose mirrors come row by row) in row-major keys; the same sums, bit for bit,
    # within the bound either way.
    if case == "too wide":
        monkeypatch.setattr(entries, "COLUMN_POINTER_EXTRA", 1000)
    orders = []
    init = held.FoldedEntries.__init__
    monkeypatch.setattr(held.FoldedEntries, "__init__", lambda self, shape, column_major=False:
                        orders.append(column_major) or init(self, shape, column_major=column_major))
    symmetry = "symmetric" if case == "symmetric" else "general"
    shape = (1000, 1000) if case == "symmetric" else (400, 2000)
    rows, cols = _distinct(150_000, shape, seed=8)
    if case == "symmetric":
        rows, cols = np.maximum(rows, cols), np.minimum(rows, cols)  # the lower triangle
        keep = np.unique(rows.astype(np.int64) * shape[1] + cols, return_index=True)[1]
        rows, cols = rows[keep], cols[keep]
    order = np.lexsort((rows, cols))
    rows, cols = np.tile(rows[order], times), np.tile(cols[order], times)
    values = np.random.default_rng(8).integers(0, len(_VALUES), rows.size)
    path = _file(tmp_path, shape, rows, cols, values, symmetry)
    if case == "symmetric":
        off = rows != cols
        rows, cols = np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]])
        values = np.concatenate([values, values[off]])
    expected = _expected(shape, rows, cols, values)
    A, peak = _peak(lambda: reader.collect(path, chunk_size=SCALED_CHUNK,
                                           fold_at=SCALED_FOLD).csr())
    _check(A, peak, SCALED_SLACK, expected)
    assert orders == [case == "column pointer fits"]
    assert A.has_canonical_format
    rows_read = reader.collect(path, rows=lambda header: (100, 300), chunk_size=SCALED_CHUNK,
                               fold_at=SCALED_FOLD).csr()
    _check(rows_read, 0, SCALED_SLACK, expected[100:300])
