"""The ``mkl-optimised`` baseline (MKL's handle hinted and optimised, issue 44): its products
against scipy, its handles freed, its errors, the thread pools in the run's meta and the
side-by-side tool."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv import bandwidth
from clspmv.bench import baselines, metadata, mkl_optimised, registry
from clspmv.bench import generators as g
from clspmv.bench.mkl_optimised import MklError, MklUnavailableError, OptimisedMkl
from clspmv.bench.records import read_results, results_path
from clspmv.canonical import canonical_csr
from clspmv.cli import main
from clspmv.errors import IndexOverflowError

from oracle import assert_matches, products_match

HAVE_MKL = importlib.util.find_spec("sparse_dot_mkl") is not None
needs_mkl = pytest.mark.skipif(not HAVE_MKL, reason='sparse_dot_mkl absent (MKL): pip install '
                                                   '".[mkl]"')
TOOL = Path(__file__).resolve().parent.parent / "tools" / "cpu_vs_mkl.py"


def matrix(shape: str, dtype: type) -> sp.csr_matrix:
    """A square, a tall, a wide matrix, or one with many empty rows (and an empty last row)."""
    rng = np.random.default_rng(4)
    if shape == "square":
        A = g.random(700, 9, seed=1)
    elif shape == "empty-rows":
        A = sp.random(600, 600, density=0.02, format="lil", random_state=2)
        A[::3] = 0
        A[-1] = 0
    else:
        rows, cols = (900, 350) if shape == "tall" else (350, 900)
        A = sp.random(rows, cols, density=0.03, format="csr", random_state=3)
    A = canonical_csr(A, dtype)
    A.data = rng.uniform(-1, 1, A.nnz).astype(dtype)
    return A


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", ["square", "tall", "wide", "empty-rows"])
def test_products_match_scipy(shape: str, dtype: type) -> None:
    """A x with alpha, and with beta on a given y, within the tests' per-row bound (beta = 0 on
    a y of NaN: MKL does not read it)."""
    A = matrix(shape, dtype)
    if shape == "empty-rows":
        assert (np.diff(A.indptr) == 0).sum() >= 200
    with OptimisedMkl(A, expected_calls=3) as M:
        products_match(M, A, np.dtype(dtype))


@needs_mkl
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_transpose_and_several_columns(dtype: type) -> None:
    A = matrix("tall", dtype)
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, A.shape[0])
    with OptimisedMkl(A, expected_calls=3, transpose=True) as M:
        assert_matches(M.matvec(x, alpha=2.0), sp.csr_matrix(A.T), x, np.dtype(dtype), 2.0)
    X = rng.uniform(-1, 1, (A.shape[1], 3))
    for fortran in (False, True):
        X_in = np.asfortranarray(X) if fortran else X
        with OptimisedMkl(A, expected_calls=3, columns=3, fortran=fortran) as M:
            Y = M.matvec(X_in)
        assert Y.flags.f_contiguous == fortran
        for j in range(3):
            assert_matches(Y[:, j], A, X[:, j], np.dtype(dtype))


@needs_mkl
@pytest.mark.parametrize("transpose, columns", [(False, 0), (True, 0), (False, 2)])
def test_baseline_result(transpose: bool, columns: int) -> None:
    A = matrix("wide", np.float64)
    n = A.shape[0] if transpose else A.shape[1]
    x = np.random.default_rng(6).uniform(-1, 1, (n, columns) if columns else n)
    r = baselines.mkl_optimised_product(A, x, transpose=transpose, threads=2, warmup=1, repeat=3)
    assert r.status == "ok" and r.name == "mkl-optimised" and r.threads == 2
    assert "(MKL, 2 threads)" in r.device and r.timing.repeats == 3
    expected = baselines.expected_products(1, 3)
    operation = "SPARSE_OPERATION_TRANSPOSE" if transpose else "SPARSE_OPERATION_NON_TRANSPOSE"
    hint = (f"mkl_sparse_set_mm_hint({operation}, general, row-major, 2 columns, "
            if columns else f"mkl_sparse_set_mv_hint({operation}, general, ")
    assert r.params == (f"{hint}expected_calls={expected}) + mkl_sparse_optimize; "
                        f"mkl_sparse_?_{'mm' if columns else 'mv'}")
    np.testing.assert_allclose(r.y, (A.T if transpose else A) @ x, rtol=1e-12, atol=1e-12)


@needs_mkl
def test_plain_baseline_still_runs_after_the_binding() -> None:
    """The binding types function objects of its own: sparse_dot_mkl's stay as it typed them."""
    A = matrix("square", np.float64)
    x = np.ones(A.shape[1])
    with OptimisedMkl(A, expected_calls=2) as M:
        M.matvec(x)
    r = baselines.mkl_product(A, x, threads=1, warmup=1, repeat=2)
    assert r.status == "ok", r.reason
    np.testing.assert_allclose(r.y, A @ x, rtol=1e-12, atol=1e-12)


