"""``clspmv bench --transpose / --matmat / --solver`` end to end on tiny matrices, run in-process,
and the pieces they are made of.

Every derived number must follow from the recorded ones (GFLOP/s from nnz, k and the kernel
time; ratios from the recorded A x times of the same run; single and amortised times and
break-even counts from the one-time cost and the kernel times; speedups from the baselines'
records); what cannot run is recorded with the reason; records of runs older than these
operations still load and still make the same report.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

import clspmv
from clspmv import bandwidth, report
from clspmv.bench import baseline_cusparse, baselines, generators, operations, reference, registry
from clspmv.bench.records import (
    FIELDS,
    Record,
    device_label,
    key_of,
    read_json,
    results_path,
    with_defaults,
)
from clspmv.cli import main
from clspmv.matrix import canonical_csr
from clspmv.row_stats import stats

from fake_cupy import FakeCupy, cuda_device_count

ROOT = Path(__file__).resolve().parent.parent
POISSON = "gen:poisson2d:k=12"  # 144 rows, 672 entries, symmetric positive definite
FORMATS = ("csr-scalar", "sell", "coo")  # two with a block kernel, one without (named: runs)
KS = (1, 2, 4)
ITERATIONS = 10
HAVE_MKL = importlib.util.find_spec("sparse_dot_mkl") is not None
HAVE_PLOT = importlib.util.find_spec("matplotlib") is not None


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Bandwidth buffers of 8 MiB (the real ones are >= 256 MiB) and a private cache folder."""
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))


def spec(device: clspmv.Device) -> str:
    return f"{device.index[0]}:{device.index[1]}"


def bench(out: Path, device: clspmv.Device, *extra: str) -> int:
    return main(["bench", "--device", spec(device), "--out", str(out), "--quiet", "--repeat", "3",
                 "--warmup", "1", *extra])


