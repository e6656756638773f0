"""report.md and plots as pure functions of records; merging results of several runs."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from clspmv import report
from clspmv.bench.records import Record
from clspmv.cli import main
from clspmv.report import crossover, tables

CPU = "Some CPU (PoCL)"
GPU = "Some GPU (NVIDIA CUDA)"


def rec(matrix: str, nnz: int, device: str, fmt: str, ms: float | None, *,
        dtype: str = "float64", status: str = "ok", kind: str = "format", reason: str = "",
        **more: object) -> dict:
    device_type = "gpu" if "GPU" in device else "cpu"
    r = Record(matrix=matrix, rows=nnz // 4, cols=nnz // 4, nnz=nnz, device=device,
               device_type=device_type, format=fmt, dtype=dtype, kind=kind, status=status,
               reason=reason, kernel_ms=ms, av=4.0, max_minus_av=1.0, sigma=0.5,
               pct_sigma_over_av=12.5, pct_ell_hyb=100.0, **more)
    if ms:
        r.gflops = 2 * nnz / ms / 1e6
    return r.as_dict()


def meta(command: str) -> dict:
    return {"command": command, "host": {"name": "h", "cpu": "c", "cores": 2, "os": "o"},
            "devices": [], "settings": {}, "versions": {}, "git": None, "started": "s",
            "finished": "f", "formulas": {"gflops": "2 * nnz / kernel time"}}


RECORDS = [
    rec("small", 1000, CPU, "csr-scalar", 0.01), rec("small", 1000, CPU, "ell", 0.02),
    rec("small", 1000, GPU, "csr-scalar", 0.05), rec("small", 1000, GPU, "ell", 0.04),
    rec("big", 10**7, CPU, "csr-scalar", 10.0), rec("big", 10**7, CPU, "ell", None,
                                                   status="skipped", reason="too much padding"),
    rec("big", 10**7, GPU, "csr-scalar", 0.5), rec("big", 10**7, GPU, "ell", 0.3),
    rec("big", 10**7, "c (scipy, 1 thread)", "scipy", 20.0, kind="baseline"),
    rec("big", 10**7, "c (MKL)", "mkl", None, kind="baseline", status="absent",
        reason="sparse_dot_mkl cannot be imported"),
]


def test_gflops_table_marks_the_best() -> None:
    text = tables.render([meta("clspmv bench x")], RECORDS)
    cpu = text.split(f"## {CPU} — float64")[1].split("### Best")[0]
    row = next(line for line in cpu.splitlines() if line.startswith("| small"))
    assert "**0.20**" in row and "| 0.10 " in row  # 2*1000/0.01 ms = 0.2 GFLOP/s
    row = next(line for line in cpu.splitlines() if line.startswith("| big"))
    assert "**2.00**" in row and "skipped" in row
    assert "too much padding" in text and "sparse_dot_mkl cannot be imported" in text
    assert "clspmv bench x" in text


def test_crossover() -> None:
    text = tables.render([meta("c")], RECORDS)
    section = text.split("## CPU vs GPU crossover")[1].split("\n## ")[0]
    rows = [line for line in section.splitlines() if line.startswith("| small")
            or line.startswith("| big")]
    assert "Some CPU csr-scalar" in rows[0] and rows[0].rstrip(" |").endswith("CPU")
    assert "Some GPU ell" in rows[1] and rows[1].rstrip(" |").endswith("GPU")
    assert "Crossover: the GPU is faster on every matrix from 10000000 entries up; the CPU " \
           "wins at 1000 entries." in section


@pytest.mark.parametrize("wins, sentence", [
    ([(1, True), (2, True)], "The GPU is faster on every matrix (from 1 entries up)."),
    ([(1, False), (2, False)], "The CPU is faster on every matrix."),
    ([(1, True), (2, False)], "The CPU is faster on the largest matrix"),
    ([(1, False), (2, True), (3, False), (4, True), (5, True)],
     "Crossover: the GPU is faster on every matrix from 4 entries up; the CPU wins at 3"),
    ([], "No matrix ran on both"),
])
def test_crossover_sentence(wins: list[tuple[int, bool]], sentence: str) -> None:
    assert crossover.crossover_sentence(wins).startswith(sentence)


def test_speedups_and_plots_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    records = [dict(r) for r in RECORDS]
    for r in records:
        if r["kind"] == "format" and r["kernel_ms"] and r["matrix"] == "big":
            r["speedup_vs_scipy"] = 20.0 / r["kernel_ms"]
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    path = report.write(tmp_path, [meta("c")], records)
    text = path.read_text()
    assert report.PLOT_HINT in text and not list(tmp_path.glob("*.png"))
    section = text.split("## Speedup of each device's best format")[1].split("\n## ")[0]
    assert "Some CPU × scipy" in section and "Some GPU × scipy" in section
    big = next(line for line in section.splitlines() if line.startswith("| big"))
    assert "| 2.00 " in big and "| 66.67 " in big  # 20 / 10 on the CPU, 20 / 0.3 on the GPU


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="no matplotlib")
def test_plots_are_drawn(tmp_path: Path) -> None:
    path = report.write(tmp_path, [meta("c")], RECORDS)
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    # no speedups in RECORDS: no speedup plot
    assert names == ["bandwidth_float64.png", "gflops_float64.png"]
    for name in names:
        assert f"![{name}]({name})" in path.read_text()


def test_report_merges_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = [r for r in RECORDS if r["device"] != GPU]
    second = [r for r in RECORDS if r["device"] == GPU]
    changed = dict(first[0], kernel_ms=0.005, gflops=0.4)  # the same key, measured again
    (tmp_path / "a.json").write_text(json.dumps({"meta": meta("clspmv bench --suite cpu"),
                                                 "records": first}))
    (tmp_path / "b.json").write_text(json.dumps({"meta": meta("clspmv bench --suite anchors"),
                                                 "records": second + [changed]}))
    out = tmp_path / "merged"
    assert main(["report", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out",
                 str(out)]) == 0
    assert f"{len(RECORDS)} records from 2 runs" in capsys.readouterr().out
    text = (out / "report.md").read_text()
    assert "### Run 1" in text and "### Run 2" in text
    assert "clspmv bench --suite cpu" in text and "clspmv bench --suite anchors" in text
    assert f"## {CPU} — float64" in text and f"## {GPU} — float64" in text
    metas, records = report.load([tmp_path / "a.json", tmp_path / "b.json"])
    assert len(metas) == 2 and len(records) == len(RECORDS)
    (small,) = [r for r in records if r["matrix"] == "small" and r["device"] == CPU
                and r["format"] == "csr-scalar"]
    assert small["kernel_ms"] == 0.005  # the later file wins
    # the merge is saved beside the report, and reads back as the same two runs
    again_metas, again = report.load([out / "results.json"])
    assert again_metas == metas and again == records
    assert (out / "results.csv").read_text().count("\n") == len(RECORDS) + 1


# -- the committed reference reports --------------------------------------------------------------
REPORTS = Path(__file__).resolve().parents[1] / "reports"


@pytest.mark.parametrize("folder", sorted(p.name for p in REPORTS.glob("20*")
                                          if (p / "results.json").exists()))
def test_committed_results_render_their_report(folder: str) -> None:
    """Every committed results.json (older field names and meta data included) renders the
    tables of its committed report.md: the report is a function of results.json alone, not of
    today's defaults. The plots are the ones the report lists (matplotlib is not run here)."""
    committed = (REPORTS / folder / "report.md").read_text(encoding="utf-8")
    plots = re.findall(r"^!\[([^\]]+)\]", committed.split("## Plots")[1], re.MULTILINE)
    metas, records = report.load([REPORTS / folder / "results.json"])
    assert tables.render(metas, records, plots) == committed