class Counted:
    """A wrapped MKL routine that counts its calls (and can return a status of its own)."""

    def __init__(self, function, status: int | None = None) -> None:
        self.function, self.status, self.calls = function, status, 0

    def __call__(self, *args):
        self.calls += 1
        return self.status if self.status is not None else self.function(*args)


def counted_binding(monkeypatch: pytest.MonkeyPatch, **statuses: int) -> dict[str, Counted]:
    """The binding with creates, destroys and optimize counted (``statuses``: forced returns)."""
    real = mkl_optimised.binding()
    counts = {"create": Counted(real.create_csr[np.dtype(np.float64)]),
              "destroy": Counted(real.destroy),
              "optimize": Counted(real.optimize, statuses.get("optimize"))}
    fake = dataclasses.replace(real, create_csr={np.dtype(np.float64): counts["create"]},
                               destroy=counts["destroy"], optimize=counts["optimize"])
    monkeypatch.setattr(mkl_optimised, "_BINDING", [fake])
    return counts


@needs_mkl
def test_handles_are_freed(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = counted_binding(monkeypatch)
    A = matrix("square", np.float64)
    x = np.ones(A.shape[1])
    for _ in range(4):
        assert baselines.mkl_optimised_product(A, x, warmup=1, repeat=2).status == "ok"
    M = OptimisedMkl(A, expected_calls=1)
    M.close()
    M.close()  # a second close frees nothing
    with pytest.raises(MklError, match="this MKL handle was closed; create another"):
        M.matvec(x)
    assert counts["create"].calls == counts["destroy"].calls == counts["optimize"].calls == 5


@needs_mkl
def test_a_failed_optimize_frees_the_handle(monkeypatch: pytest.MonkeyPatch) -> None:
    counts = counted_binding(monkeypatch, optimize=2)
    with pytest.raises(MklError, match="^mkl_sparse_optimize returned "
                                       "SPARSE_STATUS_ALLOC_FAILED; the matrix or vectors"):
        OptimisedMkl(matrix("square", np.float64), expected_calls=5)
    assert counts["create"].calls == counts["destroy"].calls == 1


@needs_mkl
def test_wrong_inputs_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    A = matrix("tall", np.float64)
    with OptimisedMkl(A, expected_calls=1) as M:
        with pytest.raises(MklError, match=r"y must be a contiguous float64 array of shape "
                                           r"\(900,\) in x's layout, not float32 \(900,\)"):
            M.matvec(np.ones(A.shape[1]), np.zeros(A.shape[0], np.float32))
    with pytest.raises(MklError, match="take float32 or float64, not complex128; convert"):
        OptimisedMkl(A.astype(np.complex128), expected_calls=1)
    narrow = dataclasses.replace(mkl_optimised.binding(), index_dtype=np.dtype(np.int8))
    monkeypatch.setattr(mkl_optimised, "_BINDING", [narrow])
    with pytest.raises(IndexOverflowError, match=r"shape \(900, 350\) with \d+ entries exceeds "
                                                 r"MKL's int8 indices \(at most 127\); set "
                                                 "MKL_INTERFACE_LAYER=ILP64"):
        OptimisedMkl(A, expected_calls=1)


def test_absent_mkl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sparse_dot_mkl", None)
    monkeypatch.setattr(mkl_optimised, "_BINDING", [])
    A = matrix("square", np.float64)
    with pytest.raises(MklUnavailableError, match='^sparse_dot_mkl cannot be imported .*pip '
                                                  r'install "clspmv\[mkl\]"'):
        OptimisedMkl(A, expected_calls=1)
    r = baselines.mkl_optimised_product(A, np.ones(A.shape[1]))
    assert r.status == "absent" and r.name == "mkl-optimised" and r.timing is None
    assert r.reason.startswith("sparse_dot_mkl cannot be imported")


@needs_mkl
@pytest.mark.skipif(importlib.util.find_spec("threadpoolctl") is None,
                    reason="threadpoolctl absent: pip install threadpoolctl")
def test_thread_pools_name_mkl_and_its_threads() -> None:
    pools = metadata.thread_pools(1, load_mkl=True)
    (mkl,) = [p for p in pools if p["internal_api"] == "mkl"]
    assert mkl["num_threads"] == 1 and "libmkl_rt" in mkl["filepath"]
    pools = metadata.thread_pools(2, load_mkl=True)
    assert [p["num_threads"] for p in pools if p["internal_api"] == "mkl"] == [2]


def test_thread_pools_without_threadpoolctl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "threadpoolctl", None)
    assert metadata.thread_pools() == ("threadpoolctl is not installed (pip install "
                                       "threadpoolctl): thread counts unknown")


