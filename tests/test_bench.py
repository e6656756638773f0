"""``clspmv bench`` and ``clspmv report`` end to end on tiny matrices, run in-process.

The numbers in the records must be consistent with each other (GFLOP/s from nnz and kernel time,
speedups as ratios of recorded times, break-even counts from the recorded conversion and kernel
times); formats that cannot run and baselines that are absent must be recorded with the reason.
"""

from __future__ import annotations

import csv
import importlib.util
import itertools
import json
import math
import shlex
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

import clspmv
from clspmv import bandwidth
from clspmv.bench import reference, runner, speedups, timing
from clspmv.bench.generators import generate
from clspmv.bench.records import FIELDS, device_label
from clspmv.bench.registry import BASELINES
from clspmv.canonical import canonical_csr
from clspmv.cli import main
from clspmv.model import select

REQUIRED = ("matrix rows cols nnz device format dtype status reason kernel_ms kernel_ms_min "
            "kernel_ms_max wall_ms conversion_ms breakeven_products gflops gbps pct_copy_bw "
            "device_bytes speedups").split()

POISSON = "gen:poisson2d:k=12"  # 144 rows, 672 entries
DENSE_ROW = "gen:denserows:n=20000,w=2,count=1,long=20000"  # ELL would pad every row to 20000
FORMATS = "csr-scalar,ell,sell,hyb"
HAVE_MKL = importlib.util.find_spec("sparse_dot_mkl") is not None
BUFFER_BYTES = bandwidth.buffer_bytes  # the rule itself; tests run with smaller buffers


