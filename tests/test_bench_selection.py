"""``clspmv bench --selection``: auto's choice (the library's, clspmv.model.select) against every
format measured, its records, the report's Selection section and the predicted-vs-measured
plot. The numbers come from a stored-free quick-default calibration (CLSPMV_CALIBRATE=0 in
conftest): structure is tested, never speed."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import clspmv
from clspmv import bandwidth
from clspmv.bench import selection, timing
from clspmv.bench.generators import generate
from clspmv.bench.operation import Settings
from clspmv.bench.records import Record
from clspmv.bench.reference import Problem
from clspmv.canonical import canonical_csr
from clspmv.cli import main
from clspmv.formats import SINGLE_FORMATS
from clspmv.model import select
from clspmv.model import trial as trials
from clspmv.report import tables
from clspmv.report.selection import section
from clspmv.row_stats import stats

POISSON = "gen:poisson2d:k=8"
FORMATS = "csr-scalar,csr-vector,ell,sell"


@pytest.fixture(autouse=True)
def small_streams(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(bandwidth, "buffer_bytes", lambda device: 8 << 20)
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))


def _record() -> Record:
    return Record("m", 4, 4, 8, "dev", "cpu", "auto", "float64", operation="selection")


def test_model_error_and_fill() -> None:
    predicted = {"a": 1.0, "b": 2.0, "c": 4.0, "d": 9.0}  # d was not measured
    measured = {"a": 2.0, "b": 2.0, "c": 5.0, "e": 1.0}  # e was not predicted (refused)
    median, worst, rho, n = selection.model_error(predicted, measured)
    assert n == 3 and median == pytest.approx(0.2) and worst == pytest.approx(0.5)
    assert rho == pytest.approx(0.866, abs=1e-3)  # a and b tie in measured time
    assert selection.model_error({"a": 1.0}, {"a": 2.0})[2] is None  # too few to rank
    assert selection.model_error({}, {"a": 1.0}) == (None, None, None, 0)

    rec = _record()
    selection.fill(rec, predicted, measured, "c")
    assert rec.extra["fastest"] == "e" and rec.extra["chosen_ms"] == 5.0
    assert rec.extra["vs_fastest"] == pytest.approx(0.2) and rec.extra["within_tie"] is False
    rec = _record()
    selection.fill(rec, predicted, {"a": 1.0, "c": 1.04}, "c")
    assert rec.extra["within_tie"] is True  # within 5 % of the fastest
    rec = _record()
    selection.fill(rec, predicted, {"a": 1.0}, "d")  # the choice did not run
    assert rec.extra["chosen_ms"] is None and "vs_fastest" not in rec.extra


def test_contenders_are_the_choice_and_the_formats_near_the_fastest() -> None:
    measured = {"a": 1.0, "b": 1.2, "c": 1.25, "d": 1.3, "e": 1.1, "f": 3.0}
    # within 25 % of the fastest, fastest first, auto's choice ahead of them; four at most
    assert selection.contenders(measured, "f") == ["f", "a", "e", "b"]
    assert selection.contenders(measured, "b") == ["b", "a", "e", "c"]
    assert selection.contenders({"a": 1.0, "b": 2.0}, "a") == ["a"]  # nothing near: no rerun
    assert selection.contenders(measured, "g") == []  # the choice was not measured


def test_time_side_by_side_times_every_matrix_in_rounds(device: clspmv.Device,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    A = canonical_csr(generate(POISSON), np.float64)
    matrices = {f: clspmv.DeviceMatrix.from_scipy(A, format=f, device=device)
                for f in ("csr-scalar", "ell")}
    order = []
    for name, M in matrices.items():
        product = M.matvec
        monkeypatch.setattr(M, "matvec", lambda *a, _n=name, _p=product, **k: order.append(_n)
                            or _p(*a, **k))
    monkeypatch.setattr(timing, "WARMUP_S", 0.0)  # the warm-up round asked for, no more
    times = timing.time_side_by_side(matrices, np.ones(A.shape[1]), warmup=1, repeat=3)
    assert list(times) == ["csr-scalar", "ell"]
    for t in times.values():
        assert t.repeats == 3 and 0 < t.min_ms <= t.median_ms <= t.max_ms
    # rounds of both (the warm-up round's too), each timed product after an untimed one
    assert order == ["csr-scalar", "csr-scalar", "ell", "ell"] * 4


def test_bench_selection_records_and_report(device: clspmv.Device, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code = main(["bench", POISSON, "--formats", FORMATS, "--selection", "--baselines", "none",
                 "--dtype", "float64", "--repeat", "2", "--warmup", "1", "--device",
                 f"{device.index[0]}:{device.index[1]}", "--out", str(out), "--quiet"])
    assert code == 0
    data = json.loads((out / "results.json").read_text())
    meta, records = data["meta"], data["records"]
    assert meta["settings"]["selection"] == {
        "tie_pct": selection.TIE_PCT, "csr_reference": "csr-scalar",
        "contender_pct": selection.CONTENDER_PCT, "max_contenders": selection.MAX_CONTENDERS,
        "trial": {"top": trials.TOP, "band": trials.BAND, "repeats": trials.REPEATS,
                  "margin": trials.MARGIN}}
    assert "selection: vs_fastest" in meta["formulas"]
    (rec,) = [r for r in records if r["operation"] == "selection"]
    assert rec["status"] == "ok" and rec["format"] == "auto"
    expected = select(canonical_csr(generate(POISSON), np.float64), device)
    assert rec["chosen"] == expected.format and rec["calibration"] == "quick-default"
    spmv = {r["format"]: r for r in records if r["operation"] == "spmv"}
    assert rec["measured_ms"] == {f: r["kernel_ms"] for f, r in spmv.items()}
    # every format accepts a stencil but bsr, which finds no blocks in it (the model leaves it out)
    assert set(rec["predicted_ms"]) == set(SINGLE_FORMATS) - {"bsr"}
    fastest = min(rec["measured_ms"].values())
    assert rec["fastest_ms"] == fastest
    if rec["chosen"] in rec["measured_ms"]:
        assert rec["vs_fastest"] == pytest.approx(fastest / rec["measured_ms"][rec["chosen"]])
    assert rec["compared"] == 4 and 0 <= rec["median_error"] <= rec["worst_error"]
    assert rec["selection_ms"] > 0
    contenders = selection.contenders(rec["measured_ms"], rec["chosen"])
    if len(contenders) >= 2:  # timed again side by side, auto's choice first
        side = rec["side_by_side_ms"]
        assert list(side) == contenders and all(v > 0 for v in side.values())
        assert rec["side_by_side_vs_fastest"] == pytest.approx(min(side.values())
                                                               / side[rec["chosen"]])
        assert rec["side_by_side_tie"] == (rec["side_by_side_vs_fastest"] >= 1 / 1.05 - 1e-12)
    else:
        assert rec["side_by_side_ms"] is None and rec["side_by_side_vs_fastest"] is None
    # auto with a trial on the device: its choice is the fastest it measured, judged in the
    # formats' own records like auto's
    tried = rec["trial_ms"]
    fastest_tried = min(tried, key=tried.get)  # or the model's choice within the margin
    assert rec["trial_s"] > 0 and (rec["trial_chosen"] == fastest_tried or (
        rec["trial_chosen"] == rec["chosen"]
        and tried[fastest_tried] * (1 + trials.MARGIN) > tried[rec["chosen"]]))
    if rec["trial_chosen"] in rec["measured_ms"]:
        assert rec["trial_vs_fastest"] == pytest.approx(
            fastest / rec["measured_ms"][rec["trial_chosen"]])
        assert rec["trial_tie"] == (rec["trial_vs_fastest"] >= 1 / 1.05 - 1e-12)
    else:
        assert rec["trial_vs_fastest"] is None
    assert rec["csr_conversion_ms"] == spmv["csr-scalar"]["conversion_ms"]
    assert math.isclose(rec["selection_vs_csr"], rec["selection_ms"] / rec["csr_conversion_ms"])
    report = (out / "report.md").read_text()
    assert "## Selection" in report and "within 5 % of the fastest" in report
    if importlib.util.find_spec("matplotlib") is not None:
        assert (out / "selection_float64.png").exists()
        assert "selection_float64.png" in report


def test_no_trial_leaves_the_trial_out(device: clspmv.Device, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["bench", POISSON, "--formats", FORMATS, "--selection", "--no-trial",
                 "--baselines", "none", "--dtype", "float32", "--repeat", "1", "--warmup", "1",
                 "--device", f"{device.index[0]}:{device.index[1]}", "--out", str(out),
                 "--quiet"]) == 0
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["settings"]["selection"]["trial"] is None
    (rec,) = [r for r in data["records"] if r["operation"] == "selection"]
    assert rec["status"] == "ok" and rec["chosen"] and rec["trial_chosen"] is None
    assert "with a trial" not in (out / "report.md").read_text()


def test_selection_is_off_for_named_formats(device: clspmv.Device, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["bench", POISSON, "--formats", "csr-scalar", "--baselines", "none", "--dtype",
                 "float32", "--repeat", "1", "--warmup", "1", "--device",
                 f"{device.index[0]}:{device.index[1]}", "--out", str(out), "--quiet"]) == 0
    data = json.loads((out / "results.json").read_text())
    assert not [r for r in data["records"] if r["operation"] == "selection"]
    assert "## Selection" not in (out / "report.md").read_text()


def _selection_record(**extra: object) -> dict:
    rec = _record()
    rec.extra.update({name: None for name in selection.FIELDS})
    rec.extra.update(extra)
    return rec.as_dict()


def test_section_reads_definitions_from_meta() -> None:
    rec = _selection_record(chosen="ell", chosen_ms=2.0, fastest="sell", fastest_ms=1.0,
                            vs_fastest=0.5, within_tie=False, median_error=0.1,
                            worst_error=0.3, rank_correlation=0.9,
                            predicted_ms={"ell": 1.5, "sell": 1.1},
                            measured_ms={"ell": 2.0, "sell": 1.0}, calibration="measured")
    for name in ("side_by_side_ms", "side_by_side_vs_fastest", "side_by_side_tie"):
        del rec[name]  # as a run from before the side-by-side times (and the trials: None)
    meta = {"settings": {"selection": {"tie_pct": 7.5, "csr_reference": "csr-scalar"}},
            "formulas": {"selection: vs_fastest": "a definition of the run"}}
    text = tables.render([meta], [rec])
    assert "within 7.5 % of the fastest" in text and "a definition of the run" in text
    assert "0.50×" in text and "geometric mean 0.500, worst 0.500, 0 of 1" in text
    assert "**1.5 / 2**" in text  # auto's choice in bold
    assert "side by side" not in text  # a run from before the side-by-side times
    # the contenders timed again side by side: their ratio, the fastest there named
    rec.update(side_by_side_ms={"ell": 1.0, "sell": 0.9}, side_by_side_vs_fastest=0.9,
               side_by_side_tie=False)
    text = tables.render([meta], [rec])
    assert "0.90× (sell)" in text
    assert "With the contenders timed side by side: geometric mean 0.900, worst 0.900" in text
    assert "with a trial" not in text  # a run from before the trials
    rec.update(trial_chosen="sell", trial_ms={"sell": 0.9, "ell": 1.0}, trial_s=0.25,
               trial_vs_fastest=1.0, trial_tie=True)
    text = tables.render([meta], [rec])
    assert "1.00× (tie) (sell)" in text
    assert ("With a trial on the device (`trial=True`): geometric mean 1.000, worst 1.000, 1 of "
            "1 within the tie tolerance (median trial 0.25 s)") in text
    # a run that recorded no selection settings: no tie sentence, still a section
    old = section([rec], tables.Definitions.of([{}]))
    assert "## Selection" in old and "within" not in old.split("\n\n")[1]
    assert section([], tables.Definitions.of([{}])) == ""


def test_side_by_side_names_samples_the_spin_did_not_cover(
        device: clspmv.Device, monkeypatch: pytest.MonkeyPatch) -> None:
    A = generate(POISSON)
    problem = Problem.build("p", A, stats(A), np.dtype(np.float64), 0)
    monkeypatch.setattr(timing, "time_side_by_side", lambda matrices, x, **kw: {
        "csr-scalar": timing.Timing(0.2, 0.2, 0.2, 3, uncovered=1),
        "ell": timing.Timing(0.1, 0.1, 0.1, 3)})
    rec = _record()
    selection.side_by_side(rec, problem, device, ["csr-scalar", "ell"], None, Settings())
    assert rec.extra["side_by_side_ms"] == {"csr-scalar": 0.2, "ell": 0.1}
    assert rec.params == "side by side: host time included in 1 of 3 samples of csr-scalar"
