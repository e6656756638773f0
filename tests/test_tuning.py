"""The kernel parameters the sweep varies (``clspmv bench --sweep``), against scipy (oracle.py):
``unroll`` (the kernels' UNROLL) of the CSR and ELLPACK formats, ``row_major`` ELLPACK
(ROW_MAJOR), work-group sizes, and :meth:`DeviceMatrix.retuned`, which changes them on an
uploaded matrix."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.formats.base import UNROLL_FACTORS
from clspmv.precision import resolve

from oracle import assert_matches, oracle_matrix
from scenarios import SCENARIOS, Scenario

UNROLLED_FORMATS = ("csr-scalar", "csr-vector", "csr-aligned", "ell", "ellr", "ellr-t")
ROW_MAJOR_FORMATS = ("ell", "ellr", "ellr-t")
EDGE = ("0x0", "5x0", "1x1", "all-empty", "empty-rows", "long-row", "wide", "imbalanced",
        "explicit-zeros", "nonfinite-x", "dense")
"""Edge shapes: no rows, no columns, one entry, empty rows, a row longer than any unrolled group,
row lengths not a multiple of any UNROLL, rows far longer than the mean, zeros, Inf/NaN in x."""
CASES = [s for s in SCENARIOS if s.name in EDGE]


def _check(case: Scenario, fmt: str, dtype: np.dtype, device, alpha: float = 1.0,
           beta: float = 0.0, **params: object) -> clspmv.DeviceMatrix | None:
    """The product of ``fmt`` with ``params`` against the oracle (None where it refuses)."""
    if fmt in case.unsuitable:
        with pytest.raises(clspmv.UnsuitableFormatError):
            clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype,
                                           **params)
        return None
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype, **params)
    y0 = np.linspace(-1.0, 1.0, case.csr.shape[0]).astype(dtype)
    y = y0.copy()
    M.matvec(case.x, y, alpha=alpha, beta=beta)
    assert_matches(y, oracle_matrix(fmt, case.csr, dtype), case.x, dtype, alpha, beta, y0)
    return M


@pytest.mark.parametrize("unroll", [u for u in UNROLL_FACTORS if u > 1])
@pytest.mark.parametrize("fmt", UNROLLED_FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[s.name for s in CASES])
def test_unrolled_product_matches_scipy(case: Scenario, fmt: str, unroll: int, dtype,
                                        device) -> None:
    M = _check(case, fmt, dtype, device, 1.5, -1.0, unroll=unroll)
    if M is not None:
        assert M.params["unroll"] == unroll


@pytest.mark.parametrize("threads", [2, 32])
@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("fmt", ["csr-vector", "ellr-t"])
def test_unrolled_lanes_match_scipy(fmt: str, unroll: int, threads: int, dtype, device) -> None:
    """T lanes per row with UNROLL groups of T-strided entries (the imbalanced rows: 0 to ~190
    entries)."""
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    _check(case, fmt, dtype, device, threads_per_row=threads, unroll=unroll)


@pytest.mark.parametrize("unroll", [1, 4])
@pytest.mark.parametrize("fmt", ROW_MAJOR_FORMATS)
@pytest.mark.parametrize("case", CASES, ids=[s.name for s in CASES])
def test_row_major_ell_matches_scipy(case: Scenario, fmt: str, unroll: int, dtype,
                                     device) -> None:
    params = {"threads_per_row": 4} if FORMAT_CLASSES[fmt].thread_widths else {}
    M = _check(case, fmt, dtype, device, 2.5, 0.0, row_major=True, unroll=unroll, **params)
    if M is None:
        return
    assert M.params["row_major"] == 1
    back = M.to_scipy()  # the row-major layout read back
    want = oracle_matrix(fmt, case.csr)
    assert np.array_equal(back.indptr, want.indptr)
    assert np.array_equal(back.indices, want.indices)


@pytest.mark.parametrize("fmt", ROW_MAJOR_FORMATS)
def test_row_major_ell_transpose_and_matmat(fmt: str, dtype, device) -> None:
    """The transpose and several-right-hand-sides kernels read the row-major layout too."""
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    params = {"threads_per_row": 8} if FORMAT_CLASSES[fmt].thread_widths else {}
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype,
                                       row_major=True, **params)
    _check_transpose_and_matmat(M, oracle_matrix(fmt, case.csr, dtype), dtype)


def _check_transpose_and_matmat(M: clspmv.DeviceMatrix, A: sp.csr_matrix, dtype) -> None:
    """M's transpose product and A X of three columns against the oracle ``A``."""
    xt = np.linspace(-1.0, 1.0, A.shape[0])
    assert_matches(M.rmatvec(xt, method="atomic"), A.T.tocsr(), xt, dtype)
    X = np.random.default_rng(3).uniform(-1, 1, (A.shape[1], 3))
    Y = M.matmat(X)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype)