def load(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


def pick(records: list[dict], **match: object) -> list[dict]:
    return [r for r in records if all(r.get(k) == v for k, v in match.items())]


def one(records: list[dict], **match: object) -> dict:
    (found,) = pick(records, **match)
    return found


# -- end to end -----------------------------------------------------------------------------------
_RUNS: dict[tuple[int, int], tuple[Path, list[dict], str]] = {}


@pytest.fixture
def run(device: clspmv.Device, tmp_path_factory: pytest.TempPathFactory
        ) -> tuple[Path, list[dict], str]:
    """One run of every operation with scipy, MKL (where installed) and a stand-in cuSPARSE,
    made once per device and shared by the tests below."""
    if device.index not in _RUNS:
        out = tmp_path_factory.mktemp("ops") / "run"
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(bandwidth, "buffer_bytes", lambda d: 8 << 20)
            FakeCupy(routines={"spmv", "spmm"}).install(mp)
            code = bench(out, device, POISSON, "--formats", ",".join(FORMATS), "--dtype", "both",
                         "--transpose", "--matmat", ",".join(map(str, KS)), "--solver", "cg",
                         "--solver-iterations", str(ITERATIONS), "--baselines",
                         "scipy,mkl,cusparse")
        assert code == 0
        _RUNS[device.index] = (out, load(out), device_label(device))
    return _RUNS[device.index]


def dtypes_of(records: list[dict]) -> list[str]:
    """The value types the device ran (float64 is skipped on a device without fp64)."""
    return sorted({r["dtype"] for r in records if r["kind"] == "format" and r["status"] == "ok"})


def test_record_counts_and_keys(run) -> None:
    _, records, _ = run
    names = ["scipy", "mkl", "cusparse"]
    for dtype in dtypes_of(records):
        here = pick(records, dtype=dtype)
        assert len(pick(here, operation="spmv")) == len(FORMATS) + len(names)
        assert len(pick(here, operation="transpose")) == 2 * len(FORMATS) + len(names)
        assert len(pick(here, operation="matmat")) == (len(FORMATS) + len(names)) * len(KS) * 2
        assert len(pick(here, operation="solver")) == len(FORMATS) + 1  # scipy's cg
    assert len({key_of(r) for r in records}) == len(records)
    assert all(list(r)[:len(FIELDS)] == list(FIELDS) for r in records)
    assert pick(records, format="mkl", status="ok" if HAVE_MKL else "absent")
    ran = [r for r in records if r["dtype"] in dtypes_of(records)]
    assert not [r for r in ran if r["status"] not in ("ok", "absent")], [
        (r["format"], r["operation"], r["reason"]) for r in ran if r["status"] != "ok"]


def spmv_ms(records: list[dict], rec: dict) -> float:
    return one(records, matrix=rec["matrix"], dtype=rec["dtype"], device=rec["device"],
               format=rec["format"], operation="spmv")["kernel_ms"]


def test_transpose_records(run) -> None:
    _, records, label = run
    for dtype in dtypes_of(records):
        for fmt in FORMATS:
            atomic = one(records, dtype=dtype, format=fmt, operation="transpose", method="atomic")
            copy = one(records, dtype=dtype, format=fmt, operation="transpose",
                       method="transpose")
            for r in (atomic, copy):
                assert r["device"] == label and r["kind"] == "format" and r["status"] == "ok"
                assert r["error_ratio"] <= 1 and r["repeats"] == 3
                assert r["gflops"] == pytest.approx(2 * r["nnz"] / r["kernel_ms"] / 1e6)
                assert r["spmv_ms"] == spmv_ms(records, r)
                assert r["ratio_to_spmv"] == pytest.approx(r["kernel_ms"] / r["spmv_ms"])
                assert r["amortised_over"] == operations.AMORTISED_OVER
                one_time = r["one_time_ms"] or 0.0
                assert r["single_ms"] == pytest.approx(one_time + r["kernel_ms"])
                assert r["amortised_ms"] == pytest.approx(one_time / 100 + r["kernel_ms"])
                scipy = one(records, dtype=dtype, format="scipy", operation="transpose")
                assert r["speedups"]["scipy"] == pytest.approx(scipy["kernel_ms"] / r["kernel_ms"])
                assert r["speedups"]["cusparse"] == pytest.approx(0.25 / r["kernel_ms"])
            assert atomic["one_time_ms"] is None and atomic["extra_bytes"] == 0
            assert "atomic add: " in atomic["params"] and atomic["breakeven_products"] is None
            assert copy["one_time_ms"] > 0 and copy["extra_bytes"] > 0
            assert f"copy: {fmt}" in copy["params"]
            n = copy["breakeven_products"]
            if n is None:  # the copy is not faster per product
                assert copy["kernel_ms"] >= atomic["kernel_ms"]
            else:  # n products pay for the copy, n - 1 do not
                assert copy["one_time_ms"] + n * copy["kernel_ms"] <= n * atomic["kernel_ms"] * (
                    1 + 1e-12)
                assert copy["one_time_ms"] + (n - 1) * copy["kernel_ms"] > (
                    (n - 1) * atomic["kernel_ms"])


def test_transpose_baselines(run) -> None:
    _, records, _ = run
    for dtype in dtypes_of(records):
        scipy = one(records, dtype=dtype, format="scipy", operation="transpose")
        assert scipy["status"] == "ok" and scipy["error_ratio"] <= 1
        assert scipy["params"].startswith("A.T @ x")
        assert scipy["ratio_to_spmv"] == pytest.approx(scipy["kernel_ms"] / spmv_ms(records,
                                                                                     scipy))
        assert scipy["single_ms"] == scipy["kernel_ms"] and scipy["one_time_ms"] is None
        cusparse = one(records, dtype=dtype, format="cusparse", operation="transpose")
        assert cusparse["kernel_ms"] == pytest.approx(0.25) and cusparse["error_ratio"] <= 1
        assert "cusparseSpMV of the CSR arrays with CUSPARSE_OPERATION_TRANSPOSE" in (
            cusparse["params"])
        assert cusparse["speedups"]["scipy"] == pytest.approx(scipy["kernel_ms"] / 0.25)
        if HAVE_MKL:
            mkl = one(records, dtype=dtype, format="mkl", operation="transpose")
            assert mkl["error_ratio"] <= 1 and "SPARSE_OPERATION_TRANSPOSE" in mkl["params"]


def test_matmat_records(run) -> None:
    _, records, _ = run
    for r in pick(records, operation="matmat"):
        if r["dtype"] not in dtypes_of(records):
            continue
        assert r["status"] in ("ok", "absent") and r["k"] in KS and r["order"] in ("C", "F")
        if r["status"] != "ok":
            continue
        k, value = r["k"], 8 if r["dtype"] == "float64" else 4
        assert r["error_ratio"] <= 1
        assert r["gflops"] == pytest.approx(2 * r["nnz"] * k / r["kernel_ms"] / 1e6)
        assert r["min_bytes"] == (r["nnz"] * (value + 4) + 4 * (r["rows"] + 1)
                                  + value * k * (r["cols"] + r["rows"]))
        assert r["ratio_to_spmv"] == pytest.approx(r["kernel_ms"] / (k * spmv_ms(records, r)))
        same = {"dtype": r["dtype"], "operation": "matmat", "k": k, "order": r["order"]}
        scipy = one(records, format="scipy", **same)
        assert r["speedups"]["scipy"] == pytest.approx(scipy["kernel_ms"] / r["kernel_ms"])
        if r["kind"] == "format":
            expected = "spmv" if k == 1 else ("columns" if r["format"] == "coo" else "block")
            assert r["method"] == expected
        if r["format"] == "cusparse":
            assert "cusparseSpMM" in r["params"]
            assert ("copied to column-major" in r["params"]) == (r["order"] == "C" and k > 1)


def test_solver_records(run) -> None:
    _, records, _ = run
    for dtype in dtypes_of(records):
        scipy = one(records, dtype=dtype, format="scipy", operation="solver")
        assert scipy["status"] == "ok", scipy["reason"]
        assert scipy["iterations"] == ITERATIONS
        assert scipy["ms_per_iteration"] == pytest.approx(scipy["wall_ms"] / ITERATIONS)
        for fmt in FORMATS:
            r = one(records, dtype=dtype, format=fmt, operation="solver")
            assert r["status"] == "ok" and r["method"] == "cg" and r["iterations"] == ITERATIONS
            assert r["ms_per_iteration"] == pytest.approx(r["wall_ms"] / ITERATIONS)
            assert r["ratio_to_spmv"] == pytest.approx(r["ms_per_iteration"]
                                                       / spmv_ms(records, r))
            assert r["speedups"]["scipy"] == pytest.approx(scipy["ms_per_iteration"]
                                                          / r["ms_per_iteration"])
            assert r["kernel_ms"] is None and r["gflops"] is None
            # the same iterations on the same system: residuals agree, and the check says so
            assert r["residual"] == pytest.approx(scipy["residual"], rel=1e-2 if
                                                  dtype == "float32" else 1e-6)
            eps = np.finfo(dtype).eps
            assert r["error_ratio"] == pytest.approx(r["residual"] / (2 * scipy["residual"]
                                                                      + 100 * eps))
            assert "rtol=0, atol=0, maxiter=10" in r["params"]


def test_report_sections(run, tmp_path: Path) -> None:
    out, records, label = run
    text = (out / "report.md").read_text()
    transpose = text.split("## Transpose products")[1].split("\n## ")[0]
    dtype = dtypes_of(records)[0]
    table = transpose.split(f"### {label} — {dtype}")[1].split("###")[0]
    copy = one(records, dtype=dtype, format="sell", operation="transpose", method="transpose")
    row = next(line for line in table.splitlines() if "| sell " in line)
    assert f"{copy['kernel_ms']:.3f} ({copy['ratio_to_spmv']:.2f}×)" in row
    assert f"{copy['one_time_ms']:.1f}" in row
    assert "per product over 100" in table
    assert "### Fastest A^T x per device" in transpose and "× cusparse (single)" in transpose
    several = text.split("## Several right-hand sides")[1].split("\n## ")[0]
    mm = one(records, dtype=dtype, format="sell", operation="matmat", k=4, order="F")
    sell_f = next(line for line in several.split(f"### {label} — {dtype}")[1].splitlines()
                  if "| sell" in line and "| F " in line)
    assert f"{mm['gflops']:.2f} ({1 / mm['ratio_to_spmv']:.2f}×)" in sell_f
    assert "### Baselines — " in several
    solvers = text.split("## Solvers")[1].split("\n## ")[0]
    assert solvers.count("| cg ") == len(FORMATS) * len(dtypes_of(records))
    if HAVE_PLOT:
        for d in dtypes_of(records):
            png = out / f"matmat_{d}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            assert f"`matmat_{d}.png`" in several
    assert "- settings: " in text and "also A^T x (copy amortised over 100 products), A X for " \
        "k = 1, 2, 4, cg (10 iterations)" in text
    # the A x sections hold A x records only
    best = text.split(f"## {label} — {dtype}")[1].split("### Best")[0]
    assert best.count("| gen:poisson2d:k=12 ") == 1
    # the report is a function of results.json alone
    assert main(["report", str(out / "results.json"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.md").read_text() == text


# -- what cannot run ------------------------------------------------------------------------------
def test_what_cannot_run_is_recorded(device: clspmv.Device, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A format that refuses the matrix takes its other operations with it; an atomic kernel
    the device cannot run is skipped while the copy runs; a non-square matrix has no solve."""
    def no_atomics(self) -> None:
        raise clspmv.DeviceError("no 64-bit integer atomics (test)")

    monkeypatch.setattr(clspmv.DeviceMatrix, "_check_atomics", no_atomics)
    wide = tmp_path / "wide.mtx"
    clspmv.io.write(wide, sp.random(40, 60, density=0.1, format="csr", random_state=3))
    out = tmp_path / "run"
    dense_row = "gen:denserows:n=2000,w=2,count=1,long=2000"  # ELL would pad to 2000 per row
    assert bench(out, device, dense_row, str(wide), "--formats", "ell,csr-vector", "--dtype",
                 "float32", "--transpose", "--matmat", "2", "--solver", "cg",
                 "--solver-iterations", "3", "--baselines", "scipy") == 0
    records = load(out)
    ell = pick(records, matrix=dense_row, format="ell")
    assert {r["operation"] for r in ell} == {"spmv", "transpose", "matmat", "solver"}
    reason = ell[0]["reason"]
    assert "'ell' would need" in reason
    assert all(r["status"] == "skipped" and r["reason"] == reason for r in ell)
    for matrix in (dense_row, "wide"):
        atomic = one(records, matrix=matrix, format="csr-vector", method="atomic")
        assert atomic["status"] == "skipped" and "no 64-bit integer atomics" in atomic["reason"]
        copy = one(records, matrix=matrix, format="csr-vector", method="transpose")
        assert copy["status"] == "ok" and copy["breakeven_products"] is None
    for r in pick(records, matrix="wide", operation="solver"):
        assert r["status"] == "skipped" and r["reason"].startswith(
            "a solver needs a square matrix; this one is 40x60")
    text = (out / "report.md").read_text()
    other = text.split("## Other operations skipped")[1].split("\n## ")[0]
    assert "'ell' would need" in other and "a solver needs a square matrix" in other


def test_solver_that_stops_early_is_skipped(device: clspmv.Device, monkeypatch) -> None:
    def broken_cg(A, b, **kw):
        kw["history"].extend([1.0, 0.5, float("nan")])
        return None, -1

    monkeypatch.setattr(operations.solvers, "cg", broken_cg)
    A = canonical_csr(generators.poisson2d(4), np.float32)
    problem = reference.Problem.build("p", A, stats(A), np.dtype(np.float32), 0)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    rec = problem.record("d", "cpu", "csr-scalar")
    with pytest.raises(operations.NotApplicable, match=r"cg ran 2 of 5 iterations \(info -1\): "
                                                       r"the residual stopped being finite"):
        operations.measure_solver(rec, M, problem, "cg", operations.Settings(1, 3, 5))


# -- pieces -------------------------------------------------------------------------------------
def test_problem_transposed_and_columns() -> None:
    A = canonical_csr(sp.random(30, 20, density=0.2, format="csr", random_state=1), np.float64)
    problem = reference.Problem.build("m", A, stats(A), np.dtype(np.float64), 5)
    t = problem.transposed()
    assert t.csr.shape == (20, 30) and t.x.shape == (30,)
    np.testing.assert_allclose(t.reference, A.T @ t.x, rtol=1e-13)
    assert problem.transposed() is t  # made once
    wide = problem.columns(4, "F")
    assert wide.x.shape == (20, 4) and wide.x.flags.f_contiguous
    np.testing.assert_allclose(wide.reference, A @ wide.x, rtol=1e-13)
    narrow = problem.columns(2, "C")  # the first columns of the same X
    assert narrow.x.flags.c_contiguous and np.array_equal(narrow.x, wide.x[:, :2])
    first = reference.Problem.build("m", A, stats(A), np.dtype(np.float64), 5).columns(2)
    assert np.array_equal(first.x, narrow.x)  # the same columns when drawn narrow first
    assert narrow.bound.shape == (30, 2) and np.array_equal(narrow.bound, wide.bound[:, :2])
    lengths = np.diff(A.indptr) + 1
    assert np.all(narrow.bound >= 2 * lengths[:, None] * np.finfo(np.float64).tiny)


def test_amortised_and_breakeven() -> None:
    def transpose(method: str, kernel: float, one_time: float | None) -> Record:
        r = Record("m", 1, 1, 1, "d", "gpu", "sell", "float32", operation="transpose",
                   method=method, kernel_ms=kernel,
                   extra={} if one_time is None else {"one_time_ms": one_time})
        operations.set_amortised(r, over=10)
        return r

    atomic, copy = transpose("atomic", 3.0, None), transpose("transpose", 1.0, 10.0)
    assert (atomic.extra["single_ms"], atomic.extra["amortised_ms"]) == (3.0, 3.0)
    assert (copy.extra["single_ms"], copy.extra["amortised_ms"],
            copy.extra["amortised_over"]) == (11.0, 2.0, 10)
    slow = transpose("transpose", 4.0, 1.0)
    slow.format = "coo"
    slow_atomic = transpose("atomic", 3.0, None)
    slow_atomic.format = "coo"
    operations.set_breakeven([atomic, copy, slow, slow_atomic])
    assert copy.breakeven_products == 5  # 10 + 5 * 1 <= 5 * 3, 10 + 4 > 12
    assert slow.breakeven_products is None and atomic.breakeven_products is None


def test_check_solver() -> None:
    def solve(residual: float) -> Record:
        r = Record("m", 1, 1, 1, "d", "gpu", "sell", "float64", operation="solver",
                   extra={"residual": residual, "iterations": 7})
        operations.check_solver(r, 1e-6)
        return r

    assert solve(1.5e-6).status == "ok"
    bad = solve(1e-3)
    assert bad.status == "wrong" and bad.error_ratio > 1
    assert bad.reason == ("final relative residual 0.001 against scipy's 1e-06 after the same 7 "
                          "iterations")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_host_baselines_of_the_other_operations(dtype) -> None:
    A = canonical_csr(sp.random(300, 200, density=0.05, format="csr", random_state=4), dtype)
    rng = np.random.default_rng(0)
    xt = rng.standard_normal(300).astype(dtype)
    X = np.asfortranarray(rng.standard_normal((200, 3)).astype(dtype))
    tol = {"rtol": 1e-5 if dtype == np.float32 else 1e-12, "atol": 1e-5}
    names = ["scipy"] + (["mkl", "mkl-optimised"] if HAVE_MKL else [])
    for name in names:
        r = registry.BASELINES[name].product(A, xt, transpose=True, warmup=1, repeat=3)
        assert r.status == "ok" and r.y.shape == (200,)
        np.testing.assert_allclose(r.y, A.T.astype(np.float64) @ xt, **tol)
        for order_X in (X, np.ascontiguousarray(X)):
            r = registry.BASELINES[name].product(A, order_X, warmup=1, repeat=3)
            assert r.status == "ok" and r.y.shape == (300, 3)
            np.testing.assert_allclose(r.y, A.astype(np.float64) @ X, **tol)


def test_scipy_solver_baseline() -> None:
    A = generators.poisson2d(8)
    b = A @ np.ones(64)
    r = baselines.scipy_solver(A, b, "cg", 6, warmup=1, repeat=3)
    assert r.status == "ok" and r.iterations == 6 and r.timing.repeats == 3
    expected = sla.cg(A, b, rtol=0.0, atol=0.0, maxiter=6)[0]
    np.testing.assert_allclose(r.y, expected, rtol=1e-12)
    with pytest.raises(ValueError, match="no scipy baseline for solver 'gmres'"):
        baselines.scipy_solver(A, b, "gmres", 6)


@pytest.mark.parametrize("routines, transpose, columns, fortran, expected", [
    ({"spmv", "spmm"}, True, False, False,
     "csr.T @ x: cusparseSpMV of the CSR arrays with CUSPARSE_OPERATION_TRANSPOSE"),
    ({"csrmv", "spmv"}, True, False, False, "csr.T @ x: csrmv (legacy) of the CSR arrays"),
    ({"spmv", "spmm"}, False, True, True, "csr @ X: cusparseSpMM, column-major X and Y"),
    ({"csrmm2", "spmm"}, False, True, False, "csr @ X: csrmm2 (legacy), column-major X and Y; "
                                              "the row-major X is copied to column-major first"),
    ({"spmv"}, False, False, False, "csr @ x: cusparseSpMV"),
    (None, True, False, False, "csr.T @ x: cuSPARSE (routine not determined"),
])
def test_cusparse_route(monkeypatch, routines, transpose, columns, fortran, expected) -> None:
    FakeCupy(routines=routines).install(monkeypatch)
    monkeypatch.setitem(sys.modules, "cupy.cusparse", None)
    monkeypatch.setitem(sys.modules, "cupyx.cusparse", None)  # a real cupy may be imported
    assert baseline_cusparse.cusparse_route(transpose, columns, fortran).startswith(expected)


def test_cusparse_transpose_and_matmat(monkeypatch) -> None:
    fake = FakeCupy(routines={"spmv", "spmm"})
    fake.install(monkeypatch)
    A = canonical_csr(sp.random(50, 40, density=0.1, format="csr", random_state=2), np.float64)
    x = np.random.default_rng(1).standard_normal(50)
    r = baseline_cusparse.cusparse_product(A, x, transpose=True, warmup=1, repeat=4)
    assert r.status == "ok" and r.timing.median_ms == pytest.approx(0.25)
    np.testing.assert_allclose(r.y, A.T @ x, rtol=1e-13)
    assert "CUSPARSE_OPERATION_TRANSPOSE" in r.params
    X = np.asfortranarray(np.random.default_rng(2).standard_normal((40, 5)))
    r = baseline_cusparse.cusparse_product(A, X, warmup=1, repeat=4)
    np.testing.assert_allclose(r.y, A @ X, rtol=1e-13)
    assert r.params == "csr @ X: cusparseSpMM, column-major X and Y" and fake.freed == 2


@pytest.mark.skipif(cuda_device_count() < 1, reason="no cupy with a CUDA device here")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cusparse_transpose_and_matmat_on_a_real_gpu(dtype) -> None:
    """The real cupy: csr.T @ x runs cuSPARSE's transpose operation, csr @ X its SpMM, in both
    orders of X, and both agree with scipy."""
    A = canonical_csr(generators.random(3000, 7, seed=1), dtype)
    rng = np.random.default_rng(3)
    tol = {"rtol": 1e-4 if dtype == np.float32 else 1e-12, "atol": 1e-4}
    xt = rng.standard_normal(3000).astype(dtype)
    r = baseline_cusparse.cusparse_product(A, xt, transpose=True, warmup=1, repeat=3)
    assert r.status == "ok" and r.timing.median_ms > 0, r.reason
    assert "CUSPARSE_OPERATION_TRANSPOSE" in r.params and "not determined" not in r.params
    np.testing.assert_allclose(r.y, A.T.astype(np.float64) @ xt, **tol)
    X = rng.standard_normal((3000, 8)).astype(dtype)
    for order, ordered in (("C", np.ascontiguousarray(X)), ("F", np.asfortranarray(X))):
        r = baseline_cusparse.cusparse_product(A, ordered, warmup=1, repeat=3)
        assert r.status == "ok" and ("SpMM" in r.params or "csrmm2" in r.params), r.params
        assert ("copied to column-major" in r.params) == (order == "C")
        np.testing.assert_allclose(r.y, A.astype(np.float64) @ X, **tol)


# -- older results ---------------------------------------------------------------------------------
def test_old_records_load_as_spmv() -> None:
    old = {"matrix": "m", "device": "d", "format": "ell", "dtype": "float64", "kind": "format"}
    assert key_of(old) == ("m", "d", "ell", "float64", "spmv", "", None, "")
    full = with_defaults(old)
    assert full["operation"] == "spmv" and full["k"] is None and full["status"] == "ok"
    assert full["spmv_ms"] is None and with_defaults(full) is full


@pytest.mark.parametrize("folder", ["2026-11-22-cpu-2core", "2026-11-22-h200"])
def test_committed_reports_rebuild_unchanged(folder: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """The reference reports, made before the other operations existed, load (as A x records)
    and give the same report.md (plots left out: not drawn here)."""
    path = results_path(ROOT / "reports" / folder)
    _, records = read_json(path)
    assert records and all(r["operation"] == "spmv" and r["k"] is None for r in records)
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)  # no plots
    metas, merged = report.load([path])
    written = report.write(tmp_path, metas, merged).read_text()
    committed = (ROOT / "reports" / folder / "report.md").read_text()
    def text(md: str) -> list[str]:  # the report without its plots (images and their section)
        return [line for line in md.split("## Plots")[0].splitlines()
                if line.strip() and not line.startswith("![")]

    assert text(written) == text(committed)
    assert "## Transpose products" not in written and "## Solvers" not in written


# -- arguments ------------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["bench", "--matmat", "0"], "--matmat: expected positive integers separated by commas"),
    (["bench", "--matmat", "2,x"], "--matmat: expected positive integers"),
    (["bench", "--solver", "bicg"], "--solver: unknown solver 'bicg'; choose from cg"),
    (["bench", "--solver-iterations", "0"], "--solver-iterations: expected a positive integer"),
])
def test_bad_operation_options(argv: list[str], message: str,
                               capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_column_counts_parse() -> None:
    from clspmv.cli_values import column_counts

    assert column_counts("1,2, 4,2,64") == [1, 2, 4, 64]
