"""The test oracle: scipy in float64 on the same (cast) values, and the per-row error bound.

For row i with len_i stored entries the bound is

    |y_i - ref_i| <= C (len_i + 1) (eps (|alpha| (|A| |x|)_i + |beta| |y0_i|) + tiny)

with eps and tiny the machine epsilon and smallest normal number of the device dtype and C = 2.
Where the reference is NaN the result must be NaN; where it is +-Inf it must be the same Inf.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

C = 2.0


def reference(A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype, alpha: float = 1.0,
              beta: float = 0.0, y0: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(reference y, error bound per row), both float64."""
    dtype = np.dtype(dtype)
    A64 = sp.csr_matrix(A).astype(dtype).astype(np.float64)
    x64 = np.asarray(x).astype(dtype).astype(np.float64)
    a = float(dtype.type(alpha))
    b = float(dtype.type(beta))
    with np.errstate(all="ignore"):
        ref = a * (A64 @ x64)
        mag = abs(a) * (abs(A64) @ np.abs(x64))
        if b != 0 and y0 is not None:
            y64 = np.asarray(y0).astype(dtype).astype(np.float64)
            ref = ref + b * y64
            mag = mag + abs(b) * np.abs(y64)
    finfo = np.finfo(dtype)
    lengths = np.diff(A64.indptr) + 1
    bound = C * lengths * (finfo.eps * mag + finfo.tiny)
    return ref, bound


def oracle_matrix(fmt: str, csr: sp.csr_matrix) -> sp.csr_matrix:
    """DIA cannot tell a stored zero from a gap in a diagonal: its oracle drops explicit zeros."""
    if fmt == "dia":
        csr = csr.copy()
        csr.eliminate_zeros()
    return csr


def assert_matches(y: np.ndarray, A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype,
                   alpha: float = 1.0, beta: float = 0.0, y0: np.ndarray | None = None) -> None:
    """Assert ``y`` is the product within the bound, NaN/Inf where scipy has them."""
    ref, bound = reference(A, x, dtype, alpha, beta, y0)
    y = np.asarray(y, dtype=np.float64)
    assert y.shape == ref.shape, f"shape {y.shape} != {ref.shape}"
    nan = np.isnan(ref)
    bad = np.flatnonzero(nan != np.isnan(y))
    assert bad.size == 0, f"NaN mismatch in rows {bad[:10]}: y={y[bad[:10]]}, ref={ref[bad[:10]]}"
    inf = np.isinf(ref)
    bad = np.flatnonzero(inf & (y != ref))
    assert bad.size == 0, f"Inf mismatch in rows {bad[:10]}: y={y[bad[:10]]}, ref={ref[bad[:10]]}"
    fin = ~(nan | inf)
    with np.errstate(invalid="ignore"):
        err = np.abs(y - ref)
    bad = np.flatnonzero(fin & ~(err <= bound))
    assert bad.size == 0, (
        f"{bad.size} rows exceed the bound, e.g. rows {bad[:5]}: y={y[bad[:5]]}, "
        f"ref={ref[bad[:5]]}, bound={bound[bad[:5]]}"
    )