@pytest.mark.parametrize("width", [None, 0, 2])
@pytest.mark.parametrize("case", CASES, ids=[s.name for s in CASES])
def test_row_major_hyb_matches_scipy(case: Scenario, width: int | None, dtype, device) -> None:
    """HYB with a row-major ELL part (every entry in it, some, or none): the product, the
    transpose, several right-hand sides and the arrays read back."""
    params = {} if width is None else {"width": width}
    M = _check(case, "hyb", dtype, device, 2.5, -0.5, row_major=True, **params)
    if M is None:
        return
    assert M.params["row_major"] == 1 and "ROW_MAJOR" in M._fmt._ell_defines()
    want = oracle_matrix("hyb", case.csr)
    back = M.to_scipy().tocsr()
    back.sort_indices()
    assert np.array_equal(back.indptr, want.indptr)
    assert np.array_equal(back.indices, want.indices)
    if 0 not in case.csr.shape:
        _check_transpose_and_matmat(M, oracle_matrix("hyb", case.csr, dtype), dtype)


def test_row_major_layout_is_rows_one_after_another(device) -> None:
    A = np.array([[1.0, 0, 2.0], [0, 0, 0], [3.0, 4.0, 5.0]])
    M = clspmv.DeviceMatrix.from_scipy(A, format="ell", device=device, row_major=True)
    col = M._fmt.download()["col"]
    assert list(col[:9]) == [0, 2, -1, -1, -1, -1, 0, 1, 2]


@pytest.mark.parametrize("fmt", ["ell", "ellr", "ellr-t", "hyb"])
def test_row_major_by_default_for_wide_rows_on_cpus(fmt: str, device) -> None:
    """ell, ellr and hyb's ELL part store rows of the layout's row_major_width slots or more
    (the device's measured order, here 7) row-major where work-items run one after another (a
    CPU's layout), column-major on lockstep layouts (a GPU's, SIMD 32) and for shorter rows; an
    explicit row_major wins; ellr-t keeps column-major unless asked."""
    def band(width: int) -> sp.csr_matrix:
        return sp.diags([1.0 + k for k in range(width)], range(width), shape=(200, 300),
                        format="csr")
    wide, narrow = band(7), band(6)
    cpu = replace(FORMAT_CLASSES[fmt].layout_for(device), simd_width=8, row_major_width=7)
    gpu = replace(cpu, simd_width=32)
    precision = resolve(np.float64, np.float64)

    def order(A, layout, **params) -> int:
        return convert(A, fmt, layout, precision, **params).params["row_major"]
    assert order(wide, cpu) == (fmt != "ellr-t")
    assert order(narrow, cpu) == 0 and order(wide, gpu) == 0
    assert order(wide, cpu, row_major=False) == 0 and order(narrow, gpu, row_major=True) == 1
    M = clspmv.DeviceMatrix.from_scipy(wide, format=fmt, device=device)  # this device's choice
    x = np.linspace(-1, 1, 300)
    assert_matches(M @ x, wide, x, np.float64)


