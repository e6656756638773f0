"""Formats as blocks of a larger matrix: row blocks writing their own rows of one y
(``row_offset``), column-mapped parts reading a full-length x (``column_map``), transposed block
products, alpha/beta on a block's rows only; every format, both dtypes, against scipy under the
per-row bound of ``oracle.py``."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES

from oracle import assert_matches, oracle_matrix

FORMATS = list(clspmv.FORMATS)
ROWS, COLS = 96, 70


def matrix(rows: int = ROWS, cols: int = COLS, seed: int = 0) -> sp.csr_matrix:
    """Rows of uneven lengths (some empty, one long) without explicit zeros."""
    rng = np.random.default_rng(seed)
    A = sp.random(rows, cols, density=0.08, format="lil", random_state=seed)
    A[rows // 3, :] = rng.standard_normal(cols)  # one full row
    A[rows // 2, :] = 0
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    return A


def cuts(n: int, parts: int) -> list[int]:
    return [n * i // parts for i in range(parts + 1)]


def vector(n: int, seed: int, dtype: np.dtype) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(dtype)


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-1.5, 2.0)])
def test_block_writes_its_rows_only(fmt: str, dtype: np.dtype, device, alpha: float,
                                    beta: float) -> None:
    A = matrix()
    r0, r1 = 30, 75
    block = A[r0:r1]
    M = clspmv.DeviceMatrix.from_scipy(block, format=fmt, device=device, dtype=dtype)
    x = vector(COLS, 1, dtype)
    y0 = vector(ROWS, 2, dtype)
    y = np.full(ROWS, np.nan, dtype) if beta == 0 else y0.copy()
    out = M.matvec(x, y, alpha=alpha, beta=beta, row_offset=r0)
    assert out is y
    outside = np.r_[0:r0, r1:ROWS]
    if beta == 0:
        assert np.isnan(y[outside]).all()  # beta = 0 never reads y; rows outside stay untouched
    else:
        np.testing.assert_array_equal(y[outside], y0[outside])
    ref = oracle_matrix(fmt, block, dtype)
    assert_matches(y[r0:r1], ref, x, dtype, alpha, beta, y0[r0:r1] if beta else None)


def test_matrix_assembled_from_row_blocks_of_every_format(dtype: np.dtype, device) -> None:
    """One y from a block of every format (rotated, so neighbours differ), forward and
    transposed, on the host and on device arrays."""
    A = matrix(130, COLS, seed=3)
    bounds = cuts(A.shape[0], len(FORMATS))
    blocks = []
    for i, fmt in enumerate(FORMATS):
        part = A[bounds[i]:bounds[i + 1]]
        blocks.append((bounds[i], fmt, part, clspmv.DeviceMatrix.from_scipy(
            part, format=fmt, device=device, dtype=dtype)))
    oracle = sp.vstack([oracle_matrix(f, p, dtype) for _, f, p, _ in blocks]).tocsr()
    x, y0 = vector(COLS, 4, dtype), vector(A.shape[0], 5, dtype)
    y = y0.copy()
    for r0, _, _, M in blocks:
        M.matvec(x, y, alpha=0.5, beta=-1.0, row_offset=r0)
    assert_matches(y, oracle, x, dtype, 0.5, -1.0, y0)
    # the same on device arrays
    queue = device.queue
    y_dev = cl_array.to_device(queue, y0)
    x_dev = cl_array.to_device(queue, x)
    for r0, _, _, M in blocks:
        assert M.matvec(x_dev, y_dev, alpha=0.5, beta=-1.0, row_offset=r0) is y_dev
    assert_matches(y_dev.get(), oracle, x, dtype, 0.5, -1.0, y0)
    # transposed: y = alpha A^T x + beta y0, the first block applies beta, the others add
    xt, yt0 = vector(A.shape[0], 6, dtype), vector(COLS, 7, dtype)
    if dtype == np.float64 and not device.int64_atomics and any(
            FORMAT_CLASSES[f].transpose_atomics for f in FORMATS):
        pytest.skip(f"{device.name} has no 64-bit atomics for the transposed blocks")
    yt = yt0.copy()
    for i, (r0, _, _, M) in enumerate(blocks):
        M.rmatvec(xt, yt, alpha=2.0, beta=3.0 if i == 0 else 1.0, row_offset=r0)
    assert_matches(yt, oracle.T.tocsr(), xt, dtype, 2.0, 3.0, yt0)


def local_and_remote(seed: int = 8) -> tuple[sp.csr_matrix, int, int, np.ndarray]:
    """A strip of 40 rows of a 40 x 200 matrix whose own columns are 80..119 (the local part)
    plus a few scattered columns elsewhere (the non-local part)."""
    rng = np.random.default_rng(seed)
    m, n, c0 = 40, 200, 80
    local = sp.random(m, m, density=0.15, random_state=seed) + sp.eye(m)
    remote_cols = np.sort(rng.choice(np.r_[0:c0, c0 + m:n], 25, replace=False))
    remote = sp.random(m, remote_cols.size, density=0.2, random_state=seed + 1)
    B = sp.lil_matrix((m, n))
    B[:, c0:c0 + m] = local
    B[:, remote_cols] = remote
    B = sp.csr_matrix(B)
    B.eliminate_zeros()
    return B, c0, m, remote_cols


@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (0.5, -2.0)])
def test_local_plus_column_mapped_remote_part(fmt: str, dtype: np.dtype, device, alpha: float,
                                              beta: float) -> None:
    """y = alpha (local + remote) x + beta y: the local part on its own columns, the remote part
    in compact columns with a column map, both reading one full-length x."""
    B, c0, m, remote_cols = local_and_remote()
    n = B.shape[1]
    other = FORMATS[(FORMATS.index(fmt) + 5) % len(FORMATS)]
    local = clspmv.DeviceMatrix.from_scipy(B[:, c0:c0 + m], format=other, device=device,
                                           dtype=dtype, column_map=np.arange(c0, c0 + m),
                                           n_cols=n)
    remote = clspmv.DeviceMatrix.from_scipy(B[:, remote_cols], format=fmt, device=device,
                                            dtype=dtype, column_map=remote_cols, n_cols=n)
    assert remote.shape == local.shape == (m, n)
    x, y0 = vector(n, 9, dtype), vector(m, 10, dtype)
    y = local.matvec(x, y0.copy(), alpha=alpha, beta=beta)
    remote.matvec(x, y, alpha=alpha, beta=1.0)
    full = sp.lil_matrix((m, n))
    full[:, c0:c0 + m] = oracle_matrix(other, B[:, c0:c0 + m], dtype)
    full[:, remote_cols] = oracle_matrix(fmt, B[:, remote_cols], dtype)
    assert_matches(y, sp.csr_matrix(full), x, dtype, alpha, beta, y0)
    # the stored matrix reads back in the global numbering
    back = remote.to_scipy()
    assert back.shape == (m, n)
    expected = np.zeros((m, n))
    expected[:, remote_cols] = B[:, remote_cols].toarray()
    np.testing.assert_allclose(back.toarray(), expected, rtol=1e-6)


def test_transposed_column_mapped_block_in_longer_vectors(fmt: str, dtype: np.dtype,
                                                          device) -> None:
    """A^T of a remote part that is rows 10..49 of a taller matrix: reads x[10:50], writes (and
    scales) y[column_map] only; the other entries of y keep their NaN."""
    if dtype == np.float64 and FORMAT_CLASSES[fmt].transpose_atomics \
            and not device.int64_atomics:
        pytest.skip(f"{device.name} has no 64-bit atomics")
    B, _, m, remote_cols = local_and_remote(seed=11)
    n = B.shape[1]
    part = B[:, remote_cols]
    M = clspmv.DeviceMatrix.from_scipy(part, format=fmt, device=device, dtype=dtype,
                                       column_map=remote_cols, n_cols=n)
    x = vector(m + 30, 12, dtype)
    y0 = vector(n, 13, dtype)
    y = np.full(n, np.nan, dtype)
    y[remote_cols] = y0[remote_cols]
    M.rmatvec(x, y, alpha=1.5, beta=-0.5, row_offset=10)
    others = np.setdiff1d(np.arange(n), remote_cols)
    assert np.isnan(y[others]).all()
    ref = oracle_matrix(fmt, part, dtype).T.tocsr()
    assert_matches(y[remote_cols], ref, x[10:10 + m], dtype, 1.5, -0.5, y0[remote_cols])
    fresh = M.rmatvec(x[10:10 + m])  # a new y: zero outside the map
    assert fresh.shape == (n,) and not fresh[others].any()


@pytest.mark.parametrize("order", ["C", "F"])
def test_matmat_rows_of_a_taller_y(fmt: str, device, order: str) -> None:
    """Several right-hand sides into rows 20..59 of a taller Y: the block kernels and the
    column-by-column fallback, with a column map."""
    dtype = np.dtype(np.float32)
    B, _, m, remote_cols = local_and_remote(seed=14)
    n = B.shape[1]
    part = B[:, remote_cols]
    M = clspmv.DeviceMatrix.from_scipy(part, format=fmt, device=device, dtype=dtype,
                                       column_map=remote_cols, n_cols=n)
    X = np.asarray(np.random.default_rng(15).standard_normal((n, 5)), dtype, order=order)
    Y0 = np.asarray(np.random.default_rng(16).standard_normal((m + 30, 5)), dtype, order=order)
    Y = Y0.copy(order=order)
    M.matmat(X, Y, alpha=2.0, beta=0.5, row_offset=20)
    np.testing.assert_array_equal(Y[:20], Y0[:20])
    np.testing.assert_array_equal(Y[20 + m:], Y0[20 + m:])
    ref = oracle_matrix(fmt, part, dtype)
    for j in range(5):
        assert_matches(Y[20:20 + m, j], ref, X[remote_cols, j], dtype, 2.0, 0.5,
                       Y0[20:20 + m, j])


def test_block_argument_errors(device) -> None:
    A = matrix(20, 10)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device)
    x = np.ones(10)
    with pytest.raises(ValueError, match=r"row_offset needs y: the longer vector"):
        M.matvec(x, row_offset=3)
    with pytest.raises(ValueError, match=r"y has 22 rows; the block's 20 rows from row_offset 3 "
                                         r"need at least 23"):
        M.matvec(x, np.zeros(22), row_offset=3)
    with pytest.raises(ValueError, match=r"row_offset must be an int >= 0, got -1"):
        M.matvec(x, np.zeros(30), row_offset=-1)
    with pytest.raises(ValueError, match=r"method='atomic' or 'auto'"):
        M.rmatvec(np.ones(30), row_offset=5, method="transpose")
    C = clspmv.DeviceMatrix.from_scipy(sp.csc_matrix(A), device=device)
    with pytest.raises(ValueError, match=r"row_offset needs CSR storage"):
        C.matvec(x, np.zeros(30), row_offset=1)
    with pytest.raises(ValueError, match=r"column_map needs a CSR"):
        clspmv.DeviceMatrix.from_scipy(sp.csc_matrix(A), device=device, column_map=np.arange(10))
    with pytest.raises(ValueError, match=r"must not repeat a column"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, column_map=np.r_[0:9, 3])
    with pytest.raises(ValueError, match=r"column_map must hold 10 non-negative"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, column_map=np.arange(9))
    with pytest.raises(ValueError, match=r"n_cols must be an int of at least 15"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, column_map=np.arange(5, 15), n_cols=12)
    mapped = clspmv.DeviceMatrix.from_scipy(A, device=device, column_map=np.arange(5, 15))
    with pytest.raises(ValueError, match=r"no transposed copy"):
        mapped.prepare_transpose()
    with pytest.raises(ValueError, match=r"x has shape \(10,\), expected \(15,\)"):
        mapped.matvec(x)