@needs_mkl
def test_side_by_side_tool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           device) -> None:
    """The tool's ratios are its medians' ratios, and its report's header holds the command."""
    if device.type != "cpu":
        pytest.skip("the tool compares a CPU OpenCL device with MKL")
    out = tmp_path / "report"
    argv = ["gen:poisson2d:k=30", "--device", f"{device.index[0]}:{device.index[1]}",
            "--formats", "csr-scalar,ell", "--rounds", "3", "--search-rounds", "2",
            "--finalists", "1", "--out", str(out)]
    monkeypatch.setattr(sys, "argv", ["cpu_vs_mkl.py", *argv])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(TOOL), run_name="__main__")
    assert done.value.code == 0
    (r,) = json.loads((out / "results.json").read_text())["records"]
    t = r["median"]
    assert set(t["ms"]) == {*r["finalists"], "auto", "mkl-optimised", "mkl-optimised-alone",
                            "mkl", "scipy"}
    assert t["ms"] == {n: pytest.approx(np.median(s)) for n, s in r["samples_ms"].items()}
    assert all(len(s) == 3 for s in r["samples_ms"].values()) and r["wrong"] == []
    assert t["ms"][t["fastest"]] == min(t["ms"][n] for n in [*r["finalists"], "auto"])
    assert t["x_mkl_optimised"] == pytest.approx(t["ms"]["mkl-optimised"] / t["ms"][t["fastest"]])
    # in a row: MKL optimised alone against the fastest format of the search (products alone)
    alone = min(r["search_ms"], key=r["search_ms"].get)
    assert t["fastest_in_a_row"] == alone and t["x_mkl_optimised_in_a_row"] == pytest.approx(
        t["ms"]["mkl-optimised-alone"] / r["search_ms"][alone])
    assert t["hint_optimize_speedup"] == pytest.approx(t["ms"]["mkl"] / t["ms"]["mkl-optimised"])
    settings = json.loads((out / "results.json").read_text())["meta"]["settings"]
    assert settings["mkl_blocktime"] == {"rounds_ms": 0, "alone_ms": 200}
    report = (out / "report.md").read_text()
    assert f"Command: `python tools/cpu_vs_mkl.py {' '.join(argv)}`" in report
    assert "| gen:poisson2d:k=30 | 0.00 M |" in report
    assert "MKL's OpenMP blocktime in the rounds 0 ms" in report
    assert "| × MKL optimised in a row |" in report
    # --render makes the summaries and the report again from the samples alone
    data = json.loads((out / "results.json").read_text())
    for rec in data["records"]:
        rec["median"] = rec["minimum"] = {}
    (out / "results.json").write_text(json.dumps(data))
    (out / "report.md").write_text("")
    monkeypatch.setattr(sys, "argv", ["cpu_vs_mkl.py", "--render", str(out)])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(TOOL), run_name="__main__")
    assert done.value.code == 0 and (out / "report.md").read_text() == report


