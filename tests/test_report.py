"""report.md and plots as pure functions of records; merging results of several runs."""

from __future__ import annotations

import gzip
import importlib.util
import json
import re
from pathlib import Path

import pytest

from clspmv import report
from clspmv.bench.records import Record, read_results, results_path
from clspmv.cli import main
from clspmv.report import crossover, tables
from clspmv.report.compat import PLAIN_MKL

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


def test_slowdown_table() -> None:
    """Worst kernel time / the fastest's on the same matrix, per format, refusals left out."""
    recs = [{"matrix": m, "format": f, "status": "ok", "kernel_ms": t}
            for m, f, t in (("a", "x", 1.0), ("a", "y", 3.0), ("b", "x", 8.0), ("b", "y", 2.0))]
    recs.append({"matrix": "b", "format": "z", "status": "skipped", "kernel_ms": None})
    lines = tables.slowdown_table(recs, ["a", "b"], ["x", "y", "z"]).splitlines()
    assert [line.split("|")[1:5] for line in lines[2:]] == [
        [" x        ", " 2          ", " 4.00                   ", " b    "],
        [" y        ", " 2          ", " 3.00                   ", " a    "]]


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


# -- results files that are malformed, old or partial (issue 46) -------------------------------
GOOD = rec("small", 1000, CPU, "csr-scalar", 0.01)
FIX = "rerun clspmv bench, or repair the file"


def results(records: object = (GOOD,), run: object = None) -> str:
    return json.dumps({"meta": meta("c") if run is None else run, "records": list(records)
                       if isinstance(records, tuple) else records})


def without(record: dict, name: str) -> dict:
    return {k: v for k, v in record.items() if k != name}


@pytest.mark.parametrize("name, content, message", [
    ("results.json", results((GOOD, without(GOOD, "device"))),
     "{path}: record 2 of 2 has no 'device' (every record has matrix, rows, cols, nnz, device, "
     f"device_type, format, dtype); {FIX}"),
    ("results.json", results((dict(GOOD, nnz="many"),)),
     f"{{path}}: record 1 of 1: 'nnz' is \"many\", expected a number; {FIX}"),
    ("results.json", results((dict(GOOD, kernel_ms=True),)),
     f"{{path}}: record 1 of 1: 'kernel_ms' is true, expected a number or null; {FIX}"),
    ("results.json", results((dict(GOOD, speedups={"scipy": "fast"}),)),
     f"{{path}}: record 1 of 1: 'speedups' is not an object of numbers; {FIX}"),
    ("results.json", results(([GOOD],)), f"{{path}}: record 1 of 1 is not an object; {FIX}"),
    ("results.json", results({"a": GOOD}), f"{{path}}: 'records' is not a list; {FIX}"),
    ("results.json", results(run=[]), f"{{path}}: 'meta' is not an object; {FIX}"),
    ("results.json", results(run=dict(meta("c"), devices=[{"label": 3}])),
     f"{{path}}: meta device 1 has no 'label' and 'type' texts; {FIX}"),
    ("results.json", results(run={"runs": [{"devices": "gpu"}]}),
     f"{{path}}: meta field 'devices' is \"gpu\", expected a list; {FIX}"),
    ("results.json", results(run=dict(meta("c"), thread_pools=3)),
     f"{{path}}: meta field 'thread_pools' is 3, expected a list or text; {FIX}"),
    ("results.json", results(run=dict(meta("c"), thread_pools=["mkl"])),
     f"{{path}}: meta field 'thread_pools' holds something other than objects; {FIX}"),
    ("results.json", "", "{path}: not a JSON file (Expecting value: line 1 column 1 (char 0)); "
     "pass a results.json written by clspmv bench"),
    ("results.json", results()[:40], "{path}: not a JSON file (Unterminated string starting at"),
    ("results.json", b"\xff\xfe{}", "{path}: not a JSON file ('utf-8' codec can't decode"),
    ("results.json", '{"records": []}',
     "{path}: not a clspmv results file (no 'meta' and 'records')"),
    ("results.json.gz", results(), "{path}: Not a gzipped file"),
    ("results.json.gz", gzip.compress(results().encode())[:-20],
     "{path}: the file is cut short (Compressed file ended before the end-of-stream marker was "
     f"reached); {FIX}"),
], ids=["no-device", "nnz-text", "time-bool", "speedup-text", "record-list", "records-object",
        "meta-list", "device-label", "merged-run", "pools-number", "pools-texts", "empty",
        "cut-short", "not-utf8", "no-meta", "not-gzip", "gzip-cut-short"])