@pytest.mark.parametrize("wg", [1, 16, 32, 64, 512])
@pytest.mark.parametrize("fmt", UNROLLED_FORMATS)
def test_work_group_sizes(fmt: str, wg: int, dtype, device) -> None:
    """Every work-group size the device allows, unrolled; T is at most the work-group size."""
    if wg > device.max_work_group_size:
        pytest.skip(f"{device.name} allows work-groups of {device.max_work_group_size}")
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    params: dict[str, object] = {"unroll": 2}
    lanes = bool(FORMAT_CLASSES[fmt].thread_widths)
    if lanes:
        params["threads_per_row"] = min(8, wg) if wg > 1 else 2
    if lanes and wg == 1:
        with pytest.raises(ValueError, match="at most the work-group size 1"):
            clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device,
                                           work_group_size=wg, **params)
        return
    M = _check(case, fmt, dtype, device, work_group_size=wg, **params)
    assert M is not None and M._fmt.layout.work_group_size == wg


def test_unroll_1_builds_todays_kernels(device) -> None:
    """The default unroll adds no build option: the kernels are those built before UNROLL
    existed; ROW_MAJOR only where the layout is row-major (by default on CPUs for wide rows)."""
    A = next(s for s in SCENARIOS if s.name == "wide").A
    for fmt in UNROLLED_FORMATS:
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
        assert M.params["unroll"] == 1
        assert "UNROLL" not in M._fmt.defines()
        assert ("ROW_MAJOR" in M._fmt.defines()) == bool(M.params.get("row_major", 0))
        assert "UNROLL" in M.retuned(unroll=2)._fmt.defines()


@pytest.mark.parametrize("fmt", ["csr-scalar", "csr-vector", "ellr", "ellr-t"])
def test_retuned_shares_buffers_and_matches(fmt: str, dtype, device) -> None:
    case = next(s for s in SCENARIOS if s.name == "imbalanced")
    M = clspmv.DeviceMatrix.from_scipy(case.A, format=fmt, device=device, dtype=dtype)
    wg = min(64, device.max_work_group_size)
    options: dict[str, int] = {"unroll": 8}
    if fmt == "csr-vector":
        options["threads_per_row"] = 32
    R = M.retuned(work_group_size=wg, **options)
    assert R._fmt.buffers["col"] is M._fmt.buffers["col"]  # nothing uploaded again
    assert R.params == {**M.params, **options} and R._fmt.layout.work_group_size == wg
    assert M.params["unroll"] == 1  # the original is unchanged
    for matrix in (R, M):
        assert_matches(matrix @ case.x, oracle_matrix(fmt, case.csr, dtype), case.x, dtype)


def test_parameter_errors(device) -> None:
    A = next(s for s in SCENARIOS if s.name == "wide").A
    for bad in (0, 3, 16, 2.0, True, "2"):
        with pytest.raises(ValueError, match=r"unroll must be one of \(1, 2, 4, 8\)"):
            clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, unroll=bad)
    for bad, shown in (("yes", "'yes'"), (2, "2"), (0.0, "0.0")):
        with pytest.raises(TypeError, match=f"row_major must be True or False, got {shown}"):
            clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device, row_major=bad)
    with pytest.raises(TypeError, match="unexpected keyword argument 'row_major'"):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, row_major=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'unroll'"):
        clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, unroll=2)
    M = clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device)
    with pytest.raises(ValueError, match="cannot retune row_major .* convert"):
        M.retuned(row_major=True)
    with pytest.raises(ValueError, match="unroll must be one of"):
        M.retuned(unroll=5)
    with pytest.raises(ValueError, match="power of two"):
        M.retuned(work_group_size=48)
    V = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device,
                                       threads_per_row=32)
    with pytest.raises(ValueError, match="work-group size must be at least 32, got 16"):
        V.retuned(work_group_size=16)
    with pytest.raises(ValueError, match=r"threads_per_row must be one of \(2, 4"):
        V.retuned(threads_per_row=3)
    C = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=device)
    with pytest.raises(ValueError, match="'coo' has no kernel options to retune"):
        C.retuned(work_group_size=64)
    E = clspmv.DeviceMatrix.from_scipy(A, format="ellr-t", device=device, threads_per_row=32)
    with pytest.raises(ValueError, match="'ellr-t' shares each row among 32 work-items: the "
                                         "work-group size must be at least 32, got 16"):
        E.retuned(work_group_size=16)
