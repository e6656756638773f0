"""dtype="mixed": float32 values, x and y, every sum in float64 (every format, every product).

The reference is scipy's product of the float32-rounded A and x in a wide type (``oracle.py``).
The tolerance follows the oracle's per-row bound, with the errors of mixed precision in it:

* the float64 sum: the oracle's bound in float64, ``C (len_i + 1) (eps64 mag_i + tiny64)``
  (every product of two float32 values is exact in float64, so only the sum rounds);
* its one rounding to float32: ``eps32 |ref_i| + tiny32`` (half an ulp of the result is
  ``eps32 / 2 |y_i|``; the factor 2 covers y_i differing from ref_i by the float64 error, tiny32
  a result flushed to zero);
* formats whose forward product rounds part of a row's sum to float32 before adding the rest
  (``hyb``: its ELL part stores y, its COO part adds to it; the trait ``forward_roundings``):
  each rounding of a partial sum no larger than mag_i, ``C (roundings - 1) eps32 mag_i``.
  (No forward product adds to y atomically: COO and HYB's COO part sum their rows in float64
  through a segmented reduction.)

float32's bound is ``C (len_i + 1) eps32 mag_i``: the mixed bound is tighter by the factor
``(len_i + 1) mag_i / |ref_i|`` (row formats, COO) or ``(len_i + 1) / 2`` (HYB), and is
what these tests hold every format to. The atomic transpose products add to y in float32; they
are held to float32's bound.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES

from oracle import WIDE, C, assert_matches, oracle_matrix, reference
from scenarios import SCENARIOS, Scenario

EPS32, TINY32 = float(np.finfo(np.float32).eps), float(np.finfo(np.float32).tiny)
FINITE = [s for s in SCENARIOS if not s.name.startswith("nonfinite")]


@pytest.fixture
def mixed(device) -> str:
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64 (test_bad_mixed_device checks the DeviceError)")
    return "mixed"


def rounded(A: sp.spmatrix, x: np.ndarray) -> tuple[sp.csr_matrix, np.ndarray]:
    """A and x rounded to float32 (what the device holds), back in float64."""
    A32 = sp.csr_matrix(A, dtype=np.float64)
    A32.sum_duplicates()
    A32.data = A32.data.astype(np.float32).astype(np.float64)
    return A32, np.asarray(x, np.float32).astype(np.float64)


def mixed_bound(fmt: str, A: sp.csr_matrix, x: np.ndarray,
                alpha: float = 1.0, beta: float = 0.0, y0: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
    """(reference, per-row tolerance) of a mixed product (see the module docstring)."""
    r = reference(A, x, np.float64, alpha, beta, y0)
    abs_A = abs(A).astype(WIDE)
    mag = abs(alpha) * (abs_A @ np.abs(x).astype(WIDE))
    if beta != 0 and y0 is not None:
        mag = mag + abs(beta) * np.abs(y0).astype(WIDE)
    bound = r.bound + EPS32 * np.abs(r.y) + TINY32
    extra = FORMAT_CLASSES[fmt].forward_roundings - 1
    return r.y, bound + C * extra * EPS32 * mag


def assert_mixed(y: np.ndarray, fmt: str, A: sp.csr_matrix, x: np.ndarray,
                 **kwargs: object) -> None:
    ref, bound = mixed_bound(fmt, A, x, **kwargs)
    err = np.abs(np.asarray(y).astype(WIDE) - ref)
    bad = np.flatnonzero(~(err <= bound))
    assert bad.size == 0, (f"{bad.size} rows beyond the mixed bound, e.g. {bad[:5]}: "
                           f"err={err[bad[:5]]}, bound={bound[bad[:5]]}")


@pytest.mark.parametrize("case", FINITE, ids=[s.name for s in FINITE])
def test_mixed_product_matches_float64(case: Scenario, fmt: str, mixed: str, device) -> None:
    if fmt in case.unsuitable:
        pytest.skip("format refuses this matrix (checked in test_product)")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=mixed)
    assert M.dtype == np.float32 and M.precision == "mixed"
    assert M.accumulate_dtype == np.float64
    y = M.matvec(case.x)
    assert y.dtype == np.float32
    A32, x32 = rounded(oracle_matrix(fmt, case.csr, np.float32), case.x)
    assert_mixed(y, fmt, A32, x32)


@pytest.mark.parametrize("case", [s for s in SCENARIOS if s.name.startswith("nonfinite")],
                         ids=lambda s: s.name)
def test_mixed_nonfinite_as_float32(case: Scenario, fmt: str, mixed: str, device) -> None:
    """Inf and NaN follow the oracle's rules of float32 (sums that overflow float32 only in the
    float64 sum still become Inf when y is rounded)."""
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=mixed)
    assert_matches(M.matvec(case.x), oracle_matrix(fmt, case.csr, np.float32), case.x,
                   np.float32)


def test_mixed_alpha_beta_transpose_matmat(fmt: str, mixed: str, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=mixed)
    A32, x32 = rounded(oracle_matrix(fmt, case.csr, np.float32), case.x)
    rng = np.random.default_rng(5)
    y0 = rng.standard_normal(M.shape[0]).astype(np.float32)
    y = y0.copy()
    M.matvec(case.x, y, alpha=-1.5, beta=0.5)
    assert_mixed(y, fmt, A32, x32, alpha=-1.5, beta=0.5,
                 y0=y0.astype(np.float64))
    # several right-hand sides, both memory orders: every column within the bound
    X = rng.uniform(-1, 1, (M.shape[1], 3)).astype(np.float32)
    for order in (np.ascontiguousarray, np.asfortranarray):
        Y = M.matmat(order(X))
        assert Y.dtype == np.float32
        for j in range(3):
            assert_mixed(Y[:, j], fmt, A32, X[:, j].astype(np.float64))
    # A^T x: through a transposed copy its forward kernels sum in float64 ...
    xt = rng.uniform(-1, 1, M.shape[0]).astype(np.float32)
    At = sp.csr_matrix(A32.T)
    yt = M.rmatvec(xt, method="transpose")
    copy_fmt = M.transpose_copy[0]
    assert_mixed(yt, copy_fmt, At, xt.astype(np.float64))
    # ... the atomic kernel adds each product to y in float32: float32's bound
    M.release_transpose()
    assert_matches(M.rmatvec(xt, method="atomic"), At, xt, np.float32)


def cancelling_rows(rows: int, length: int, seed: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """Rows of ``length`` float32 entries whose products sum to nearly zero: the last entry of
    each row cancels the float64 sum of the others (up to its own float32 rounding)."""
    rng = np.random.default_rng(seed)
    n = length * 2
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    cols = np.sort(rng.permuted(np.tile(np.arange(n), (rows, 1)), axis=1)[:, :length], axis=1)
    vals = rng.uniform(-100, 100, (rows, length)).astype(np.float32)
    partial = (vals[:, :-1].astype(np.float64) * x[cols[:, :-1]]).sum(axis=1)
    vals[:, -1] = (-partial / x[cols[:, -1]]).astype(np.float32)
    A = sp.csr_matrix((vals.ravel(), cols.ravel(), np.arange(rows + 1) * length), shape=(rows, n))
    return A, x


def test_mixed_beats_float32_on_cancellation(fmt: str, mixed: str, device) -> None:
    """Long rows summing to nearly zero: float32's error grows with the sum of |a_ij x_j|,
    mixed's stays near one rounding of the tiny result (every row fits HYB's ELL part here)."""
    A, x = cancelling_rows(64, 1500, seed=3)
    A64, x64 = rounded(A, x)
    ref = np.asarray(A64.astype(WIDE) @ x64.astype(WIDE))
    scale = float((abs(A64) @ np.abs(x64)).max())
    errors = {}
    for dtype in (np.float32, mixed):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
        errors[M.precision] = float(np.abs(M.matvec(x).astype(WIDE) - ref).max()) / scale
    assert_mixed(clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device,
                                                dtype=mixed).matvec(x),
                 fmt, oracle_matrix(fmt, A64), x64)
    assert errors["mixed"] * 100 < errors["float32"], errors


@pytest.mark.parametrize("bad,shown", [("mix", "'mix'"), ("float16", "float16"),
                                       (np.int32, "int32"), ("MIXED", "'MIXED'")])
def test_bad_dtype_names_the_choices(bad: object, shown: str, device) -> None:
    with pytest.raises(TypeError, match=f"dtype must be float32, float64 or 'mixed', got {shown}"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), device=device, dtype=bad)


def test_bad_mixed_device(device) -> None:
    import dataclasses

    # A name full of regex characters, as Intel's "Intel(R) Xeon(R) ..." has some.
    no_fp64 = dataclasses.replace(device, fp64=False, name="Intel(R) Xeon(R) [v2] *+?")
    assert not no_fp64.supports("mixed") and no_fp64.supports(np.float32)
    with pytest.raises(clspmv.DeviceError,
                       match=re.escape(f"{no_fp64.name} has no float64 support (cl_khr_fp64), "
                                       "which dtype='mixed' needs for its float64 sums; use "
                                       "dtype=float32")):
        clspmv.DeviceMatrix.from_scipy(sp.eye(4), device=no_fp64, dtype="mixed")


def test_precision_attributes(device) -> None:
    for dtype, name in ((np.float32, "float32"), (np.float64, "float64")):
        if not device.supports(dtype):
            continue
        M = clspmv.DeviceMatrix.from_scipy(sp.eye(3), device=device, dtype=dtype)
        assert M.precision == name and M.accumulate_dtype == M.dtype == dtype
        assert f" {name} " in repr(M)


def test_mixed_program_is_its_own_build(mixed: str, device) -> None:
    """ACC_T is part of the program cache key: float32 and mixed never share a program."""
    from clspmv import build

    opts32 = build.options_for(np.float32, WG=64)
    opts_mixed = build.options_for(np.float32, accumulate=np.float64, WG=64)
    assert "-DACC_T=double" in opts_mixed and "-DACC_IS_DOUBLE=1" in opts_mixed
    assert not any(o.startswith("-DACC_T") for o in opts32)
    assert build.options_for(np.float64, accumulate=np.float64) == build.options_for(np.float64)


def test_mixed_solver(mixed: str, device) -> None:
    """The solvers take a mixed matrix: float32 vectors and dot products, products summed in
    float64."""
    from clspmv.bench.generators import poisson2d

    A = poisson2d(16)
    b = np.ones(A.shape[0])
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype=mixed)
    x, info = clspmv.solvers.cg(M, b, rtol=1e-5, maxiter=500)
    assert info == 0 and x.dtype == np.float32
    assert np.linalg.norm(b - A @ x) <= 1e-4 * np.linalg.norm(b)
