"""``clspmv bench --dtype mixed|all`` on tiny matrices: mixed records, their float32 baselines,
their accuracy next to float32's, and the report's mixed sections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import clspmv
from clspmv import bandwidth
from clspmv.bench.methodology import MIXED
from clspmv.bench.records import device_label
from clspmv.cli import main

MIXED_NOTE = MIXED["note"]

MATRICES = ("gen:poisson2d:k=12", "gen:random:n=3000,k=200")  # 5 and 200 entries per row
FORMATS = ("csr-vector", "coo", "sell")
EPS32 = float(np.finfo(np.float32).eps)


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))


def run(out: Path, device: clspmv.Device, dtype: str) -> list[dict]:
    argv = ["bench", *MATRICES, "--formats", ",".join(FORMATS), "--dtype", dtype,
            "--baselines", "scipy", "--repeat", "2", "--warmup", "1", "--device",
            f"{device.index[0]}:{device.index[1]}", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    return json.loads((out / "results.json").read_text())["records"]


def test_bench_all_dtypes_reports_mixed(device: clspmv.Device, tmp_path: Path) -> None:
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64: mixed records are skipped (test below)")
    records = run(tmp_path / "all", device, "all")
    fmts = [r for r in records if r["kind"] == "format"]
    base = [r for r in records if r["kind"] == "baseline"]
    # the float32 baselines ran once and serve float32 and mixed; none is called mixed
    assert sorted(r["dtype"] for r in base) == sorted(["float64", "float32"] * len(MATRICES))
    assert {r["dtype"] for r in fmts} == {"float64", "float32", "mixed"}
    for matrix in MATRICES:
        scipy32 = next(r for r in base if r["matrix"] == matrix and r["dtype"] == "float32")
        for fmt in FORMATS:
            one = {r["dtype"]: r for r in fmts if r["matrix"] == matrix and r["format"] == fmt}
            mixed, f32 = one["mixed"], one["float32"]
            assert mixed["status"] == "ok" and mixed["error_ratio"] <= 1
            # the bytes are float32's, the speedups are against float32's baselines
            assert mixed["min_bytes"] == f32["min_bytes"]
            assert mixed["speedups"]["scipy"] == pytest.approx(
                scipy32["kernel_ms"] / mixed["kernel_ms"])
            # accuracy: one rounding of the float64 sum (COO: of a few run sums)
            assert 0 <= mixed["max_rel_error"] <= (8 if fmt == "coo" else 1) * EPS32
            assert mixed["max_rel_error"] <= f32["max_rel_error"]
            assert one["float64"]["max_rel_error"] < 1e-12
    # on the rows of 200 entries float32's error exceeds mixed's row formats' several times
    long32 = next(r for r in fmts if r["matrix"] == MATRICES[1] and r["format"] == "csr-vector"
                  and r["dtype"] == "float32")
    long_mixed = next(r for r in fmts if r["matrix"] == MATRICES[1]
                      and r["format"] == "csr-vector" and r["dtype"] == "mixed")
    assert long_mixed["max_rel_error"] * 2 < long32["max_rel_error"]

    report = (tmp_path / "all" / "report.md").read_text()
    label = device_label(device)
    assert f"## {label} — mixed" in report and MIXED_NOTE in report
    section = report.split("## Mixed precision: float32 values, float64 sums")[1]
    section = section.split("\n## ")[0]
    assert f"### {label}" in section
    for matrix in MATRICES:
        row = next(line for line in section.splitlines() if line.startswith(f"| {matrix} "))
        cells = [c.strip() for c in row.strip("|").split("|")]
        worst = {d: max(r["max_rel_error"] for r in fmts
                        if r["matrix"] == matrix and r["dtype"] == d) for d in
                 ("float32", "mixed", "float64")}
        assert cells[4:7] == [f"{worst[d]:.2e}" for d in ("float32", "mixed", "float64")]
    # the speedup section compares mixed with the float32 baselines
    speedups = report.split("## Speedup of each device's best format")[1].split("\n## ")[0]
    mixed_part = speedups.split("### mixed")[1]
    assert "No baseline ran" not in mixed_part and "× scipy" in mixed_part


def test_bench_mixed_alone_runs_float32_baselines(device: clspmv.Device, tmp_path: Path) -> None:
    records = run(tmp_path / "mixed", device, "mixed")
    assert {r["dtype"] for r in records if r["kind"] == "baseline"} == {"float32"}
    fmts = [r for r in records if r["kind"] == "format"]
    assert {r["dtype"] for r in fmts} == {"mixed"} and len(fmts) == len(MATRICES) * 3
    if device.fp64:
        assert all(r["status"] == "ok" and r["speedups"]["scipy"] for r in fmts)
    else:
        assert all(r["status"] == "skipped" and "dtype='mixed' needs" in r["reason"]
                   for r in fmts)


def test_bench_rejects_unknown_dtype(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--dtype", "half"])
    assert "invalid choice: 'half'" in capsys.readouterr().err


def test_bench_mixed_other_operations(device: clspmv.Device, tmp_path: Path) -> None:
    """A^T x (both methods), A X and CG of a mixed matrix: recorded as mixed, checked, and in
    the report's operation sections."""
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64")
    out = tmp_path / "ops"
    argv = ["bench", MATRICES[0], "--formats", "csr-vector,coo", "--dtype", "mixed",
            "--transpose", "--matmat", "3", "--solver", "cg", "--solver-iterations", "5",
            "--baselines", "scipy", "--repeat", "2", "--warmup", "1", "--device",
            f"{device.index[0]}:{device.index[1]}", "--out", str(out), "--quiet"]
    assert main(argv) == 0
    records = json.loads((out / "results.json").read_text())["records"]
    mine = [r for r in records if r["kind"] == "format"]
    assert {r["operation"] for r in mine} == {"spmv", "transpose", "matmat", "solver"}
    assert all(r["dtype"] == "mixed" and r["status"] == "ok" for r in mine), [
        (r["format"], r["operation"], r["status"], r["reason"]) for r in mine
        if r["status"] != "ok"]
    assert all(r["error_ratio"] <= 1 for r in mine)
    report = (out / "report.md").read_text()
    assert "## Transpose products" in report and "## Solvers" in report
    # mixed is compared with the float32 baselines in the operation sections too
    fastest = report.split("### Fastest A^T x per device — mixed")[1].split("\n### ")[0]
    assert "× scipy" in fastest
    solvers = report.split("## Solvers")[1].split("\n## ")[0].split("### mixed")[1]
    (row,) = [line for line in solvers.splitlines() if "| csr-vector " in line]
    scipy_ms = [c.strip() for c in row.strip("|").split("|")][7]
    assert scipy_ms not in ("", "—")
