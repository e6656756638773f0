"""``clspmv bench --sweep`` end to end on a tiny suite, the grid, and the report section built
from records alone (its tables shaped as those of openmp-vs-cuda.txt). No timing assertions:
the checks are on what was recorded and how the tables follow from it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import clspmv
from clspmv import bandwidth
from clspmv.bench import metadata, runner, sources, sweep
from clspmv.bench.plan import Plan
from clspmv.bench.records import FIELDS, Results, device_label, key_of
from clspmv.cli import main
from clspmv.formats.base import UNROLL_FACTORS
from clspmv.formats.csr_adaptive import GPU_WORK_GROUP, CsrAdaptive, max_block_entries
from clspmv.report.common import Definitions
from clspmv.report.sweep import section

DEFS = Definitions(sweep_defaults=sweep.defaults())
"""Today's defaults, as a run records them."""

POISSON = "gen:poisson2d:k=12"  # 144 rows of 3 to 5 entries: every format runs
DENSEROWS = "gen:denserows:n=3000,w=2,count=2,long=1000"  # ELLPACK refuses it (padding)
SIZES = (32, 64)
"""Work-group sizes of the end-to-end sweep (the default grid has more; the tables' shape is the
same)."""
TABLE3 = ("| matrix", "row-major: 1 work-item", "row-major: best 1 row / work-group",
          "row-major: best 2D", "column-major: 1 work-item", "column-major: best T > 1", "best")


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bandwidth buffers of 8 MiB (the real ones are >= 256 MiB)."""
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)


def spec(device: clspmv.Device) -> str:
    return f"{device.index[0]}:{device.index[1]}"


# -- the grid -------------------------------------------------------------------------------------
def test_grid() -> None:
    grid = sweep.grid()
    assert len(grid) == len(set(grid))
    assert all(v.threads <= v.work_group_size for v in grid)
    for name in sweep.EXPERIMENTS:
        assert set(sweep.experiment(name)) <= set(grid)
    # threads: every T at every work-group size; unroll: every factor; ell-order: both orders
    assert {(v.threads, v.work_group_size) for v in sweep.experiment("threads")} == {
        (t, wg) for t in sweep.CSR_THREADS for wg in sweep.WORK_GROUP_SIZES}
    assert {v.unroll for v in sweep.experiment("unroll")} == set(UNROLL_FACTORS)
    assert {v.row_major for v in sweep.experiment("ell-order")} == {True, False}
    # adaptive: csr-adaptive at every work-group size, at the largest block size and at half
    adaptive = sweep.experiment("adaptive")
    assert {(v.work_group_size, v.block_divisor) for v in adaptive} == {
        (wg, d) for wg in sweep.WORK_GROUP_SIZES for d in (1, 2)}
    assert {v.format for v in adaptive} == {"csr-adaptive"}
    assert all(v.block_divisor == 0 for v in grid if v not in adaptive)
    # one upload per layout: the variants of one conversion are contiguous; each csr-adaptive
    # variant is a conversion of its own (8 shared layouts, 10 csr-adaptive conversions)
    conversions = [v.conversion for v in grid]
    assert len(set(conversions)) == 8 + len(adaptive) == 18
    assert len({v.conversion for v in adaptive}) == len(adaptive)
    assert all(conversions.index(c) == i or conversions[i - 1] == c
               for i, c in enumerate(conversions))
    assert len({(v.format, v.label) for v in grid}) == len(grid) == 115
    for v in grid:
        assert sweep.parse_label(v.label) == v.config
        assert v.config[:4] == (v.threads, v.work_group_size, v.unroll, v.order)
    # the labels of the three paper experiments are unchanged; csr-adaptive's add its block size
    assert sweep.parse_label("T=4 wg=128 unroll=2 col") == (4, 128, 2, "col", 0)
    assert sweep.Variant("adaptive", 0, 128, block_divisor=1).label == (
        "T=0 wg=128 unroll=1 col cap=max")
    assert sweep.Variant("adaptive", 0, 64, block_divisor=2).label == (
        "T=0 wg=64 unroll=1 col cap=max/2")
    assert sweep.parse_label("T=0 wg=64 unroll=1 col cap=max/2").block_divisor == 2
    assert sweep.Variant("csr", 1, 64).format == "csr-scalar"
    assert sweep.Variant("ell", 4, 64, 2, True).format == "ellr-t"
    with pytest.raises(ValueError, match="unknown sweep experiment 'x'; choose from threads"):
        sweep.experiment("x")


def test_adaptive_conversion(device: clspmv.Device) -> None:
    """csr-adaptive's variants convert at their own work-group size with block_entries the
    largest the device allows at it, or half of that; they are not retuned."""
    for v in sweep.experiment("adaptive", (32, 64)):
        params = v.convert_params(device, np.dtype(np.float64))
        layout = CsrAdaptive.layout_for(device, v.work_group_size)
        assert params == {"work_group_size": v.work_group_size,
                          "block_entries": max_block_entries(layout, 8) // v.block_divisor}
        assert not v.retunable
    assert sweep.Variant("csr", 4, 64).convert_params(device, np.dtype(np.float64)) == {
        "threads_per_row": 32}


# -- end to end -----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def swept(device: clspmv.Device, tmp_path_factory: pytest.TempPathFactory
          ) -> tuple[Path, list[dict], str]:
    """One tiny sweep: two matrices, float32, work-groups of 32 and 64."""
    out = tmp_path_factory.mktemp("sweep")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
        mp.setattr(sweep, "WORK_GROUP_SIZES", SIZES)
        assert main(["bench", POISSON, DENSEROWS, "--sweep", "--device", spec(device),
                     "--formats", "csr-scalar", "--dtype", "float32", "--baselines", "scipy",
                     "--repeat", "3", "--warmup", "1", "--quiet", "--out", str(out)]) == 0
    records = json.loads((out / "results.json").read_text())["records"]
    return out, records, device_label(device)


def test_sweep_records(swept, device: clspmv.Device) -> None:
    out, records, label = swept
    rows = [r for r in records if r["operation"] == "sweep"]
    grid = sweep.grid(SIZES)
    assert len(rows) == 2 * len(grid)  # every variant of each matrix, once
    assert len({key_of(r) for r in records}) == len(records)
    assert all(list(r)[:len(FIELDS)] == list(FIELDS) for r in records)
    assert {r["method"] for r in rows} == {v.label for v in grid}
    poisson = [r for r in rows if r["matrix"] == POISSON]
    assert all(r["status"] == "ok" and r["error_ratio"] <= 1 for r in poisson), [
        (r["method"], r["reason"]) for r in poisson if r["status"] != "ok"]
    for r in poisson:
        t, wg, unroll, order, divisor = sweep.parse_label(r["method"])
        assert r["gflops"] == pytest.approx(2 * r["nnz"] / r["kernel_ms"] / 1e6)
        assert f"work_group_size={wg}" in r["params"]
        if r["format"] == "csr-adaptive":
            cap = max_block_entries(CsrAdaptive.layout_for(device, wg), 4) // divisor
            assert t == 0 and f"block_entries={cap}," in r["params"]
            continue
        assert f"unroll={unroll}" in r["params"] and f"threads_per_row={t}" in r["params"]
        if r["format"].startswith("ellr"):
            assert f"row_major={int(order == 'row')}" in r["params"]
    assert {sweep.parse_label(r["method"])[1:] for r in poisson
            if r["format"] == "csr-adaptive"} == {
        (wg, 1, "col", d) for wg in SIZES for d in (1, 2)}
    dense = [r for r in rows if r["matrix"] == DENSEROWS]
    ell = [r for r in dense if r["format"].startswith("ellr")]
    assert ell and all(r["status"] == "skipped" and "would need" in r["reason"] for r in ell)
    assert all(r["status"] == "ok" for r in dense if r["format"].startswith("csr"))
    # its two rows of 1000 entries: split across work-groups where they exceed a block
    adaptive = [dict(p.split("=") for p in r["params"].split(", "))
                 for r in dense if r["format"] == "csr-adaptive"]
    assert {int(p["long_row_count"]) == 2 * (int(p["block_entries"]) < 1000) for p in adaptive} == {
        True}
    assert {p["long_row_count"] for p in adaptive} == {"0", "2"}  # both paths ran
    meta = json.loads((out / "results.json").read_text())["meta"]
    assert meta["settings"]["sweep"]["variants"] == len(grid)
    assert meta["settings"]["sweep"]["work_group_sizes"] == list(SIZES)


def test_sweep_report(swept, tmp_path: Path) -> None:
    out, records, label = swept
    text = (out / "report.md").read_text()
    part = text.split("## Kernel-parameter sweep")[1].split("\n## ")[0]
    here = part.split(f"### {label} — float32")[1]
    tables = [t for t in here.split("\n\n") if t.startswith("|")]
    threads, groups, unroll, order, adaptive, best, findings = tables[:7]
    # work-items per row: one row per matrix, one column per T
    assert [c.strip() for c in threads.splitlines()[0].split("|")[2:-1]] == [
        f"T={t}" for t in sweep.CSR_THREADS]
    assert len(threads.splitlines()) == 2 + 2 and len(groups.splitlines()) == 2 + 2
    # Table 2: one row per unroll factor and a count of cases; each column sums to its cases
    lines = unroll.splitlines()
    assert [line.split("|")[1].strip() for line in lines[2:]] == [
        *(f"unroll {u}" for u in UNROLL_FACTORS), "cases"]
    counts = [[int(c) for c in line.split("|")[2:-1]] for line in lines[2:]]
    assert [sum(col) for col in zip(*counts[:-1], strict=True)] == counts[-1]
    # Table 3: the paper's columns; the matrix ELLPACK refuses says so
    header = order.splitlines()[0]
    assert all(h in header for h in TABLE3)
    assert "none ran" in next(line for line in order.splitlines() if DENSEROWS in line)
    winner = next(line for line in order.splitlines() if POISSON in line).split("|")[-2].strip()
    assert winner in TABLE3[1:6]
    # csr-adaptive: each matrix at each block size, one column per work-group size, its
    # fastest in bold
    lines = adaptive.splitlines()
    assert [c.strip() for c in lines[0].split("|")[1:-1]] == ["matrix", "block", "wg 32",
                                                              "wg 64"]
    assert [[c.strip() for c in line.split("|")[1:3]] for line in lines[2:]] == [
        [m, b] for m in (POISSON, DENSEROWS) for b in ("max", "max/2")]
    for m in (POISSON, DENSEROWS):
        assert sum(line.count("**") for line in lines if f"| {m} " in line) == 2
    assert POISSON in best and "best configuration" in findings
    assert any(line.startswith("| csr-adaptive ") for line in findings.splitlines())
    assert "### Sweep configurations skipped, failed or wrong" in part
    assert f"also the kernel-parameter sweep ({len(sweep.grid(SIZES))} configurations)" in text
    # the report is a function of results.json alone
    assert main(["report", str(out / "results.json"), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "report.md").read_text() == text


def test_budget_and_work_group_limit(device: clspmv.Device, tmp_path: Path) -> None:
    """--max-seconds stops the sweep (what is left is skipped, with the reason); work-groups
    above the device's maximum are skipped, not attempted."""
    small = dataclasses.replace(device, max_work_group_size=64)
    plan = Plan(sources=[sources.resolve(POISSON)], devices=[small],
                formats=["csr-scalar"], dtypes=[np.dtype(np.float32)], baselines=[],
                repeat=3, warmup=1, progress=False, sweep=True)
    results = Results(tmp_path, metadata.run_meta(plan, "test"))
    runner.Runner(plan, results).run()
    rows = [r for r in results.records if r.operation == "sweep"]
    assert len(rows) == len(sweep.grid())
    big = [r for r in rows if sweep.parse_label(r.method)[1] > 64]
    assert big and all(r.status == "skipped" and "at most 64" in r.reason for r in big)
    assert all(r.status == "ok" for r in rows if r not in big)

    class SpentAfter(runner.Runner):
        """A runner whose budget is spent after ``calls`` checks (no clock involved)."""

        calls = 0

        def out_of_time(self) -> bool:
            SpentAfter.calls += 1
            return SpentAfter.calls > 6

    plan = dataclasses.replace(plan, devices=[device], max_seconds=1.0)
    results = Results(tmp_path, metadata.run_meta(plan, "test"))
    SpentAfter(plan, results).run()
    rows = [r for r in results.records if r.operation == "sweep"]
    assert len(rows) == len(sweep.grid())  # what was not measured is recorded as skipped
    ran = [r for r in rows if r.status == "ok"]
    assert 0 < len(ran) < 6
    assert all(r.status == "skipped" and "--max-seconds" in r.reason for r in rows[len(ran):])


