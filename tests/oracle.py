"""The test oracle: scipy on the same (cast) values in a wider type, and the per-row error bound.

The reference is ``alpha * A @ x + beta * y0`` computed by scipy on the values rounded to the
device dtype, in ``np.longdouble`` where that has a wider range than float64 (x86: 80-bit), else
in float64. For row i with len_i stored entries the bound is

    |y_i - ref_i| <= C (len_i + 1) (eps mag_i + tiny),  mag_i = |alpha| (|A| |x|)_i + |beta| |y0_i|

with eps and tiny the machine epsilon and smallest normal number of the device dtype and C = 2;
the ``tiny`` term covers results and partial sums flushed to zero.

Non-finite values:

* A row may overflow when the finite inputs alone can carry a sum or product past the dtype's
  largest value: ``(|A_fin| |x_fin|)_i > max`` or ``|alpha| (|A_fin| |x_fin|)_i + |beta| |y0_fin_i|
  > max`` (``_fin``: the finite values only; the un-scaled sum counts because kernels scale after
  summing). Summation order then decides whether a partial sum overflows, so such a row accepts
  any ±Inf or NaN, or a finite value within the bound of a finite reference.
* Every other row: where the reference is NaN the result must be NaN; where it is ±Inf, the
  same Inf; elsewhere finite within the bound.

Subnormal inputs: a device may read them as zero (NVIDIA does for float32 by default, PoCL with
``-cl-denorms-are-zero``). A row passes when it matches, by the rules above, either the exact
reference or the reference with every subnormal input (in A, x, y0, alpha, beta) replaced by
zero — where a flushed subnormal meets an infinite value that turns Inf into NaN, and for
formats that treat zeros as absent (DIA: ``zeros_absent``) the flushed entries are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from clspmv.formats import FORMAT_CLASSES

C = 2.0

WIDE = np.longdouble if np.finfo(np.longdouble).max > np.finfo(np.float64).max else np.float64
"""The type the reference is computed in: wider than any device dtype where the platform allows."""

ZEROS_ABSENT = frozenset(name for name, cls in FORMAT_CLASSES.items() if cls.zeros_absent)
"""Formats that cannot tell a stored zero from a gap, and so treat explicit zeros as absent
(their ``zeros_absent`` trait)."""


def oracle_matrix(fmt: str, csr: sp.csr_matrix, dtype: np.dtype | None = None) -> sp.csr_matrix:
    """The matrix the product of ``fmt`` must match.

    DIA cannot tell a stored zero from a gap in a diagonal: its oracle drops explicit zeros,
    including values that become zero when rounded to ``dtype``.
    """
    if fmt in ZEROS_ABSENT:
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


def _flush(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``values`` with the subnormal numbers of ``dtype`` replaced by (signed) zero."""
    subnormal = (values != 0) & (np.abs(values) < np.finfo(dtype).tiny)
    return np.where(subnormal, np.copysign(WIDE(0), values), values)


def reference(A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype, alpha: float = 1.0,
              beta: float = 0.0, y0: np.ndarray | None = None, flushed: bool = False,
              zeros_absent: bool = False) -> Reference:
    """The reference product of ``A`` in ``dtype`` and the accepted error per row; ``flushed``:
    with subnormal inputs read as zero (and then dropped from A when ``zeros_absent``)."""
    dtype = np.dtype(dtype)
    A_w = sp.csr_matrix(A, copy=True)
    A_w.data = _cast(A_w.data, dtype)
    x_w = _cast(x, dtype)
    a = _cast(np.array([alpha]), dtype)
    b = _cast(np.array([beta]), dtype)
    use_y = b[0] != 0 and y0 is not None
    y_w = _cast(y0, dtype) if use_y else np.zeros(A_w.shape[0], WIDE)
    if flushed:
        A_w.data, x_w, a, b, y_w = (_flush(v, dtype) for v in (A_w.data, x_w, a, b, y_w))
        if zeros_absent:
            A_w.eliminate_zeros()
    a, b = a[0], b[0]
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
        fin_sum = times(np.where(np.isfinite(A_w.data), abs_A, 0), np.where(np.isfinite(x_w),
                                                                             abs_x, 0))
        fin_mag = abs(a) * fin_sum + abs(b) * np.where(np.isfinite(y_w), abs_y, 0)
        may_overflow = (fin_sum > finfo.max) | (fin_mag > finfo.max)
        lengths = np.diff(A_w.indptr) + 1
        bound = C * lengths * (finfo.eps * mag + finfo.tiny)
    return Reference(np.asarray(ref, WIDE), np.asarray(bound, WIDE), np.asarray(may_overflow))


def rows_ok(y: np.ndarray, r: Reference) -> np.ndarray:
    """Per row: whether ``y`` obeys the rules of the module against ``r``."""
    strict = ~r.may_overflow
    with np.errstate(invalid="ignore"):
        close = np.abs(y - r.y) <= r.bound
    ok_strict = np.where(np.isnan(r.y), np.isnan(y), np.where(np.isinf(r.y), y == r.y, close))
    ok_overflow = ~np.isfinite(y) | (np.isfinite(r.y) & close)
    return np.where(strict, ok_strict, ok_overflow)


def _has_subnormals(dtype: np.dtype, *arrays: np.ndarray) -> bool:
    tiny = np.finfo(dtype).tiny
    return any(bool(((v != 0) & (np.abs(v) < tiny)).any()) for v in arrays)


def assert_matches(y: np.ndarray, A: sp.csr_matrix, x: np.ndarray, dtype: np.dtype,
                   alpha: float = 1.0, beta: float = 0.0, y0: np.ndarray | None = None,
                   zeros_absent: bool = False) -> None:
    """Assert ``y`` is the product within the bound, with the rules of the module."""
    r = reference(A, x, dtype, alpha, beta, y0)
    y = np.asarray(y).astype(WIDE)
    assert y.shape == r.y.shape, f"shape {y.shape} != {r.y.shape}"
    ok = rows_ok(y, r)
    inputs = [_cast(v, dtype) for v in (sp.csr_matrix(A).data, x, [alpha], [beta])]
    if y0 is not None:
        inputs.append(_cast(y0, dtype))
    if not ok.all() and _has_subnormals(dtype, *inputs):
        ok |= rows_ok(y, reference(A, x, dtype, alpha, beta, y0, True, zeros_absent))
    bad = np.flatnonzero(~ok)
    assert bad.size == 0, (
        f"{bad.size} rows differ from the reference, e.g. rows {bad[:5]}: y={y[bad[:5]]}, "
        f"ref={r.y[bad[:5]]}, bound={r.bound[bad[:5]]}, may overflow={r.may_overflow[bad[:5]]}"
    )


def products_match(M: object, A: sp.csr_matrix, dtype: np.dtype) -> None:
    """``M.matvec`` (a DeviceMatrix's) with beta = 0 on a y of NaN (never read), and with
    beta != 0, against scipy."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, A.shape[1])
    y = np.full(A.shape[0], np.nan, dtype)
    assert_matches(M.matvec(x, y, alpha=1.5), A, x, dtype, 1.5)
    y0 = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    assert_matches(M.matvec(x, y0.copy(), alpha=-0.5, beta=2.0), A, x, dtype, -0.5, 2.0, y0)