def spec(device: clspmv.Device) -> str:
    return f"{device.index[0]}:{device.index[1]}"


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Bandwidth buffers of 8 MiB (the real ones are >= 256 MiB) and a private cache folder."""
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))


def bench(out: Path, device: clspmv.Device, *extra: str) -> tuple[int, list[str]]:
    argv = ["bench", POISSON, DENSE_ROW, "--formats", FORMATS, "--repeat", "3", "--warmup",
            "1", "--device", spec(device), "--out", str(out), "--quiet", *extra]
    return main(argv), argv


def load(out: Path) -> tuple[dict, list[dict]]:
    data = json.loads((out / "results.json").read_text())
    return data["meta"], data["records"]


def pick(records: list[dict], **match: object) -> list[dict]:
    return [r for r in records if all(r[k] == v for k, v in match.items())]


def test_bench_end_to_end(device: clspmv.Device, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    code, argv = bench(out, device, "--dtype", "both", "--note", "a quiet machine")
    assert code == 0, capsys.readouterr().err
    assert (out / "report.md").is_file() and (out / "results.csv").is_file()
    if importlib.util.find_spec("matplotlib"):
        for kind in ("gflops", "speedup", "bandwidth"):
            for dtype in ("float32", "float64"):
                png = out / f"{kind}_{dtype}.png"
                assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
    meta, records = load(out)
    stdout = capsys.readouterr().out
    assert f"{len(records)} records" in stdout and str(out / "report.md") in stdout

    # meta: the exact command, the devices with drivers and measured bandwidth, host, versions
    assert meta["command"] == shlex.join(["clspmv", *argv])
    (dev,) = meta["devices"]
    assert dev["name"] == device.name and dev["driver_version"] == device.driver_version
    assert dev["bandwidth"]["copy_gbps"] > 0 and dev["bandwidth"]["read_gbps"] > 0
    assert meta["host"]["cpu"] and meta["host"]["cores"] >= 1
    assert {"numpy", "scipy", "pyopencl", "clspmv"} <= set(meta["versions"])
    assert meta["git"] is None or len(meta["git"]["commit"]) == 40
    assert not meta["interrupted"] and meta["finished"]

    dtypes = ["float64", "float32"] if device.fp64 else ["float32"]
    per_matrix = len(BASELINES) + len(FORMATS.split(","))
    assert len(records) == 2 * len(["float64", "float32"]) * per_matrix
    for r in records:
        assert set(REQUIRED) <= set(r) and list(r)[:len(FIELDS)] == list(FIELDS)
    for matrix in ("gen:poisson2d:k=12", "gen:denserows:n=20000,w=2,count=1,long=20000"):
        for dtype in dtypes:
            check_group(pick(records, matrix=matrix, dtype=dtype), device)

    # the skipped path: ELL refuses the row of 20000 entries; the run went on
    (ell,) = pick(records, matrix=DENSE_ROW, format="ell", dtype=dtypes[0])
    assert ell["status"] == "skipped" and "'ell' would need" in ell["reason"]
    assert ell["kernel_ms"] is None and ell["gflops"] is None
    (hyb,) = pick(records, matrix=DENSE_ROW, format="hyb", dtype=dtypes[0])
    assert hyb["status"] == "ok"

    # results.csv holds the same records
    with open(out / "results.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(records)
    for row, r in zip(rows, records, strict=True):
        assert (row["matrix"], row["format"], row["dtype"], row["status"]) == (
            r["matrix"], r["format"], r["dtype"], r["status"])
        assert row["kernel_ms"] == ("" if r["kernel_ms"] is None else str(r["kernel_ms"]))

    report = (out / "report.md").read_text()
    assert meta["command"] in report and "- note: a quiet machine" in report
    assert "| Matrix" in report and "%ELL(HYB)" in report
    assert "would need" in report  # the skipped format's reason
    assert report.count(f"## {device_label(device)} — ") == len(dtypes)
    # `clspmv report` rebuilds the same report from results.json alone
    again = tmp_path / "again"
    assert main(["report", str(out / "results.json"), "--out", str(again)]) == 0
    assert (again / "report.md").read_text() == report


def check_group(records: list[dict], device: clspmv.Device) -> None:
    """The numbers of one matrix and dtype agree with each other."""
    base = {r["format"]: r for r in records if r["kind"] == "baseline"}
    fmts = {r["format"]: r for r in records if r["kind"] == "format"}
    assert set(base) == set(BASELINES)
    scipy = base["scipy"]
    assert scipy["status"] == "ok" and scipy["threads"] == 1 and scipy["error_ratio"] <= 1
    assert base["mkl"]["status"] == ("ok" if HAVE_MKL else "absent")
    if base["cusparse"]["status"] == "absent":
        assert "cupy" in base["cusparse"]["reason"]
    nnz, rows, cols = scipy["nnz"], scipy["rows"], scipy["cols"]
    value = 8 if scipy["dtype"] == "float64" else 4
    for r in fmts.values():
        assert (r["nnz"], r["rows"], r["cols"]) == (nnz, rows, cols)
        assert r["device"] == device_label(device) and r["device_type"] == device.type
        assert r["min_bytes"] == nnz * (value + 4) + 4 * (rows + 1) + value * (cols + rows)
        if r["status"] != "ok":
            continue
        assert r["error_ratio"] <= 1
        assert r["kernel_ms_min"] <= r["kernel_ms"] <= r["kernel_ms_max"]
        assert r["repeats"] == 3 and r["wall_ms"] > 0
        assert r["gflops"] == pytest.approx(2 * nnz / r["kernel_ms"] / 1e6)
        assert r["gbps"] == pytest.approx(r["min_bytes"] / r["kernel_ms"] / 1e6)
        assert r["pct_copy_bw"] == pytest.approx(100 * r["gbps"] / r["copy_gbps"])
        assert r["conversion_ms"] == pytest.approx(r["host_conversion_ms"] + r["upload_ms"])
        assert r["device_bytes"] > 0 and r["fits_cache"] == (r["min_bytes"] <= r["cache_bytes"])
        assert r["speedups"]["scipy"] == pytest.approx(scipy["kernel_ms"] / r["kernel_ms"])
        if HAVE_MKL:
            assert r["speedups"]["mkl"] == pytest.approx(base["mkl"]["kernel_ms"] / r["kernel_ms"])
        else:
            assert "mkl" not in r["speedups"]
        if base["cusparse"]["status"] != "ok":
            assert "cusparse" not in r["speedups"]
        ref = fmts["csr-scalar"]
        n = r["breakeven_products"]
        if r["format"] == "csr-scalar":
            assert n == 0
        elif n is None:
            assert r["kernel_ms"] >= ref["kernel_ms"]
        else:  # n products pay for the conversion, n - 1 do not
            def total(rec: dict, k: int) -> float:
                return rec["conversion_ms"] + k * rec["kernel_ms"]

            assert total(r, n) <= total(ref, n) * (1 + 1e-12)
            assert n == 0 or total(r, n - 1) > total(ref, n - 1)
    # the plain-ELLPACK footprint the reductions refer to
    ell = fmts["ell"]
    if ell["status"] == "ok":
        assert ell["ell_bytes"] == ell["device_bytes"] and ell["reduction_vs_ell_pct"] == 0


# -- failure paths --------------------------------------------------------------------------------
def test_missing_baselines(device: clspmv.Device, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sparse_dot_mkl", None)  # import fails
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.delenv("MKL_RT", raising=False)
    out = tmp_path / "run"
    assert bench(out, device, "--dtype", "float32", "--formats", "csr-scalar")[0] == 0
    _, records = load(out)
    for name, hint in (("mkl", 'pip install "clspmv[mkl]"'), ("cusparse", "cupy")):
        for r in pick(records, format=name):
            assert r["status"] == "absent" and hint in r["reason"]
            assert r["kernel_ms"] is None
    for r in pick(records, kind="format"):
        assert "mkl" not in r["speedups"] and "cusparse" not in r["speedups"]
        assert r["speedups"]["scipy"] > 0
    report = (out / "report.md").read_text()
    assert "## Baselines absent" in report and 'pip install "clspmv[mkl]"' in report


def test_a_failing_baseline_is_recorded(device: clspmv.Device, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import dataclasses

    def broken(A, x, **kwargs):
        raise RuntimeError("CUSPARSE_STATUS_INTERNAL_ERROR")

    monkeypatch.setitem(BASELINES, "cusparse",
                        dataclasses.replace(BASELINES["cusparse"], product=broken))
    out = tmp_path / "run"
    argv = ["bench", POISSON, "--formats", "csr-scalar", "--dtype", "float32", "--repeat", "3",
            "--device", spec(device), "--out", str(out), "--quiet", "--baselines",
            "scipy,cusparse"]
    assert main(argv) == 0
    _, records = load(out)
    assert [(r["format"], r["status"]) for r in records] == [
        ("scipy", "ok"), ("cusparse", "failed"), ("csr-scalar", "ok")]
    assert records[1]["reason"] == "RuntimeError: CUSPARSE_STATUS_INTERNAL_ERROR"
    assert "cusparse" not in records[2]["speedups"]


def test_out_of_memory_and_driver_errors(device: clspmv.Device, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real = timing.convert

    def convert(csr, fmt, dev, work_group_size=None, accumulate=None):
        if fmt == "ell":
            raise clspmv.DeviceError("out of device memory uploading format 'ell'")
        if fmt == "sell":
            raise MemoryError("Unable to allocate 9 GiB")
        if fmt == "hyb":
            raise cl.RuntimeError("clEnqueueNDRangeKernel failed: INVALID_VALUE")
        return real(csr, fmt, dev, work_group_size, accumulate)

    monkeypatch.setattr(timing, "convert", convert)
    out = tmp_path / "run"
    argv = ["bench", POISSON, "--formats", FORMATS, "--dtype", "float32", "--repeat", "3",
            "--device", spec(device), "--out", str(out), "--quiet", "--baselines", "scipy"]
    assert main(argv) == 0
    _, records = load(out)
    status = {r["format"]: (r["status"], r["reason"]) for r in records}
    assert status["ell"] == ("skipped", "out of device memory uploading format 'ell'")
    assert status["sell"] == ("skipped", "out of memory converting: Unable to allocate 9 GiB")
    assert status["hyb"][0] == "failed" and "INVALID_VALUE" in status["hyb"][1]
    assert status["csr-scalar"] == ("ok", "")


def test_interrupt_keeps_valid_results(device: clspmv.Device, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    calls = []
    real = runner.Runner.measure

    def measure(self, rec, problem, dev, fmt):
        calls.append(fmt)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(self, rec, problem, dev, fmt)

    monkeypatch.setattr(runner.Runner, "measure", measure)
    out = tmp_path / "run"
    assert bench(out, device, "--dtype", "float32", "--baselines", "scipy")[0] == 130
    meta, records = load(out)
    assert meta["interrupted"] is True and meta["finished"]
    # the scipy baseline and the two formats measured before the interrupt
    assert [r["format"] for r in records] == ["scipy", "csr-scalar", "ell"]
    assert all(r["status"] == "ok" for r in records)
    assert "interrupted" in capsys.readouterr().err
    assert not (out / "report.md").exists()
    assert main(["report", str(out / "results.json")]) == 0
    assert "**interrupted**" in (out / "report.md").read_text()


def test_time_budget(device: clspmv.Device, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> None:
    checks = []

    def out_of_time(self) -> bool:
        checks.append(1)
        return len(checks) > 3  # matrix 1 starts, then two formats, then the budget is spent

    monkeypatch.setattr(runner.Runner, "out_of_time", out_of_time)
    out = tmp_path / "run"
    code, _ = bench(out, device, "--dtype", "float32", "--baselines", "none",
                    "--max-seconds", "60")
    assert code == 0
    meta, records = load(out)
    assert [r["status"] for r in records] == ["ok", "ok", "skipped", "skipped"]
    assert records[2]["reason"] == "time budget of 60 s (--max-seconds) spent"
    assert meta["not_run"] == [f"{DENSE_ROW} (time budget spent)"]
    assert f"- not run: {DENSE_ROW} (time budget spent)" in (out / "report.md").read_text()


def test_matrices_that_cannot_run_are_listed(device: clspmv.Device, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "complex.mtx").write_text(
        "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 1 1.0 2.0\n")
    real = reference.canonical_csr

    def canonical_csr(A, dtype=None):
        if A.shape == (7, 7):
            raise clspmv.IndexOverflowError("does not fit the 32-bit indices")
        return real(A, dtype)

    monkeypatch.setattr(reference, "canonical_csr", canonical_csr)
    out = tmp_path / "run"
    argv = ["bench", str(tmp_path / "complex.mtx"), "gen:random:n=7,k=2", POISSON,
            "--formats", "csr-scalar", "--dtype", "float32", "--baselines", "scipy",
            "--repeat", "3", "--device", spec(device), "--out", str(out)]
    assert main(argv) == 0
    meta, records = load(out)
    assert meta["not_run"][0].startswith("complex (") and "complex" in meta["not_run"][0][9:]
    assert meta["not_run"][1] == ("gen:random:n=7,k=2 float32 (does not fit the 32-bit "
                                  "indices)")
    assert {r["matrix"] for r in records} == {POISSON}  # the run went on
    assert "clspmv: not run: complex" in capsys.readouterr().err


def test_auto_formats(device: clspmv.Device, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, _ = bench(out, device, "--dtype", "float32", "--baselines", "none", "--formats",
                    "auto")
    assert code == 0
    _, records = load(out)
    for matrix in (POISSON, DENSE_ROW):
        chosen = pick(records, matrix=matrix)
        assert chosen[-1]["format"] == "csr-scalar" or len(chosen) == 1
        assert "auto: " in chosen[0]["params"]
    # the library's own choice (format="auto"), the one selection path
    for matrix in (POISSON, DENSE_ROW):
        A = canonical_csr(generate(matrix.removeprefix("gen:")), np.float32)
        assert pick(records, matrix=matrix)[0]["format"] == select(A, device).format


# -- argument errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, message", [
    (["bench", "gen:nosuch"], "unknown generator 'nosuch'"),
    (["bench", "missing.mtx"], "missing.mtx: no such file"),
    (["bench", "ss:bcsstk24"], "expected ss:GROUP/NAME"),
])
def test_bench_bad_matrix(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
                          ) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["bench", "--formats", "csr"], "unknown format 'csr'"),
    (["bench", "--baselines", "scipy,matlab"], "unknown baseline 'matlab'"),
    (["bench", "--repeat", "0"], "--repeat: expected a positive integer, got '0'"),
    (["bench", "--suite", "big"], "invalid choice: 'big'"),
    (["bench", "--dtype", "float16"], "invalid choice: 'float16'"),
])
def test_bench_bad_options(argv: list[str], message: str,
                           capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_bench_unknown_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", POISSON, "--device", "no-such-device-anywhere"]) == 1
    assert "no OpenCL device matches 'no-such-device-anywhere'" in capsys.readouterr().err


def test_report_bad_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "none.json")]) == 2
    assert "none.json: No such file" in capsys.readouterr().err
    (tmp_path / "x.json").write_text('{"a": 1}')
    assert main(["report", str(tmp_path / "x.json")]) == 2
    assert "not a clspmv results file" in capsys.readouterr().err


# -- one run per folder, never two runs' files side by side (issue 46) ---------------------------
SMALL = ("--formats", "csr-scalar", "--dtype", "float32", "--baselines", "none", "--repeat", "3",
         "--warmup", "1", "--quiet")
OLD_RUN = {"results.json": '{"meta": {}, "records": []}', "results.csv": "old\n",
           "report.md": "old report\n", "gflops_float64.png": "old plot",
           "summary.png": "old plot"}
"""The files of an earlier run in a folder (its float64 plots are ones a float32 run never
draws)."""


def small_bench(device: clspmv.Device, *extra: str) -> int:
    """``clspmv bench`` of one small matrix, one format, no baseline (a second or so)."""
    return main(["bench", POISSON, *SMALL, "--device", spec(device), *extra])


def old_run(folder: Path) -> None:
    """The files of :data:`OLD_RUN` in ``folder``, and a file of the user's own."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in OLD_RUN.items():
        (folder / name).write_text(text)
    (folder / "notes.txt").write_text("mine")