# -- the tables from records alone ----------------------------------------------------------------
def _rec(matrix: str, fmt: str, label: str, gflops: float | None, status: str = "ok") -> dict:
    return {"matrix": matrix, "nnz": 10, "device": "dev (p)", "dtype": "float64",
            "format": fmt, "operation": "sweep", "method": label, "status": status,
            "reason": "" if status == "ok" else "why", "gflops": gflops, "pct_copy_bw": None}


def test_tables_follow_from_records() -> None:
    recs = [
        # unroll experiment, matrix a: unroll 2 wins at wg 64, unroll 1 at wg 256
        _rec("a", "csr-scalar", "T=1 wg=64 unroll=1 col", 1.0),
        _rec("a", "csr-scalar", "T=1 wg=64 unroll=2 col", 3.0),
        _rec("a", "csr-scalar", "T=1 wg=256 unroll=1 col", 2.0),
        _rec("a", "csr-scalar", "T=1 wg=256 unroll=2 col", 1.5),
        _rec("a", "csr-vector", "T=4 wg=64 unroll=1 col", 5.0),
        # ELLPACK: row-major 1 work-item, row-major T = wg (1D), row-major 2D, column-major
        _rec("a", "ellr", "T=1 wg=64 unroll=1 row", 0.5),
        _rec("a", "ellr-t", "T=32 wg=32 unroll=1 row", 0.7),
        _rec("a", "ellr-t", "T=4 wg=64 unroll=1 row", 6.0),
        _rec("a", "ellr", "T=1 wg=64 unroll=1 col", 4.0),
        _rec("a", "ellr", "T=1 wg=256 unroll=1 col", 4.5),
        _rec("a", "ellr-t", "T=4 wg=256 unroll=1 col", None, "wrong"),
    ]
    text = section(recs, DEFS)
    unroll = text.split("each unroll factor was the fastest.")[1].split("Kernels:")[0]
    cells = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
             for line in unroll.strip().splitlines()}
    assert cells[""] == ["wg 64", "wg 256"]
    assert cells["unroll 1"] == ["0", "1"] and cells["unroll 2"] == ["1", "0"]
    assert cells["cases"] == ["1", "1"]  # csr-vector ran one unroll factor: not a case
    order = next(line for line in text.split("Table 3")[1].splitlines() if line.startswith("| a"))
    cells = [c.strip() for c in order.split("|")[2:-1]]
    assert cells == ["0.50 (wg 64)", "0.70 (wg 32)", "6.00 (T=4, wg 64)", "4.50 (wg 256)",
                     "—", "row-major: best 2D"]  # the wrong configuration is never best
    best = next(line for line in text.split("Fastest configuration")[1].splitlines()
                if line.startswith("| a"))
    assert "ellr-t" in best and "T=4 wg=64 unroll=1 row" in best and "6.00" in best
    bad = text.split("### Sweep configurations skipped, failed or wrong")[1]
    assert [c.strip() for c in bad.strip().splitlines()[2].split("|")[1:-1]] == [
        "dev", "ellr-t", "wrong", "1", "a float64", "why"]
    assert section([{**recs[0], "operation": "spmv"}], DEFS) == ""


