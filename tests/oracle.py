"""The test oracle: scipy on the same (cast) values in a wider type, and the per-row error bound.

The reference is ``alpha * A @ x + beta * y0`` computed by scipy on the values rounded to the
device dtype, in ``np.longdouble`` where that has a wider range than float64 (x86: 80-bit), else
in float64. For row i with len_i stored entries the bound is

    |y_i - ref_i| <= C (len_i + 1) (eps mag_i + tiny) + C flush_i

    mag_i   = |alpha| (|A| |x|)_i + |beta| |y0_i|
    flush_i = |alpha| (|A_sub| |x| + |A| |x_sub|)_i + |beta| |y0_sub_i|
              (+ |alpha| (|A| |x|)_i if alpha is subnormal, + |beta y0_i| if beta is)

where A_sub, x_sub, y0_sub keep only the subnormal values: flush_i is what reading subnormal
inputs as zero can change.

with eps and tiny the machine epsilon and smallest normal number of the device dtype and C = 2.
The ``tiny`` term covers results and partial sums flushed to zero; the ``flush`` term covers
subnormal inputs flushed to zero (NVIDIA flushes float32 subnormals by default; it is zero where
no input is subnormal).

Non-finite values:

* A row may overflow when the finite inputs alone can carry a sum or product past the dtype's
  largest value: ``(|A_fin| |x_fin|)_i > max`` or ``|alpha| (|A_fin| |x_fin|)_i + |beta| |y0_fin_i|
  > max`` (``_fin``: the finite values only; the un-scaled sum counts because kernels scale after
  summing). Summation order then decides whether a partial sum overflows, so such a row accepts
  any ±Inf or NaN, or a finite value within the bound of a finite reference.
* Every other row: where the reference is NaN the result must be NaN; where it is ±Inf, the
  same Inf; elsewhere finite within the bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

C = 2.0

WIDE = np.longdouble if np.finfo(np.longdouble).max > np.finfo(np.float64).max else np.float64
"""The type the reference is computed in: wider than any device dtype where the platform allows."""


def oracle_matrix(fmt: str, csr: sp.csr_matrix, dtype: np.dtype | None = None) -> sp.csr_matrix:
    """The matrix the product of ``fmt`` must match.

    DIA cannot tell a stored zero from a gap in a diagonal: its oracle drops explicit zeros,
    including values that become zero when rounded to ``dtype``.
    """
    if fmt == "dia":
        csr = sp.csr_matrix(csr, copy=True)
        if dtype is not None:
            with np.errstate(all="ignore"):
                csr = csr.astype(dtype)
        csr.eliminate_zeros()
    return csr


@dataclass
class Reference:
    """The reference product and what each row may differ by."""

    y: np.ndarray
    """alpha A x + beta y0 (wide type)."""
    bound: np.ndarray
    """Largest accepted |y - ref| per row (wide type)."""
    may_overflow: np.ndarray
    """Rows whose finite inputs can overflow the dtype: any Inf or NaN is accepted there."""


def _cast(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    with np.errstate(all="ignore"):  # values beyond the dtype's range become Inf, as on the device
        return np.asarray(values).astype(dtype).astype(WIDE)


def _subnormal(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    mag = np.abs(values)
    return (mag > 0) & (mag < np.finfo(dtype).tiny)


def reference(A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype, alpha: float = 1.0,
              beta: float = 0.0, y0: np.ndarray | None = None) -> Reference:
    """The reference product of ``A`` in ``dtype`` and the accepted error per row."""
    dtype = np.dtype(dtype)
    A_w = sp.csr_matrix(A, copy=True)
    A_w.data = _cast(A_w.data, dtype)
    x_w = _cast(x, dtype)
    a = _cast(np.array([alpha]), dtype)[0]
    b = _cast(np.array([beta]), dtype)[0]
    use_y = b != 0 and y0 is not None
    y_w = _cast(y0, dtype) if use_y else np.zeros(A_w.shape[0], WIDE)
    finfo = np.finfo(dtype)

    def times(values: np.ndarray, vector: np.ndarray) -> np.ndarray:
        M = A_w.copy()
        M.data = values
        return M @ vector

    with np.errstate(all="ignore"):
        ref = a * (A_w @ x_w) + (b * y_w if use_y else 0)
        abs_A, abs_x, abs_y = np.abs(A_w.data), np.abs(x_w), np.abs(y_w)
        mag = abs(a) * times(abs_A, abs_x) + abs(b) * abs_y
        # overflow: from the finite inputs only, so that an Inf input keeps its exact rule
        fin_A = np.where(np.isfinite(A_w.data), abs_A, 0)
        fin_sum = times(fin_A, np.where(np.isfinite(x_w), abs_x, 0))
        fin_mag = abs(a) * fin_sum + abs(b) * np.where(np.isfinite(y_w), abs_y, 0)
        may_overflow = (fin_sum > finfo.max) | (fin_mag > finfo.max)
        # subnormal inputs read as zero
        flush = abs(a) * (times(np.where(_subnormal(A_w.data, dtype), abs_A, 0), abs_x)
                          + times(abs_A, np.where(_subnormal(x_w, dtype), abs_x, 0)))
        flush = flush + abs(b) * np.where(_subnormal(y_w, dtype), abs_y, 0)
        if _subnormal(np.array([a]), dtype)[0]:
            flush = flush + abs(a) * times(abs_A, abs_x)
        if _subnormal(np.array([b]), dtype)[0]:
            flush = flush + abs(b) * abs_y
        lengths = np.diff(A_w.indptr) + 1
        bound = C * lengths * (finfo.eps * mag + finfo.tiny) + C * flush
    return Reference(np.asarray(ref, WIDE), np.asarray(bound, WIDE), np.asarray(may_overflow))


def assert_matches(y: np.ndarray, A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype,
                   alpha: float = 1.0, beta: float = 0.0, y0: np.ndarray | None = None) -> None:
    """Assert ``y`` is the product within the bound, with the non-finite rules of the module."""
    r = reference(A, x, dtype, alpha, beta, y0)
    y = np.asarray(y).astype(WIDE)
    assert y.shape == r.y.shape, f"shape {y.shape} != {r.y.shape}"
    strict = ~r.may_overflow
    nan = np.isnan(r.y)
    bad = np.flatnonzero(strict & (nan != np.isnan(y)))
    assert bad.size == 0, f"NaN mismatch in rows {bad[:10]}: y={y[bad[:10]]}, ref={r.y[bad[:10]]}"
    inf = np.isinf(r.y)
    bad = np.flatnonzero(strict & inf & (y != r.y))
    assert bad.size == 0, f"Inf mismatch in rows {bad[:10]}: y={y[bad[:10]]}, ref={r.y[bad[:10]]}"
    # Finite results must be within the bound of a finite reference (overflow rows included).
    finite_ref = np.isfinite(r.y)
    check = (strict & finite_ref) | (r.may_overflow & np.isfinite(y))
    with np.errstate(invalid="ignore"):
        err = np.abs(y - r.y)
    bad = np.flatnonzero(check & ~(err <= r.bound))
    assert bad.size == 0, (
        f"{bad.size} rows exceed the bound, e.g. rows {bad[:5]}: y={y[bad[:5]]}, "
        f"ref={r.y[bad[:5]]}, bound={r.bound[bad[:5]]}, may overflow={r.may_overflow[bad[:5]]}"
    )
