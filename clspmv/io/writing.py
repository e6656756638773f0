"""Matrix Market writing: ``coordinate real general`` or ``symmetric`` files."""

from __future__ import annotations

import gzip
import os
import pathlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import scipy.sparse as sp

_WRITE_CHUNK = 1 << 16  # entries formatted per string operation in write()


def _canonical_csr(A: Any) -> sp.csr_matrix:
    """``A`` (any scipy.sparse matrix or array-like) as a float64 CSR matrix, duplicates summed."""
    if sp.issparse(A):
        if A.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {A.ndim} dimensions")
        if np.issubdtype(A.dtype, np.complexfloating):
            raise ValueError("complex matrices are not supported")
        csr = sp.csr_matrix(A, dtype=np.float64, copy=True)
    else:
        dense = np.asarray(A)
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {dense.ndim} dimensions")
        if np.iscomplexobj(dense):
            raise ValueError("complex matrices are not supported")
        csr = sp.csr_matrix(dense.astype(np.float64, copy=False))
    csr.sum_duplicates()
    return csr


def _is_symmetric(A: sp.csr_matrix) -> bool:
    """Whether ``A`` equals its transpose (numerically; explicit zeros are ignored, NaN == NaN)."""
    if A.shape[0] != A.shape[1]:
        return False
    B = A.copy()
    B.eliminate_zeros()
    T = B.T.tocsr()
    T.sum_duplicates()
    return (
        np.array_equal(B.indptr, T.indptr)
        and np.array_equal(B.indices, T.indices)
        and np.array_equal(B.data, T.data, equal_nan=True)
    )


def _format_entries(
    rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, precision: int
) -> Iterator[bytes]:
    """The data lines ``"row col value"`` (1-based), a chunk of entries at a time."""
    line = f"%d %d %.{precision}g\n"
    for lo in range(0, vals.size, _WRITE_CHUNK):
        hi = min(lo + _WRITE_CHUNK, vals.size)
        flat: list[Any] = [None] * (3 * (hi - lo))
        flat[0::3] = (rows[lo:hi] + 1).tolist()
        flat[1::3] = (cols[lo:hi] + 1).tolist()
        flat[2::3] = vals[lo:hi].tolist()
        yield ((line * (hi - lo)) % tuple(flat)).encode("ascii")


def write(
    path: str | os.PathLike[str],
    A: Any,
    *,
    symmetry: str = "general",
    comment: str | None = None,
    precision: int = 17,
) -> pathlib.Path:
    """Write a matrix as a Matrix Market ``coordinate real`` file.

    Args:
        path: destination; gzip-compressed when it ends with ``.gz``.
        A: any scipy.sparse matrix or array, or a dense 2-D array-like, real-valued.
            Duplicates are summed before writing; explicitly stored zeros are written.
        symmetry: ``"general"`` writes every entry; ``"symmetric"`` writes the lower
            triangle only, after checking that ``A`` equals its transpose.
        comment: text written as ``%`` comment lines after the banner (may span lines).
        precision: significant digits of the values; the default 17 makes
            ``read(write(path, A))`` reproduce float64 values exactly.

    Returns:
        ``path`` as a :class:`pathlib.Path`.

    Raises:
        ValueError: ``A`` is not 2-D, is complex, is not symmetric (with
            ``symmetry="symmetric"``), or an argument is invalid.
    """
    if symmetry not in ("general", "symmetric"):
        raise ValueError(f"symmetry must be 'general' or 'symmetric', not {symmetry!r}")
    if isinstance(precision, bool) or not isinstance(precision, (int, np.integer)) or precision < 1:
        raise ValueError(f"precision must be a positive integer, not {precision!r}")
    csr = _canonical_csr(A)
    if symmetry == "symmetric":
        if csr.shape[0] != csr.shape[1]:
            raise ValueError(
                f"a symmetric matrix must be square, not {csr.shape[0]}x{csr.shape[1]}"
            )
        if not _is_symmetric(csr):
            raise ValueError("the matrix is not symmetric; write it with symmetry='general'")
        csr = sp.tril(csr, format="csr")
    coo = csr.tocoo()

    header = [f"%%MatrixMarket matrix coordinate real {symmetry}"]
    if comment is not None:
        header += [
            f"%{text}" if text.startswith(" ") or not text else f"% {text}"
            for text in comment.splitlines()
        ]
    header.append(f"{csr.shape[0]} {csr.shape[1]} {coo.nnz}")

    path = pathlib.Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "wb") as fh:
        fh.write(("\n".join(header) + "\n").encode("utf-8"))
        for chunk in _format_entries(
            coo.row.astype(np.int64), coo.col.astype(np.int64), coo.data, int(precision)
        ):
            fh.write(chunk)
    return path