def assert_no_old_file(folder: Path) -> None:
    """Only the new run's files (and the user's own) are in ``folder``: no old run's, no
    temporary ones."""
    for path in folder.iterdir():
        assert not path.name.startswith("."), path
        if path.name != "notes.txt":
            assert not path.read_bytes().startswith(b"old"), path
    assert (folder / "notes.txt").read_text() == "mine"


def test_default_out_is_a_new_folder_each_run(device: clspmv.Device, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from clspmv.cli import default_out_dir

    monkeypatch.chdir(tmp_path)
    assert small_bench(device) == 0
    assert small_bench(device, "--seed", "1") == 0
    first = default_out_dir()
    second = first.with_name(f"{first.name}-2")
    assert sorted(p.name for p in (tmp_path / "reports").iterdir()) == [first.name, second.name]
    for folder, seed in ((first, 0), (second, 1)):  # each run kept whole, in its own folder
        meta, records = load(tmp_path / folder)
        assert meta["settings"]["seed"] == seed and ("--seed 1" in meta["command"]) == seed
        assert [r["format"] for r in records] == ["csr-scalar"]
        assert meta["command"] in (tmp_path / folder / "report.md").read_text()
    out = capsys.readouterr().out
    assert f"report: {first / 'report.md'}" in out and f"report: {second / 'report.md'}" in out


def test_concurrent_runs_get_folders_of_their_own(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    from clspmv.report.folder import new_folder

    base = tmp_path / "reports" / "day-host"
    (tmp_path / "reports").mkdir()
    base.with_name("day-host-3").mkdir()  # made by another run: skipped, not shared
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: new_folder(base), range(8)))
    expected = [base] + [base.with_name(f"day-host-{n}") for n in (2, 4, 5, 6, 7, 8, 9)]
    assert sorted(made) == sorted(expected)