def test_report_on_a_bad_results_file(name: str, content: str | bytes, message: str,
                                      tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert main(["report", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    assert captured.err.startswith(f"clspmv: error: {message.format(path=path)}")
    assert not (tmp_path / "report.md").exists()


def test_report_of_a_field_the_checks_leave_to_the_report(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    """An operation's own field of another kind: one line naming the error, no traceback."""
    path = tmp_path / "results.json"
    path.write_text(results((GOOD, dict(GOOD, operation="selection", chosen="ell",
                                        vs_fastest="fast"))))
    assert main(["report", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"clspmv: error: cannot make a report of {path}: a record or the meta holds a field of "
        "another kind than clspmv writes (ValueError: Unknown format code 'f' for object of type "
        f"'str'); {FIX}\n")


def test_report_on_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"clspmv: error: {tmp_path}: is a folder without results.json; pass a results.json "
        "written by clspmv bench (or its folder)\n")
    (tmp_path / "results.json").write_text(results())
    assert main(["report", str(tmp_path)]) == 0  # a run's folder stands for its results
    assert "1 records from 1 run" in capsys.readouterr().out
    assert "| small" in (tmp_path / "report.md").read_text()


def test_report_on_an_old_results_file(tmp_path: Path) -> None:
    """A record of the first runs: no kind, operation or speedups, a ``speedup_vs_`` field."""
    old = {k: GOOD[k] for k in ("matrix", "rows", "cols", "nnz", "device", "device_type",
                                "format", "dtype", "status", "kernel_ms", "gflops")}
    old["speedup_vs_scipy"] = 2.0
    (tmp_path / "results.json").write_text(json.dumps({"meta": {"command": "clspmv bench old"},
                                                       "records": [old]}))
    assert main(["report", str(tmp_path / "results.json")]) == 0
    text = (tmp_path / "report.md").read_text()
    assert "clspmv bench old" in text
    row = next(line for line in text.split(f"## {CPU} — float64")[1].splitlines()
               if line.startswith("| small"))
    assert "**0.20**" in row


def test_report_replaces_only_its_own_report(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    run, other = tmp_path / "run", tmp_path / "other"
    run.mkdir()
    (run / "results.json").write_text(results())
    (run / "report.md").write_text("old report")
    (run / "matmat_float64.png").write_text("old plot")  # a plot this report does not draw
    assert main(["report", str(run / "results.json")]) == 0
    assert (run / "report.md").read_text().startswith("#")
    assert not (run / "matmat_float64.png").exists()
    assert main(["report", str(run), "--out", str(run)]) == 0  # its own folder, named
    other.mkdir()
    (other / "results.json").write_text("another run")
    capsys.readouterr()
    assert main(["report", str(run / "results.json"), "--out", str(other)]) == 2
    assert capsys.readouterr().err == (
        f"clspmv: error: {other} holds the files of another run (results.json); choose a new "
        "folder with --out DIR, or pass --force to replace them\n")
    assert [p.name for p in other.iterdir()] == ["results.json"]
    assert main(["report", str(run / "results.json"), "--out", str(other), "--force"]) == 0
    assert sorted(p.name for p in other.iterdir() if p.suffix != ".png") == ["report.md"]


def test_merging_needs_a_folder_of_its_own(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a" / "results.json", tmp_path / "b" / "results.json"
    for path, device in ((a, CPU), (b, GPU)):
        path.parent.mkdir()
        path.write_text(results((dict(GOOD, device=device),)))
    kept = a.read_text()
    assert main(["report", str(a), str(b)]) == 2
    assert capsys.readouterr().err == (
        "clspmv: error: merging 2 results files makes a new results.json: name a folder for it "
        "with --out DIR\n")
    assert main(["report", str(a), str(b), "--out", str(a.parent)]) == 2
    assert capsys.readouterr().err == (
        f"clspmv: error: {a.parent} holds the files of another run (results.json); choose a new "
        "folder with --out DIR, or pass --force to replace them\n")
    assert a.read_text() == kept
    assert main(["report", str(a), str(b), "--out", str(a.parent), "--force"]) == 0
    metas, records = report.load([a])  # a's folder holds the merge now, as asked
    assert len(metas) == 2 and {r["device"] for r in records} == {CPU, GPU}


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="no matplotlib")
def test_a_report_knows_its_plots(tmp_path: Path) -> None:
    """Every plot drawn matches the patterns that replacing a report removes."""
    from clspmv.report.common import PLOTS, plot_name
    from clspmv.report.folder import files_of

    report.write(tmp_path, [meta("c")], RECORDS)
    drawn = sorted(tmp_path.glob("*.png"))
    assert drawn and files_of(tmp_path, PLOTS) == drawn
    with pytest.raises(ValueError, match="unknown plot kind 'spy': add it to PLOT_KINDS"):
        plot_name("spy", "float32")


# -- the committed reference reports --------------------------------------------------------------
REPORTS = Path(__file__).resolve().parents[1] / "reports"


BENCH_TOOLS = ("clspmv bench", "clspmv report")
"""The ``meta.tool`` of results that ``clspmv bench`` wrote or ``clspmv report`` merged: those
whose report.md :func:`clspmv.report.tables.render` makes (a tool's own results, such as
tools/cpu_vs_mkl.py's, come with a report of its own, tested with the tool)."""


def bench_reports() -> list[str]:
    """The committed report folders of :data:`BENCH_TOOLS`' results."""
    return sorted(p.name for p in REPORTS.glob("20*") if results_path(p).exists()
                  and read_results(results_path(p))["meta"].get("tool") in BENCH_TOOLS)


def test_the_committed_bench_reports_are_found() -> None:
    """No committed report is left out of the test below for lack of a known tool."""
    tools = {read_results(results_path(p))["meta"].get("tool") for p in REPORTS.glob("20*")
             if results_path(p).exists()}
    assert tools <= {*BENCH_TOOLS, "tools/cpu_vs_mkl.py"} and len(bench_reports()) >= 40


@pytest.mark.parametrize("folder", bench_reports())
def test_committed_results_render_their_report(folder: str) -> None:
    """Every committed results.json of clspmv bench (older field names and meta data included)
    renders the tables of its committed report.md: the report is a function of results.json
    alone, not of today's defaults. The plots are the ones the report lists (matplotlib is not
    run here)."""
    committed = (REPORTS / folder / "report.md").read_text(encoding="utf-8")
    plots = re.findall(r"^!\[([^\]]+)\]", committed.split("## Plots")[1], re.MULTILINE)
    metas, records = report.load([results_path(REPORTS / folder)])
    assert tables.render(metas, records, plots) == committed


def test_gzipped_results_read_as_plain(tmp_path: Path) -> None:
    """A results.json.gz (how the reference reports are committed) reads as the results.json it
    was made from; results_path prefers the plain file where both exist."""
    import gzip
    import shutil
    source = results_path(REPORTS / "2026-11-22-h200")
    with gzip.open(source, "rb") as fin, open(tmp_path / "results.json", "wb") as fout:
        shutil.copyfileobj(fin, fout)
    assert results_path(tmp_path) == tmp_path / "results.json"
    plain = report.load([tmp_path / "results.json"])
    assert plain == report.load([source]) and plain[1]
    shutil.copy(source, tmp_path / "results.json.gz")
    assert results_path(tmp_path) == tmp_path / "results.json"
    (tmp_path / "results.json").unlink()
    assert results_path(tmp_path) == tmp_path / "results.json.gz"


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


# -- issue 44: which MKL handle each column compares with; the thread pools ----------------------
MKL_RECORDS = [
    rec("m", 400, CPU, "ell", 1.0, speedups={"mkl": 2.0, "mkl-optimised": 1.5}),
    rec("m", 400, "c (MKL, 2 threads)", "mkl", 2.0, kind="baseline"),
    rec("m", 400, "c (MKL, 2 threads)", "mkl-optimised", 1.5, kind="baseline"),
]


def _legend(text: str, section: str) -> list[str]:
    """The bullets of ``section``'s baseline legend."""
    part = text.split(section)[1].split("\n## ")[0]
    return [line for line in part.splitlines() if line.startswith("- `")]


def test_baseline_columns_say_which_mkl_handle() -> None:
    """The summary and the Baselines section define each baseline of their columns as the run
    recorded it: MKL's plain handle and the hinted and optimised one."""
    texts = {"mkl": "MKL plain", "mkl-optimised": "MKL hinted + optimised", "cusparse": "gpu"}
    text = tables.render([dict(meta("c"), definitions={"baselines": texts})], MKL_RECORDS)
    expected = ["- `mkl`: MKL plain", "- `mkl-optimised`: MKL hinted + optimised"]
    assert _legend(text, "## Summary") == expected  # cusparse ran nowhere: not defined here
    assert _legend(text, "## Baselines\n") == expected
    assert "| × mkl kernel   | × mkl-optimised kernel   |" in _summary(text)


@pytest.mark.parametrize("definitions, expected", [
    ({"baselines": {"mkl": "through sparse_dot_mkl"}}, f"through sparse_dot_mkl; {PLAIN_MKL}"),
    (None, PLAIN_MKL),  # a run that recorded no definitions at all
])
def test_runs_before_the_optimised_baseline_had_the_plain_handle(definitions, expected) -> None:
    """Older runs did not say which MKL handle ``mkl`` was: the plain one, the only one."""
    run = meta("c") if definitions is None else dict(meta("c"), definitions=definitions)
    text = tables.render([run], MKL_RECORDS[:2])
    assert _legend(text, "## Summary") == [f"- `mkl`: {expected}"]
    assert PLAIN_MKL.startswith("MKL's plain handle: no mkl_sparse_set_mv_hint, no "
                                "mkl_sparse_optimize")


@pytest.mark.parametrize("pools, line", [
    ([{"user_api": "blas", "internal_api": "mkl", "prefix": "libmkl_rt", "version": "2026.2",
       "num_threads": 1, "threading_layer": "intel"},
      {"internal_api": "openmp", "prefix": "libiomp", "version": None, "num_threads": 2}],
     "- thread pools (threadpoolctl): mkl 2026.2 (libmkl_rt, intel): 1 thread; openmp "
     "(libiomp): 2 threads"),
    ([], "- thread pools (threadpoolctl): none loaded"),
    ("threadpoolctl is not installed", "- thread pools (threadpoolctl): threadpoolctl is not "
     "installed"),
])
def test_runs_section_names_the_thread_pools(pools: object, line: str) -> None:
    text = tables.render([dict(meta("c"), thread_pools=pools)], MKL_RECORDS)
    assert [s for s in text.splitlines() if s.startswith("- thread pools")] == [line]
    assert "thread pools" not in tables.render([meta("c")], MKL_RECORDS)  # older runs


# -- issue 14: the answer first, wall-time speedups, plain header ----------------------------------
WALL_RECORDS = [
    rec("m", 10**6, CPU, "csr-scalar", 1.0, wall_ms=4.0, speedups={"scipy": 3.0}),
    rec("m", 10**6, CPU, "ell", 2.0, wall_ms=3.0, speedups={"scipy": 1.5}),
    rec("m", 10**6, GPU, "ell", 0.1, wall_ms=2.0, speedups={"scipy": 30.0, "cusparse": 2.0}),
    rec("m", 10**6, "c (scipy, 1 thread)", "scipy", 3.0, kind="baseline"),
    rec("m", 10**6, "NVIDIA GPU", "cusparse", 0.2, kind="baseline"),
]


def _summary(text: str) -> str:
    return text.split("## Summary: the fastest format per matrix")[1].split("\n## ")[0]


def test_report_opens_with_the_summary() -> None:
    text = tables.render([meta("clspmv bench x")], WALL_RECORDS, ["summary.png"])
    assert text.index("## Summary") < text.index("## Runs") < text.index("## How the numbers")
    summary = _summary(text)
    assert "![summary.png](summary.png)" in summary
    cpu = summary.split(f"### On {CPU}, float64")[1].split("###")[0]
    header = next(line for line in cpu.splitlines() if line.startswith("| matrix"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "matrix", "fastest format", "GB/s", "% copy BW", "× scipy kernel", "× scipy wall",
        "× cusparse kernel"]
    row = next(line for line in cpu.splitlines() if line.startswith("| m "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    # fastest on the CPU: csr-scalar (1 ms); scipy 3 ms; wall: scipy 3 ms / 4 ms
    assert cells[1] == "csr-scalar" and cells[4] == "3.00" and cells[5] == "0.75"
    gpu = summary.split(f"### On {GPU}, float64")[1]
    row = next(line for line in gpu.splitlines() if line.startswith("| m "))
    assert [c.strip() for c in row.strip("|").split("|")][4:7] == ["30.00", "1.50", "2.00"]
    assert "auto's choice" not in summary  # no --formats auto records


def test_wall_speedup_needs_a_host_baseline_or_a_wall_time() -> None:
    from clspmv.report import summary
    from clspmv.report.common import Definitions

    index = summary.baseline_index(WALL_RECORDS)
    defs = Definitions.of([meta("x")])
    gpu = WALL_RECORDS[2]
    assert summary.wall_speedup(gpu, "scipy", index, defs) == pytest.approx(1.5)
    assert summary.wall_speedup(gpu, "cusparse", index, defs) is None  # kernel-only timing
    with_wall = dict(WALL_RECORDS[4], wall_ms=0.5)
    index[("m", "float64", "cusparse")] = with_wall
    assert summary.wall_speedup(gpu, "cusparse", index, defs) == pytest.approx(0.25)


def test_best_table_and_speedups_show_wall_columns() -> None:
    text = tables.render([meta("clspmv bench x")], WALL_RECORDS)
    best = text.split(f"## {CPU} — float64")[1].split("### Conversion")[0]
    assert "× scipy wall" in best
    section = text.split("## Speedup of each device's best format")[1].split("\n## ")[0]
    assert "Some CPU × scipy kernel" in section and "Some CPU × scipy wall" in section
    assert "Some GPU × cusparse kernel" in section and "× cusparse wall" not in section


def test_auto_choice_column_when_the_run_chose() -> None:
    records = [
        rec("m", 10**6, CPU, "csr-blocks", 1.2, params="auto: long rows; rows=4"),
        rec("m", 10**6, CPU, "csr-scalar", 1.0)]
    summary = _summary(tables.render([meta("x")], records))
    row = next(line for line in summary.splitlines() if line.startswith("| m "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "csr-scalar" and cells[-2:] == ["csr-blocks", "0.83"]  # 1.0 / 1.2


def test_auto_column_from_the_selection_record() -> None:
    """--selection: auto's choice and the fastest's time over its own come from the selection
    record (vs_fastest = fastest / auto), in the orientation of the Selection section: the same
    case shows the same ratio, under the same name, in both (issue 43)."""
    selection = rec("m", 10**6, CPU, "auto", None, operation="selection")
    selection.update(chosen="ell", chosen_ms=1.25, fastest="csr-scalar", fastest_ms=1.0,
                     vs_fastest=0.8)
    records = [rec("m", 10**6, CPU, "ell", 1.25), rec("m", 10**6, CPU, "csr-scalar", 1.0),
               selection]
    text = tables.render([meta("x")], records)
    summary = _summary(text)
    header = next(line for line in summary.splitlines() if line.startswith("| matrix "))
    row = next(line for line in summary.splitlines() if line.startswith("| m "))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert [c.strip() for c in header.strip("|").split("|")][-1] == "fastest / auto"
    assert cells[1] == "csr-scalar" and cells[-2:] == ["ell", "0.80"]
    assert "`fastest / auto`: the fastest format's kernel time / that of the format" in summary
    section = text.split("## Selection")[1]
    header = next(line for line in section.splitlines() if line.startswith("| matrix "))
    row = next(line for line in section.splitlines() if line.startswith("| m "))
    names = [c.strip() for c in header.strip("|").split("|")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[names.index("fastest / auto")] == "0.80×"
    assert "auto / fastest" not in text


def test_header_is_plain_text() -> None:
    m = meta("clspmv bench gen:x")
    m["settings"] = {"suite": None, "formats": "all", "dtypes": ["float64", "float32"],
                     "baselines": ["scipy", "mkl"], "repeat": 10, "warmup": 2}
    m["versions"] = {"clspmv": "9.9"}
    text = tables.render([m], RECORDS)
    settings = next(line for line in text.splitlines() if line.startswith("- settings"))
    assert "suite none (matrices named on the command line)" in settings
    assert "value types float64, float32" in settings and "baselines scipy, mkl" in settings
    assert "[" not in settings and "None" not in settings
    assert ("- code: clspmv 9.9 (installed package, or a copy without .git: no git commit "
            "known)") in text
    m["git"] = {"commit": "abc", "modified": True, "installed": True, "checkout": "/src"}
    text = tables.render([m], RECORDS)
    assert ("- code: git commit abc (with local changes) of the checkout /src; clspmv 9.9 ran "
            "from an installed package") in text


def test_papers_cited_by_title_not_file() -> None:
    m = meta("x")
    m["method"] = ["Wall time: as in the pJDS paper, pjds-multigpu.txt §2.2."]
    m["formulas"] = {"breakeven": "as in `naive-spmv-transpose.txt`"}
    text = tables.render([m], RECORDS)
    assert ".txt" not in text
    assert "“Sparse matrix-vector multiplication on GPGPU clusters”" in text
    assert "Steinberger, Derler, Zayer, Seidel: “How naive is naive SpMV on the GPU?”" in text


def test_no_paper_files_in_user_visible_text() -> None:
    from clspmv.bench import methodology
    from clspmv.cli import build_parser

    root = Path(__file__).resolve().parents[1]
    visible = [build_parser().format_help(), (root / "README.md").read_text(encoding="utf-8"),
               *methodology.METHOD, *methodology.FORMULAS.values()]
    for sub in ("bench", "stats"):
        with pytest.raises(SystemExit):
            main([sub, "--help"])
    for name in methodology.PAPERS:
        assert not any(f"{name}.txt" in text for text in visible), name


def test_results_files_are_written_like_open_would(tmp_path: Path) -> None:
    import os

    from clspmv.bench.records import write_csv, write_json

    old = os.umask(0o022)
    try:
        write_json(tmp_path / "results.json", {}, [])
        write_csv(tmp_path / "results.csv", [])
        os.umask(0o027)
        write_json(tmp_path / "strict.json", {}, [])
    finally:
        os.umask(old)
    assert (tmp_path / "results.json").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "results.csv").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "strict.json").stat().st_mode & 0o777 == 0o640


def test_git_info_of_the_current_checkout(tmp_path: Path) -> None:
    from clspmv.bench import metadata

    here = metadata.git_info()
    assert here is None or len(here["commit"]) == 40
    if here is not None and here.get("installed"):
        # clspmv installed from a wheel (the GPU node): the commit is the current folder's
        # checkout's, and a folder outside any checkout has none
        assert metadata.git_info(tmp_path) is None
    else:
        assert metadata.git_info(tmp_path) == here  # the package's checkout wins over the cwd


def test_format_styles_are_distinct_and_stable() -> None:
    from clspmv.report import plots

    formats = [f"f{i}" for i in range(20)]
    styles = plots.style_map(formats)
    assert len({(s["color"], s["hatch"]) for s in styles.values()}) == 20
    assert plots.style_map(formats[:13]) == {f: styles[f] for f in formats[:13]}


@pytest.mark.skipif(importlib.util.find_spec("matplotlib") is None, reason="no matplotlib")
def test_summary_plot_is_drawn(tmp_path: Path) -> None:
    path = report.write(tmp_path, [meta("c")], WALL_RECORDS)
    names = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "summary.png" in names and "speedup_float64.png" in names
    text = path.read_text()
    assert text.index("![summary.png](summary.png)") < text.index("## Runs")