@needs_mkl
def test_side_by_side_tool_mkl_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--mkl-only: MKL's two handles and scipy alone, what hint + optimize buy per matrix."""
    out = tmp_path / "report"
    monkeypatch.setattr(sys, "argv", ["cpu_vs_mkl.py", "gen:random:n=2000,k=5", "--mkl-only",
                                      "--rounds", "3", "--out", str(out)])
    with pytest.raises(SystemExit) as done:
        runpy.run_path(str(TOOL), run_name="__main__")
    assert done.value.code == 0
    (r,) = json.loads((out / "results.json").read_text())["records"]
    t = r["median"]
    assert set(t["ms"]) == {"mkl-optimised", "mkl-optimised-alone", "mkl", "scipy"}
    assert r["auto_format"] is None
    assert t["hint_optimize_speedup"] == pytest.approx(t["ms"]["mkl"] / t["ms"]["mkl-optimised"])
    report = (out / "report.md").read_text()
    assert "Method (--mkl-only)" in report
    assert f"| gen:random:n=2000,k=5 | 0.01 M | {t['ms']['mkl']:.3f} |" in report


@needs_mkl
@pytest.mark.skipif(importlib.util.find_spec("threadpoolctl") is None,
                    reason="threadpoolctl absent: pip install threadpoolctl")
