"""What the ``clspmv`` command says about itself is true (issue 43, "small untruths"): the
default device, how ``--formats auto`` chooses, the generators, the stats columns; the library's
notes reach the CLI's stderr through logging; a report's old files are removed once and its run
folder found once (issue 46 review)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from clspmv import cli, report
from clspmv.bench import generators
from clspmv.cli import DEFAULT_DEVICE, main
from clspmv.report import folder
from clspmv.row_stats import COLUMNS, LEGEND


def help_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The help of ``clspmv ARGV --help``, its lines joined (argparse wraps them)."""
    with pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(capsys.readouterr().out.split())


def test_the_default_device_is_the_rule_of_select_device(capsys) -> None:
    """calibrate and bench name the rule clspmv.device.select_device applies (not "the first
    GPU"), in the words of ``clspmv devices``."""
    assert DEFAULT_DEVICE == ("$CLSPMV_DEVICE, else $PYOPENCL_CTX, else the first GPU, else the "
                              "fastest CPU implementation that clspmv calibrate or doctor "
                              "compared, else the first CPU; the Oclgrind simulator only when "
                              "named")
    for command in ("calibrate", "bench"):
        assert f"(default: {DEFAULT_DEVICE})" in help_text(capsys, command), command
    assert main(["devices"]) == 0
    assert f"* the default device ({DEFAULT_DEVICE})" in capsys.readouterr().out


def test_auto_is_said_to_be_the_calibrated_model(capsys) -> None:
    text = help_text(capsys, "bench")
    assert ("auto: per matrix, the format the device's calibrated time model of each format "
            "predicts fastest") in text
    assert "row statistics and device type" not in text


def test_the_generators_listed_are_the_registry(capsys, monkeypatch) -> None:
    """Every registered generator, stacked included, in bench's and stats' help; one added to
    the registry is listed without another edit."""
    names = ", ".join(generators.GENERATORS)
    assert "stacked" in names
    for command in ("bench", "stats"):
        assert f"generators: {names})" in help_text(capsys, command), command
    monkeypatch.setitem(generators.GENERATORS, "spiral", generators.GENERATORS["banded"])
    assert f"generators: {names}, spiral)" in help_text(capsys, "stats")


def test_stats_explains_its_columns(capsys) -> None:
    assert main(["stats", "gen:poisson2d:k=4"]) == 0
    out = capsys.readouterr().out
    table, legend = out.rstrip("\n").split("\n\n")
    assert table.splitlines()[0].split() == list(COLUMNS)
    assert [line.split()[0] for line in legend.splitlines()] == list(COLUMNS[1:])
    assert set(LEGEND) == set(COLUMNS[1:]) and all(LEGEND.values())
    assert ["σ", "standard deviation of the row lengths"] in [
        line.split(None, 1) for line in legend.splitlines()]


# -- the library's notes: logged; shown by the CLI alone -------------------------------------
def test_notes_reach_stderr_only_while_a_command_runs(capsys, monkeypatch) -> None:
    def noting(args) -> int:
        logging.getLogger("clspmv.cache_files").info("waiting for %s", "the calibration of x")
        logging.getLogger("clspmv.cache_files").debug("a detail")
        return 0

    monkeypatch.setattr(cli, "cmd_devices", noting)
    package = logging.getLogger("clspmv")
    handlers, level = list(package.handlers), package.level
    assert main(["devices"]) == 0
    assert capsys.readouterr().err == "clspmv: waiting for the calibration of x\n"
    assert package.handlers == handlers and package.level == level  # as before the command
    logging.getLogger("clspmv.cache_files").info("after the command")
    assert "after the command" not in capsys.readouterr().err


# -- clspmv report: old files removed once, the run's folder found once -----------------------
GOOD = {"matrix": "small", "rows": 10, "cols": 10, "nnz": 100, "device": "c", "device_type": "cpu",
        "format": "csr-scalar", "dtype": "float64", "status": "ok", "kernel_ms": 0.01,
        "gflops": 0.2}


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """A run's folder: its results, an old report and a plot the new report does not draw."""
    here = tmp_path / "run"
    here.mkdir()
    (here / "results.json").write_text(json.dumps({"meta": {"command": "clspmv bench x"},
                                                   "records": [GOOD]}))
    (here / "report.md").write_text("old report")
    (here / "matmat_float64.png").write_text("old plot")
    return here


@pytest.fixture
def removals(monkeypatch) -> list[list[str]]:
    """The names of the files each removal of the report's folder step deleted."""
    calls: list[list[str]] = []
    real = folder.remove

    def counted(files):
        calls.append(sorted(p.name for p in files))
        return real(files)

    monkeypatch.setattr(folder, "remove", counted)
    monkeypatch.setattr(report, "remove", counted, raising=False)  # where it imported the name
    return calls


def test_a_report_in_its_own_folder_removes_the_old_once(run, removals) -> None:
    assert main(["report", str(run)]) == 0
    assert removals == [["matmat_float64.png", "report.md"]]
    assert not (run / "matmat_float64.png").exists()  # a plot the new report did not draw
    assert (run / "report.md").read_text().startswith("#")


def test_a_report_into_another_folder_removes_once(run, tmp_path, removals) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.json").write_text("another run")
    (other / "report.md").write_text("its report")
    assert main(["report", str(run / "results.json"), "--out", str(other), "--force"]) == 0
    assert removals == [["report.md", "results.json"]]  # by claim; the writing removes nothing
    assert (run / "report.md").read_text() == "old report"  # the run's own folder untouched


def test_the_run_folder_is_resolved_by_the_reader_alone(run, monkeypatch) -> None:
    """cmd_report takes the folder of its first argument as given; read_json alone resolves
    the results file in it."""
    from clspmv.bench import records

    callers: list[str] = []
    real = records.results_path

    def traced(where):
        callers.append(sys._getframe(1).f_globals["__name__"])
        return real(where)

    monkeypatch.setattr(records, "results_path", traced)
    assert main(["report", str(run)]) == 0
    assert callers and set(callers) == {"clspmv.bench.records"}