def test_adaptive_findings_against_its_defaults() -> None:
    """csr-adaptive's defaults in the findings and the fastest-configuration table: work-groups of
    GPU_WORK_GROUP on GPUs, of 256 elsewhere, the largest block size."""
    def adaptive(matrix: str, wg: int, cap: str, gflops: float, device_type: str) -> dict:
        return {**_rec(matrix, "csr-adaptive", f"T=0 wg={wg} unroll=1 col cap={cap}", gflops),
                "device_type": device_type}

    gpu = [adaptive(m, wg, cap, g, "gpu") for m in ("a", "b") for wg, cap, g in (
        (GPU_WORK_GROUP, "max", 4.0), (GPU_WORK_GROUP, "max/2", 2.0), (64, "max/2", 6.0),
        (256, "max", 3.0))]
    text = section(gpu, DEFS)
    findings = text.split("Findings:")[1]
    row = next(line for line in findings.splitlines() if line.startswith("| csr-adaptive"))
    assert [c.strip() for c in row.split("|")[1:-1]] == [
        "csr-adaptive", "—", "T=0 wg=64 unroll=1 col cap=max/2", "6.00", "1.50×", "2"]
    best = next(line for line in text.split("Fastest configuration")[1].splitlines()
                if line.startswith("| a"))
    assert "cap=max/2" in best and "1.50×" in best
    table = text.split("fastest of each matrix in bold.")[1].split("Fastest")[0]
    assert [c.strip() for c in table.strip().splitlines()[0].split("|")[1:-1]] == [
        "matrix", "block", "wg 64", f"wg {GPU_WORK_GROUP}", "wg 256"]
    cells = {tuple(c.strip() for c in line.split("|")[1:3]): [c.strip() for c in
                                                            line.split("|")[3:-1]]
             for line in table.strip().splitlines()[2:]}
    assert cells[("a", "max")] == ["—", "4.00", "3.00"]
    assert cells[("a", "max/2")] == ["**6.00**", "2.00", "—"]
    # on a CPU the default is work-groups of 256
    cpu = [{**r, "device_type": "cpu"} for r in gpu]
    row = next(line for line in section(cpu, DEFS).split("Findings:")[1].splitlines()
               if line.startswith("| csr-adaptive"))
    assert "2.00×" in row