def test_a_bench_run_with_the_optimised_baseline(device, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Registered after the plain one, the baseline runs in ``clspmv bench``, its record says
    which MKL path it is, the report compares with it and says which handle each MKL column is,
    and the meta holds the pools."""
    assert list(registry.BASELINES)[1:3] == ["mkl", "mkl-optimised"]
    assert registry.BASELINES["mkl-optimised"] is baselines.MKL_OPTIMISED
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda d: 4 << 20)  # a short copy probe
    out = tmp_path / "run"
    assert main(["bench", "gen:poisson2d:k=10", "--formats", "csr-scalar", "--dtype", "float64",
                 "--baselines", "scipy,mkl,mkl-optimised", "--mkl-threads", "1", "--repeat",
                 "2", "--device", f"{device.index[0]}:{device.index[1]}", "--no-selection",
                 "--out", str(out), "--quiet"]) == 0
    results = json.loads((out / "results.json").read_text())
    meta = results["meta"]
    (mkl,) = [p for p in meta["thread_pools"] if p["internal_api"] == "mkl"]
    assert mkl["num_threads"] == 1 and "mkl" in meta["versions"]
    assert any(p["internal_api"] == "openblas" for p in meta["thread_pools"])
    assert "mkl_sparse_optimize" in meta["definitions"]["baselines"]["mkl-optimised"]
    (r,) = [r for r in results["records"] if r["format"] == "mkl-optimised"]
    assert r["status"] == "ok" and r["params"].startswith(
        "mkl_sparse_set_mv_hint(SPARSE_OPERATION_NON_TRANSPOSE, general, expected_calls=")
    (fmt,) = [r for r in results["records"] if r["format"] == "csr-scalar"]
    assert fmt["speedups"]["mkl-optimised"] == pytest.approx(r["kernel_ms"] / fmt["kernel_ms"])
    text = (out / "report.md").read_text()
    assert "× mkl-optimised wall" in text
    summary = text.split("## Summary")[1].split("\n## ")[0]
    assert f"- `mkl`: {baselines.MKL.description}" in summary
    assert f"- `mkl-optimised`: {baselines.MKL_OPTIMISED.description}" in summary
    assert baselines.MKL.description.startswith("Intel MKL's plain handle: ")
    assert baselines.MKL_OPTIMISED.description.startswith("Intel MKL's hinted and optimised "
                                                          "handle: ")
    (pools,) = [line for line in text.splitlines() if line.startswith("- thread pools")]
    assert re.search(r"mkl [^;]*\(libmkl_rt[^;]*\): 1 thread(;|$)", pools), pools


def test_thread_pools_keep_json_values_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool's controller may hold something else than JSON values (scipy's for
    fast_matrix_market gives its version getter, a function): that field is left out."""
    threadpoolctl = pytest.importorskip("threadpoolctl")

    def version() -> str:
        return "1.0"

    monkeypatch.setattr(threadpoolctl, "threadpool_info", lambda: [
        {"user_api": "scipy", "internal_api": "scipy_mmio", "num_threads": 0, "prefix": "_fmm",
         "filepath": "/x/_fmm_core.so", "version": version, "architecture": "x"},
        {"user_api": "blas", "internal_api": "openblas", "num_threads": 2, "prefix": "libo",
         "version": "0.3", "threading_layer": "pthreads", "filepath": "/x/libo.so"}])
    pools = metadata.thread_pools()
    assert pools == [
        {"user_api": "scipy", "internal_api": "scipy_mmio", "prefix": "_fmm", "num_threads": 0,
         "filepath": "/x/_fmm_core.so"},
        {"user_api": "blas", "internal_api": "openblas", "prefix": "libo", "version": "0.3",
         "num_threads": 2, "threading_layer": "pthreads", "filepath": "/x/libo.so"}]
    json.dumps(pools)


REPORTS = Path(__file__).resolve().parent.parent / "reports"


@pytest.mark.parametrize("folder", sorted(
    p.name for p in REPORTS.glob("20*") if results_path(p).exists()
    and read_results(results_path(p))["meta"].get("tool") == "tools/cpu_vs_mkl.py"))
def test_committed_tool_reports_render_from_their_results(folder: str) -> None:
    """Each committed report of the tool is its render of the committed results.json (the
    reports of clspmv bench are checked so in tests/test_report.py)."""
    results = read_results(results_path(REPORTS / folder))
    render = runpy.run_path(str(TOOL))["render"]
    assert render(results["meta"], results["records"]) == (
        REPORTS / folder / "report.md").read_text(encoding="utf-8")


@needs_mkl
def test_openmp_blocktime_is_set_inside_and_restored() -> None:
    """MKL's Intel OpenMP blocktime: the value given inside ``blocktime``, the earlier one after
    it and after ``settle`` (which runs its call once, with blocktime 0); the baselines leave it
    as they found it."""
    from clspmv.bench import openmp

    mkl, _, _ = baselines.mkl_threads_set(2)
    A = canonical_csr(g.poisson2d(20), np.float64)
    x = np.ones(A.shape[1])
    mkl.dot_product_mkl(A, x)  # Intel OpenMP loaded and started
    omp = openmp._libiomp()
    if omp is None:
        pytest.skip("MKL runs on another threading layer than Intel OpenMP here")
    start = omp.kmp_get_blocktime()
    with openmp.blocktime(7):
        assert omp.kmp_get_blocktime() == 7
    assert omp.kmp_get_blocktime() == start
    seen = []
    openmp.settle(lambda: seen.append(omp.kmp_get_blocktime()))
    assert seen == [0] and omp.kmp_get_blocktime() == start
    result = baselines.mkl_optimised_product(A, x, threads=2, repeat=2)
    assert result.status == "ok" and omp.kmp_get_blocktime() == start
    assert f"expected_calls={baselines.expected_products(2, 2)}" in result.params