def test_old_speedup_fields_are_read() -> None:
    """Records of older runs with speedup_vs_<name> fields: read into ``speedups``."""
    from clspmv.bench.records import upgrade

    old = {"matrix": "m", "device": "d", "format": "ell", "dtype": "float64",
           "speedup_vs_scipy": 2.0, "speedup_vs_mkl": None}
    new = upgrade(old)
    assert new["speedups"] == {"scipy": 2.0} and "speedup_vs_scipy" not in new
    assert new["operation"] == "spmv" and upgrade(new) is new


def test_definitions_come_from_the_runs_meta() -> None:
    """The formats' order and the baselines' columns are those the run recorded, not the
    library's of today; a run that recorded none gets the ones of its day (report.compat)."""
    recs = [rec("m", 400, CPU, "ell", 1.0), rec("m", 400, CPU, "coo", 2.0),
            rec("m", 400, CPU, "other", 3.0, kind="baseline")]
    recs[0]["speedups"] = {"other": 3.0}
    meta = {"definitions": {"baselines": {"other": "a library"}, "formats": ["ell", "coo"]}}
    text = tables.render([meta], recs)
    assert "| matrix   | ell      | coo   |" in text
    assert "× other" in text and "× scipy" not in text
    old = tables.render([{}], recs)
    assert "| matrix   | coo   | ell      |" in old and "× scipy" in old