def test_out_holding_a_run_is_refused_without_force(device: clspmv.Device, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    old_run(out)
    assert small_bench(device, "--out", str(out)) == 2
    captured = capsys.readouterr()
    assert captured.err == (
        f"clspmv: error: {out} holds the files of another run (gflops_float64.png, report.md, "
        "results.csv, ...); choose a new folder with --out DIR, or pass --force to replace "
        "them\n")
    assert {p.name: p.read_text() for p in out.iterdir()} == {**OLD_RUN, "notes.txt": "mine"}

    assert small_bench(device, "--out", str(out), "--force") == 0
    meta, records = load(out)
    assert meta["command"].endswith("--force") and [r["format"] for r in records] == [
        "csr-scalar"]
    assert_no_old_file(out)  # the old plots gone too, not only the files the new run replaced
    report = (out / "report.md").read_text()
    assert all(f"({p.name})" in report for p in out.glob("*.png"))


@pytest.mark.parametrize("where", ["measuring", "writing the report"])
def test_interrupted_forced_run_leaves_only_its_own_files(
        where: str, device: clspmv.Device, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from clspmv.report import tables

    def interrupt(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(*((runner.Runner, "measure") if where == "measuring"
                          else (tables, "render")), interrupt)
    out = tmp_path / "run"
    old_run(out)
    assert small_bench(device, "--out", str(out), "--force") == 130
    measured = 0 if where == "measuring" else 1
    err = capsys.readouterr().err  # the one line, after what progress bars drew above it
    assert err.endswith("\n") and "Traceback" not in err
    assert err.splitlines()[-1] == (
        f"clspmv: interrupted; the {measured} records measured so far are in "
        f"{out / 'results.json'} (clspmv report {out / 'results.json'} makes a report)")
    assert_no_old_file(out)
    assert not (out / "report.md").exists()
    meta, records = load(out)
    assert meta["interrupted"] is (where == "measuring") and len(records) == measured


def only_matrix_not_run(reason: str) -> list[str]:
    """The last two lines of a run whose only matrix could not be run for ``reason``."""
    return [f"clspmv: not run: {reason}",
            f"clspmv: error: no record was made, so no report was written; not run: {reason}"]


def test_generator_values_it_refuses(device: clspmv.Device, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = "gen:random:n=0,k=1"
    assert main(["bench", bad, *SMALL, "--device", spec(device), "--out",
                 str(tmp_path / "run")]) == 2
    reason = f"{bad} ({bad}: n must be >= 1, got 0; choose other values (gen:NAME:key=val,...))"
    assert capsys.readouterr().err.splitlines()[-2:] == only_matrix_not_run(reason)


def test_unreadable_matrix_leaves_no_empty_progress_bar(device: clspmv.Device, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """With the progress bar on, a run whose only matrix cannot be read ends with the two error
    lines, not an empty bar drawn after them (tqdm redraws a bar of no steps as "0run")."""
    bad = tmp_path / "short.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n")
    assert main(["bench", str(bad), *SMALL[:-1], "--device", spec(device), "--out",
                 str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "0run" not in err and "0/0" not in err
    reason = (f"short ({bad}: line 3: too few entries: the file ends here with 1 entries, "
              "but the size line declares 2)")
    assert err.endswith("\n".join(only_matrix_not_run(reason)) + "\n")


@pytest.mark.parametrize("inside", [False, True], ids=["a-file", "below-a-file"])
def test_out_that_cannot_be_a_folder(inside: bool, device: clspmv.Device, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file.txt").write_text("x")
    out = tmp_path / "file.txt" / "run" if inside else tmp_path / "file.txt"
    assert small_bench(device, "--out", str(out)) == 2
    problem = "Not a directory" if inside else "File exists"
    assert capsys.readouterr().err == (f"clspmv: error: {out}: cannot make the folder "
                                       f"({problem}); choose one you can write with --out DIR\n")
    assert (tmp_path / "file.txt").read_text() == "x"


# -- pieces ---------------------------------------------------------------------------------------
def test_breakeven() -> None:
    assert speedups.breakeven(10.0, 1.0, 2.0, 2.0) == 8  # 10 + 8 = 18 <= 2 + 16
    assert speedups.breakeven(10.0, 1.0, 2.0, 3.0) == 4
    assert speedups.breakeven(1.0, 1.0, 2.0, 3.0) == 0  # cheaper and faster
    assert speedups.breakeven(10.0, 3.0, 2.0, 3.0) is None  # never faster
    assert speedups.breakeven(1.0, 4.0, 2.0, 3.0) is None


def test_kernel_and_wall_times_share_their_rounds(device: clspmv.Device,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    A = canonical_csr(generate("gen:poisson2d:k=12"), np.float64)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    calls: list[str] = []
    product = M.matvec

    def traced(x, y=None, **kw):
        calls.append("numpy" if isinstance(x, np.ndarray) else "device")
        return product(x, y, **kw)

    monkeypatch.setattr(M, "matvec", traced)
    monkeypatch.setattr(timing, "WARMUP_S", 0.0)  # the warm-up rounds asked for, no more
    kernel, wall = timing.time_kernels_and_wall(M, np.ones(A.shape[1]), warmup=1, repeat=4,
                                                wall_repeat=2)
    assert kernel.repeats == 4 and wall.repeats == 2
    assert 0 < kernel.min_ms <= kernel.median_ms and 0 < wall.min_ms <= wall.median_ms
    # a warm-up round, then each numpy product right after a device-resident one (a GPU's
    # spin may run a device-resident product again: clspmv.cover)
    assert [c for c, _ in itertools.groupby(calls)] == ["device", "numpy"] * 3 + ["device"]
    assert calls.count("numpy") == 3 and calls[-2:] == ["device"] * 2


def test_warm_up_goes_on_until_it_has_taken_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Short products warm up for WARMUP_S (at most MAX_WARMUP rounds), long ones for the
    rounds asked for. The rounds take their time on a clock of the test's own (a loaded
    machine's sleeps would take longer than asked)."""
    seen: list[int] = []
    clock = [0.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: clock[0])

    def one_round(i: int, pause: float) -> int:
        seen.append(i)
        clock[0] += pause
        return i

    assert timing._rounds(lambda i: one_round(i, 0.002), 2, 3, 10.0) == [0, 1, 2]
    warm = [i for i in seen if i < 0]
    assert warm == list(range(-1, -len(warm) - 1, -1))  # i = -1, -2, ... before the timed ones
    assert timing.WARMUP_S / 0.002 <= len(warm) <= timing.WARMUP_S / 0.002 + 1  # until 20 ms
    seen.clear()
    timing._rounds(lambda i: one_round(i, timing.WARMUP_S), 2, 1, 10.0)
    assert seen == [-1, -2, 0]
    seen.clear()
    monkeypatch.setattr(timing, "MAX_WARMUP", 4)
    timing._rounds(lambda i: one_round(i, 0.0), 1, 1, 10.0)
    assert seen == [-1, -2, -3, -4, 0]


def test_repeats_within_the_time_limit() -> None:
    assert timing.repeats_within(0.001, 10) == 10
    assert timing.repeats_within(2.0, 10, max_seconds=10) == 5
    assert timing.repeats_within(60.0, 10, max_seconds=10) == 3  # never fewer than 3
    assert timing.repeats_within(60.0, 2, max_seconds=10) == 2


def test_summarize() -> None:
    t = timing.summarize([3e6, 1e6, 2e6, 10e6])
    assert (t.median_ms, t.min_ms, t.max_ms, t.repeats) == (2.5, 1.0, 10.0, 4)
    with pytest.raises(ValueError, match="no timing samples"):
        timing.summarize([])


def test_copy_rate_is_the_best_copy_without_read_kernels(device: clspmv.Device,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The calibration's streaming prior: enqueue_copy and one copy kernel per vector type at
    one work-group size (no read kernel, no work-group sweep), the fastest in bytes per second
    read plus written."""
    built, times = [], iter([4000.0, 1000.0, 2000.0, 500.0, 3000.0] * 2)
    kernel = bandwidth.build.kernel

    def recorded(dev, source, name, *args, **options):
        built.append(name)
        return kernel(dev, source, name, *args, **options)
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda dev: 1 << 20)
    monkeypatch.setattr(bandwidth.build, "kernel", recorded)
    monkeypatch.setattr(bandwidth, "_median_ns", lambda enqueue, repeat: next(times))
    rate = bandwidth.copy_rate(device, repeat=1)
    kinds = sum(device.supports(dtype) for dtype, _ in bandwidth.COPY_VECTORS)
    assert built == ["copy_vec"] * kinds
    assert rate == 2 * (1 << 20) / 500.0 * 1e9  # the float16 copy's 500 ns, the least


def test_bandwidth_kernels_copy_and_read(device: clspmv.Device) -> None:
    bw = bandwidth.measure(device, repeat=2, nbytes=1 << 20)
    assert bw.copy_gbps == max(v for k, v in bw.variants.items() if not k.startswith("read"))
    assert "enqueue_copy" in bw.variants and any(k.startswith("copy float4") for k in bw.variants)
    assert bw.read_gbps > 0 and bw.buffer_bytes == 1 << 20
    # the copy kernel really copies, the read kernel writes nothing
    src = np.arange(1 << 12, dtype=np.float32)
    mf = cl.mem_flags
    a = cl.Buffer(device.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=src)
    b = cl.Buffer(device.context, mf.READ_WRITE, src.nbytes)
    found = cl.Buffer(device.context, mf.READ_WRITE | mf.COPY_HOST_PTR,
                      hostbuf=np.zeros(1, np.int32))
    from clspmv import build

    q = device.queue
    build.kernel(device, "copy.cl", "copy_vec", np.float32, WG=64, VEC=4)(
        q, (1024,), (64,), np.int64(1024), a, b)
    build.kernel(device, "copy.cl", "read_vec", np.float32, WG=64, VEC=4)(
        q, (1024,), (64,), np.int64(1024), a, found, np.float32(-1))
    out, flag = np.empty_like(src), np.empty(1, np.int32)
    cl.enqueue_copy(q, out, b)
    cl.enqueue_copy(q, flag, found)
    assert np.array_equal(out, src) and flag[0] == 0
    build.kernel(device, "copy.cl", "read_vec", np.float32, WG=64, VEC=4)(
        q, (1024,), (64,), np.int64(1024), a, found, np.float32(77))
    cl.enqueue_copy(q, flag, found)
    assert flag[0] == 1  # 77 is in the buffer


def test_bandwidth_leaves_out_a_variant_the_driver_cannot_create(device, monkeypatch) -> None:
    """A copy variant whose kernel the driver fails to create (PoCL 3.0's float16 copy on an
    AVX-512 CPU) is left out of the measurement, which goes on with the others."""
    real = bandwidth.build.kernel

    def failing(dev, file, name, dtype, **defines):
        if defines.get("VEC") == 16:
            raise cl.LogicError("clCreateKernel failed: INVALID_KERNEL_NAME")
        return real(dev, file, name, dtype, **defines)

    monkeypatch.setattr(bandwidth.build, "kernel", failing)
    bw = bandwidth.measure(device, repeat=2, nbytes=1 << 20)
    assert not any("float16" in k for k in bw.variants)
    assert any(k.startswith("copy float4") for k in bw.variants) and bw.copy_gbps > 0


def test_records_are_json_clean(tmp_path: Path) -> None:
    from clspmv.bench.records import Record, Results

    rec = Record("m", 1, 1, 1, "d", "cpu", "coo", "float32", kernel_ms=math.nan,
                 gflops=np.float64(2.5))
    assert rec.as_dict()["kernel_ms"] is None and type(rec.as_dict()["gflops"]) is float
    results = Results(tmp_path / "x", {"command": "c"})
    results.add(rec)
    data = json.loads((tmp_path / "x" / "results.json").read_text())
    assert data["meta"] == {"command": "c"} and data["records"][0]["gflops"] == 2.5
    assert {p.name for p in (tmp_path / "x").iterdir()} == {"results.json", "results.csv"}


def test_bandwidth_survives_a_clock_that_reports_no_time(monkeypatch) -> None:
    # a simulator's clock (Oclgrind without its checks) gives 0 ns for a small copy
    monkeypatch.setattr(bandwidth, "events_ns", lambda events: 0)
    assert bandwidth._median_ns(lambda: None, 3) == 1.0
