"""A baseline or an operation is added by registering it: the runner, the command line, the
records and the report take it without a line of their own (nothing names it)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import clspmv
from clspmv import bandwidth
from clspmv.bench import baselines, registry, timing
from clspmv.bench.operation import Case, Operation, check, set_ratio, set_times
from clspmv.cli import main

POISSON = "gen:poisson2d:k=6"


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))


class Twice(Operation):
    """A x computed twice in a row: a stand-in for a new operation."""

    name = "twice"
    fields = {"products": "products per measurement"}

    def active(self, plan) -> bool:
        return True

    def settings(self, plan) -> dict:
        return {"twice": True}

    def cases(self, plan, fmt: str) -> list[Case]:
        return [Case(self.name, "back-to-back")]

    def measure(self, rec, M, problem, case, settings) -> None:
        check(rec, problem, M.matvec(problem.x))
        set_times(rec, timing.time_kernels(M, problem.x, warmup=1, repeat=3))
        rec.extra["products"] = 2
        set_ratio(rec)


def test_a_registered_baseline_and_operation_run(device: clspmv.Device, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    fake = dataclasses.replace(baselines.SCIPY, name="fake", description="scipy again")
    monkeypatch.setitem(registry.BASELINES, "fake", fake)
    monkeypatch.setitem(registry.OPERATIONS, "twice", Twice())
    out = tmp_path / "run"
    argv = ["bench", POISSON, "--formats", "csr-scalar", "--dtype", "float32", "--repeat", "3",
            "--warmup", "1", "--device", f"{device.index[0]}:{device.index[1]}", "--out",
            str(out), "--quiet", "--baselines", "scipy,fake"]
    assert main(argv) == 0
    data = json.loads((out / "results.json").read_text())
    meta, records = data["meta"], data["records"]
    assert list(meta["definitions"]["baselines"]) == ["scipy", "mkl", "mkl-optimised",
                                                      "cusparse", "fake"]
    assert meta["settings"]["operations"] == ["twice"] and meta["settings"]["twice"]
    assert meta["formulas"]["twice: products"] == "products per measurement"
    assert [(r["format"], r["operation"]) for r in records] == [
        ("scipy", "spmv"), ("fake", "spmv"), ("csr-scalar", "spmv"), ("csr-scalar", "twice")]
    spmv, twice = records[2], records[3]
    assert set(spmv["speedups"]) == {"scipy", "fake"}
    assert twice["status"] == "ok" and twice["products"] == 2 and twice["ratio_to_spmv"] > 0
    assert twice["speedups"] == {}  # no baseline ran "twice"
    report = (out / "report.md").read_text()
    assert "× fake" in report and "fake: " in report
    header = (out / "results.csv").read_text().splitlines()[0].split(",")
    assert "speedup_vs_fake" in header and "products" in header


def test_unknown_baseline_names_the_registered_ones(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--baselines", "nope"])
    assert f"choose 'none' or from {', '.join(registry.BASELINES)}" in capsys.readouterr().err


def test_problem_reference_matches_scipy() -> None:
    from clspmv.bench.generators import poisson2d
    from clspmv.bench.reference import Problem
    from clspmv.row_stats import stats

    A = poisson2d(5)
    p = Problem.build("p", A, stats(A), np.dtype(np.float64), 3)
    np.testing.assert_allclose(p.reference, A @ p.x, rtol=1e-14)
    assert p.error_ratio(p.reference) == 0.0
