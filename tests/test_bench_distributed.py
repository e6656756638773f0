"""``clspmv bench --distributed`` (clspmv/bench/distributed.py) and its report section
(clspmv/report/distributed.py): ``mpiexec -n 2`` and a plain 1-rank run of the command, each
with a timeout, on a small generated matrix (PoCL limited to one thread per rank); the records'
fields, the exchanged bytes against the model's per-rank costs, the 1-rank reference and the
efficiency, the model's prediction, only rank 0 writing, the report section and plot, the merge
of both runs in ``clspmv report``, and the command line's refusals. No timing is asserted."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from clspmv.cli import main

from mpi_launch import mpiexec

ROOT = Path(__file__).resolve().parents[1]
MATRIX = "gen:poisson2d:k=40"
MODES = ("vector", "overlap", "task")
TIMEOUT = 300
"""Seconds one launch may take (a deadlock fails instead of hanging)."""
FIELDS = ("ranks", "mode", "formats", "partition", "devices", "local_ms", "non_local_ms",
          "staging_ms", "gather_ms", "communication_ms", "imbalance", "bytes_sent",
          "bytes_received", "bytes_exchanged", "reference", "reference_ms", "speedup_over_one",
          "efficiency", "predicted_ms", "predicted_one_ms", "predicted_efficiency",
          "model_error_pct", "model_device_gbps", "staging_gbps", "sharing", "timeline",
          "whole_slice_bytes", "stream_ms", "stream_reference_ms", "stream_speedup_over_one")


def _env() -> dict[str, str]:
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    spec = env.get("CLSPMV_TEST_DEVICES", "all").strip()
    if spec not in ("", "all"):
        env["CLSPMV_DEVICE"] = spec
    return env


def _bench(out: Path, ranks: int | None, *extra: str) -> tuple[dict, list[dict], str]:
    """(meta, records, stdout) of ``[mpiexec -n ranks] clspmv bench --distributed *extra``."""
    command = [sys.executable, "-m", "clspmv", "bench", "--distributed", MATRIX, "--dtype",
               "float64", "--repeat", "3", "--warmup", "1", "--quiet", "--out", str(out),
               *extra]
    if ranks is not None:
        command = [mpiexec(), "-n", str(ranks), *command]
    else:
        pytest.importorskip("mpi4py", reason='needs mpi4py: pip install "clspmv[mpi]"')
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=_env(),
                              timeout=TIMEOUT, cwd=out.parent)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(command[:4])} ... did not finish in {TIMEOUT} s (a deadlock?)")
    assert done.returncode == 0, f"exit {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}"
    data = json.loads((out / "results.json").read_text())
    return data["meta"], data["records"], done.stdout


@cache
def _two_ranks(tmp: Path) -> tuple[dict, list[dict], str]:
    return _bench(tmp / "n2", 2)


@cache
def _one_rank(tmp: Path) -> tuple[dict, list[dict], str]:
    return _bench(tmp / "n1", None)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("distbench")


def _check_common(records: list[dict], ranks: int) -> None:
    assert [r["mode"] for r in records] == list(MODES)
    for r in records:
        assert r["operation"] == "distributed" and r["status"] == "ok", r.get("reason")
        assert r["method"] == f"{r['mode']}, {ranks} ranks"
        assert r["format"] == "auto/auto" and r["ranks"] == ranks
        assert r["partition"] == "nnz"  # CLSPMV_CALIBRATE=0 (conftest): no measured calibration
        missing = [f for f in FIELDS if f not in r]
        assert not missing, f"fields missing: {missing}"
        assert r["error_ratio"] <= 1.0
        assert r["kernel_ms_min"] <= r["kernel_ms"] <= r["kernel_ms_max"]
        assert r["repeats"] == 3
        assert r["local_ms"] > 0 and r["reference_ms"] > 0 and r["predicted_ms"] > 0
        assert math.isclose(r["speedup_over_one"], r["reference_ms"] / r["kernel_ms"])
        assert math.isclose(r["efficiency"], r["speedup_over_one"] / ranks)
        assert r["stream_ms"] > 0 and r["stream_reference_ms"] > 0
        assert math.isclose(r["stream_speedup_over_one"],
                            r["stream_reference_ms"] / r["stream_ms"])
        assert r["host_overhead_us"] >= 0 and r["predicted_stream_ms"] > 0
        assert math.isclose(r["stream_model_error_pct"],
                            100 * (r["predicted_stream_ms"] - r["stream_ms"]) / r["stream_ms"])
        # the host's share is what one product adds to the model's back-to-back time
        assert math.isclose(r["predicted_ms"] - r["predicted_stream_ms"],
                            r["host_overhead_us"] / 1e3, rel_tol=1e-6, abs_tol=1e-9)
        assert math.isclose(r["model_error_pct"],
                            100 * (r["predicted_ms"] - r["kernel_ms"]) / r["kernel_ms"])
        assert math.isclose(r["predicted_efficiency"],
                            r["predicted_one_ms"] / (ranks * r["predicted_ms"]))


@pytest.mark.slow
def test_two_ranks_records(tmp: Path) -> None:
    from clspmv.bench.generators import generate
    from clspmv.distributed import model

    meta, records, stdout = _two_ranks(tmp)
    _check_common(records, 2)
    assert meta["settings"]["distributed"]["ranks"] == 2
    assert meta["settings"]["distributed"]["reference"].startswith("rank 0 alone")
    assert meta["settings"]["formats"] == [] and meta["settings"]["baselines"] == []
    assert any(k.startswith("distributed: ") for k in meta["formulas"])
    # the exchanged bytes: the busiest rank's and the sum, as the model's costs count them
    costs = model.rank_costs(generate(MATRIX), 2)
    for r in records:
        assert r["bytes_sent"] == max(c.send for c in costs) * 8 > 0
        assert r["bytes_received"] == max(c.halo for c in costs) * 8
        assert r["bytes_exchanged"] == sum(c.send for c in costs) * 8
        assert r["reference"].startswith("rank 0 alone on a size-1 sub-communicator")
        assert r["network_gbps"] is not None and r["latency_us"] > 0 and r["launch_us"] > 0
        assert r["sharing"] >= 1.0 and math.isfinite(r["sharing"])
        # the model's verdict, as the library words it for these ranks
        verdict = re.match(r"2 ranks are predicted (only )?[0-9.]+x faster than one", r["advice"])
        assert verdict, r["advice"]
        assert bool(verdict.group(1)) == r["advice"].endswith("one device may serve as well")
    # one product's timeline per rank: its kernels, copies and the host's wait
    for r in records:
        assert len(r["timeline"]) == 2, r["timeline"]
        for steps in r["timeline"]:
            names = {(s["where"], s["name"]) for s in steps}
            assert {("device", "local"), ("device", "copy down"), ("device", "copy up"),
                    ("host", "wait"), ("device", "non_local")} <= names, names
            assert all(0 <= s["first"] <= s["last"] and 0 <= s["busy"] and s["count"] >= 1
                       for s in steps), steps
            assert [s["first"] for s in steps] == sorted(s["first"] for s in steps)
    # only rank 0 reports
    assert stdout.count("records (") == 1, stdout


@pytest.mark.slow
def test_one_rank_without_mpiexec(tmp: Path) -> None:
    meta, records, stdout = _one_rank(tmp)
    _check_common(records, 1)
    for r in records:
        assert r["efficiency"] == 1.0 and r["speedup_over_one"] == 1.0
        assert r["stream_speedup_over_one"] == 1.0  # its own reference, back to back too
        assert r["reference"] == "this run (one rank)"
        assert r["bytes_exchanged"] == 0 and r["non_local_ms"] == 0
        assert math.isclose(r["predicted_efficiency"], 1.0)
        assert r["sharing"] == 1.0  # one rank shares nothing
        assert r.get("advice") is None  # one rank: nothing to advise
    assert "records (3 ok)" in stdout


@pytest.mark.slow
def test_graph_partition_against_the_whole_matrix_on_one_rank(tmp: Path) -> None:
    pytest.importorskip("pymetis", reason='partition="graph" needs pymetis')
    from clspmv.bench.generators import generate
    from clspmv.distributed.graph import graph_parts

    meta, records, _ = _bench(tmp / "graph", 2, "--partition", "graph", "--modes", "overlap")
    assert meta["settings"]["distributed"]["partition"] == "graph"
    (r,) = records
    assert r["status"] == "ok" and r["partition"] == "graph" and r["error_ratio"] <= 1.0
    assert r["reference_ms"] > 0
    assert math.isclose(r["speedup_over_one"], r["reference_ms"] / r["kernel_ms"])
    # the halo the graph's blocks leave: what the record says each rank receives at most
    A = generate(MATRIX).tocsr()
    parts = graph_parts(A, 2)
    cut = [np.unique(A[np.flatnonzero(parts == k)].indices[
        parts[A[np.flatnonzero(parts == k)].indices] != k]).size for k in range(2)]
    assert r["bytes_received"] == max(cut) * 8


@pytest.mark.slow
def test_report_section_and_merge(tmp: Path) -> None:
    _two_ranks(tmp)
    _one_rank(tmp)
    text = (tmp / "n2" / "report.md").read_text()
    assert "## Distributed product (MPI, one device per rank)" in text
    assert "| vector ms" in text and "task eff." in text and "#### Where the time goes" in text
    chosen = re.search(r"Formats chosen by auto: (\S+): \(local/non-local\) per rank (.*?); "
                       r"partition nnz\.", text)
    assert chosen and chosen.group(1) == MATRIX and "auto" not in chosen.group(2), chosen
    assert re.search(rf"^- {re.escape(MATRIX)}: 2 ranks are predicted .*\.$", text, re.M), text
    merged = tmp / "merged"
    assert main(["report", str(tmp / "n1" / "results.json"), str(tmp / "n2" / "results.json"),
                 "--out", str(merged)]) == 0
    text = (merged / "report.md").read_text()
    section = text[text.index("## Distributed product"):]
    rows = [line for line in section.splitlines() if line.startswith(f"| {MATRIX}")]
    scaling = [line.split("|")[2].strip() for line in rows[:2]]
    assert scaling == ["1", "2"], rows  # one scaling table: 1 then 2 ranks
    assert "| 100%" in rows[0]
    data = json.loads((merged / "results.json").read_text())
    assert sorted(r["ranks"] for r in data["records"]) == [1, 1, 1, 2, 2, 2]
    stream = section[section.index("#### Products back to back"):]
    stream = stream[:stream.index("#### Where the time goes")]
    by_ranks = {}
    for r in data["records"]:
        by_ranks.setdefault(r["ranks"], []).append(f"{r['stream_ms']:.3f}")
    for ranks, cells in by_ranks.items():  # every mode's back-to-back time, on its row
        row = next(line for line in stream.splitlines()
                   if re.match(rf"^\| {re.escape(MATRIX)} +\| {ranks} +\|", line))
        assert all(cell in row for cell in cells), (row, cells)
    timeline = section[section.index("#### One product, per rank"):]
    for mode in MODES:
        for rank in (0, 1):
            row = rf"^\| {re.escape(MATRIX)} +\| 2 +\| {mode} +\| {rank} +\| "
            assert re.search(row, timeline, re.M), timeline
    if importlib.util.find_spec("matplotlib") is not None:
        for plot in ("distributed_float64.png", "distributed_float64_timeline.png"):
            assert (merged / plot).stat().st_size > 0
            assert plot in text


@pytest.mark.slow
def test_refused_format_is_recorded(tmp: Path) -> None:
    """A format every rank refuses (DIA on a random matrix) gives skipped records naming the
    ranks, and the run ends normally."""
    out = tmp / "dia"
    command = [mpiexec(), "-n", "2", sys.executable, "-m", "clspmv", "bench", "--distributed",
               "gen:random:n=3000,k=7", "--formats", "dia", "--dtype", "float64", "--modes",
               "vector", "--quiet", "--out", str(out)]
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    (r,) = json.loads((out / "results.json").read_text())["records"]
    assert r["status"] == "skipped" and r["format"] == "dia/dia"
    assert "failed on 2 of 2 ranks" in r["reason"] and "UnsuitableFormatError" in r["reason"]
    assert "#### Not measured" in (out / "report.md").read_text()


@pytest.mark.parametrize("extra,message", [
    (["--max-seconds", "5"], "--max-seconds cannot be used with --distributed"),
    (["--modes", "vector,bogus"], "unknown mode 'bogus'"),
    (["--partition", "metis"], "unknown partition 'metis'; choose from auto, time, nnz, rows, "
                               "graph"),
    (["--formats", "ell,coo,csr-scalar"], "one format (both parts) or two"),
    (["--device", "cpu", "gpu"], "give at most one --device"),
])
def test_refusals(extra: list[str], message: str, capsys: pytest.CaptureFixture[str],
                  tmp_path: Path) -> None:
    pytest.importorskip("mpi4py")
    code = main(["bench", "--distributed", MATRIX, "--out", str(tmp_path), *extra])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results.json").exists()


def test_folder_of_another_run_refused_on_every_rank(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    """Rank 0 chooses the folder and every rank learns its refusal (here the one rank of a
    plain run: the error itself)."""
    pytest.importorskip("mpi4py")
    (tmp_path / "report.md").write_text("another run")
    assert main(["bench", "--distributed", MATRIX, "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == (
        f"clspmv: error: {tmp_path} holds the files of another run (report.md); choose a new "
        "folder with --out DIR, or pass --force to replace them\n")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def _efficiency_of(shown: str, t1: str, t2: str) -> bool:
    """Whether the percentage ``shown`` is 100 t1 / t2 of the times as printed (3 decimals: the
    ratio of the printed times may differ from the one of the times by their rounding)."""
    a, b, half = float(t1), float(t2), 0.0005
    low, high = 100 * (a - half) / (b + half), 100 * (a + half) / (b - half)
    return low - 0.5 <= float(shown.rstrip("%")) <= high + 0.5


@pytest.mark.slow
def test_scaling_script(tmp_path: Path) -> None:
    """reports/scaling.sh (issue 45) with 1 and 2 ranks on the CPU, small sizes: weak scaling
    (the bench's merged report and weak.md, the matrix grown with the ranks) and distributed
    CG (cg.md, its residual checked); the commands logged; a second call resumes (runs
    nothing more)."""
    env = dict(_env(), MPIEXEC=mpiexec(), PYTHON=sys.executable, CLSPMV_SCALING_PARTS="weak cg",
               CLSPMV_SCALING_MATRICES="poisson2d", CLSPMV_SCALING_EXCHANGES="window",
               CLSPMV_SCALING_MODES="task", CLSPMV_SCALING_SHRINK="20000",
               CLSPMV_SCALING_REPEAT="2", CLSPMV_SCALING_CG_ITERATIONS="3")
    command = ["bash", str(ROOT / "reports" / "scaling.sh"), "cpu", str(tmp_path), "1", "2"]
    for _ in range(2):
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=2 * TIMEOUT)
        assert done.returncode == 0, done.stderr[-3000:]
        assert "scaling.sh: finished" in done.stderr, done.stderr[-3000:]
    logged = (tmp_path / "commands.txt").read_text().splitlines()
    assert len(logged) == 4, logged  # weak 1 and 2 ranks, CG 1 and 2 ranks; none again
    weak = tmp_path / "weak" / "window"
    data = json.loads((weak / "results.json").read_text())
    assert sorted((r["ranks"], r["matrix"]) for r in data["records"]) == [
        (1, "gen:poisson2d:k=23"), (2, "gen:poisson2d:k=32")]  # 6400 sqrt(n / 4 / 20000)
    assert "reports/scaling.sh cpu weak: 2 rank(s), CLSPMV_EXCHANGE=window" in (
        weak / "report.md").read_text()
    table = (weak / "weak.md").read_text()
    row = next(line for line in table.splitlines() if line.startswith("| poisson2d | task |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    (one, streamed_one), (two, streamed_two) = (c.split("; back to back ") for c in cells[2:4])
    (m1, t1, e1), (m2, t2, e2) = (c.split(", ") for c in (one, two))
    assert (m1, m2, e1) == ("poisson2d:k=23", "poisson2d:k=32", "100%"), cells
    assert _efficiency_of(e2, t1, t2), cells
    (s1, f1), (s2, f2) = (c.split(", ") for c in (streamed_one, streamed_two))
    assert f1 == "100%" and _efficiency_of(f2, s1, s2), cells
    assert "--note 'reports/scaling.sh cpu weak: 2 rank(s)" in table  # the command in the header
    cg = (tmp_path / "cg" / "cg.md").read_text()
    rows = [line for line in cg.splitlines() if line.startswith("| gen:poisson2d:k=45 |")]
    assert [r.split("|")[3].strip() for r in rows] == ["1", "2"], cg
    assert all(r.rstrip(" |").endswith("ok") for r in rows), cg
    assert "scaling_cg.py" in cg and "mpiexec -n 2" in cg


class _OneRank:
    """The collective calls measure_modes makes, for one rank without MPI."""

    rank, size = 0, 1

    def bcast(self, value: object, root: int = 0) -> object:
        return value

    def gather(self, value: object, root: int = 0) -> list:
        return [value]

    def Barrier(self) -> None:  # noqa: N802 (mpi4py's name)
        pass


class _Recorded:
    """A one-rank stand-in for a DistributedMatrix (its product is a DeviceMatrix's) that
    records the mode of every product and whether its timeline was recorded."""

    def __init__(self, A, device) -> None:
        import clspmv
        from clspmv.bench.distributed import PARTS

        self.M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
        self.comm, self.device, self.dtype = _OneRank(), device, self.M.dtype
        self.local_shape, self.col_range = A.shape, (0, A.shape[1])
        self.permutation, self.global_rows = None, np.arange(A.shape[0])
        self.mode, self.record_timeline, self.calls = "vector", False, []
        self.timings = dict.fromkeys(PARTS, 0.0)
        self.last_timeline = type("Summary", (), {"summary": lambda self: []})()

    def matvec(self, x, y):
        self.calls.append((self.mode, self.record_timeline))
        return self.M.matvec(x, y)


def test_modes_take_turns(device, monkeypatch: pytest.MonkeyPatch) -> None:
    """measure_modes: a warm-up of every mode in turn (``warmup`` rounds when WARM_SECONDS is
    spent), the timed repeats in ROUNDS rounds over the modes (one untimed product after each
    change of mode), one recorded product per mode, STREAM_ROUNDS back-to-back rounds over the
    modes, one checked product per mode; each mode's figures are its own and y is A x."""
    import scipy.sparse as sp

    from clspmv.bench import distributed as bench

    monkeypatch.setattr(bench, "WARM_SECONDS", 0.0)
    A = sp.random(30, 30, density=0.2, random_state=2, format="csr") + sp.identity(30)
    x = np.random.default_rng(1).standard_normal(30)
    D = _Recorded(A, device)
    modes, repeat = ("vector", "overlap", "task"), 7
    measured = bench.measure_modes(D, type("P", (), {"x": x})(), modes, 2, repeat)
    timed = [1 + len(range(first, repeat, bench.ROUNDS)) for first in range(bench.ROUNDS)]
    expected = ([(m, False) for _ in range(2) for m in modes]
                + [(m, False) for n in timed for m in modes for _ in range(n)]
                + [(m, True) for m in modes]
                + [(m, False) for _ in range(bench.STREAM_ROUNDS) for m in modes
                   for _ in range(repeat)]
                + [(m, False) for m in modes])
    assert D.calls == expected
    for mode in modes:
        assert measured[mode].product.shape == (repeat,)
        assert np.all(measured[mode].product > 0)
        np.testing.assert_allclose(measured[mode].y, A @ x, rtol=1e-5)
