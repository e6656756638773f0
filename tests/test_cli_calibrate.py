"""``clspmv calibrate``: --show prints a summary of what is stored and never measures; a stored
quick calibration is replaced by the full one; --quick measures the quick one. The start-up
entry (clspmv.entry) and the CLI's one-line errors for Ctrl-C and a lack of memory."""

from __future__ import annotations

import dataclasses
import importlib.abc
import json
import sys
from pathlib import Path

import pytest
from calibration_fixture import fixture_calibration

import clspmv
from clspmv import entry
from clspmv.cli import main
from clspmv.model import store
from clspmv.model.quick import QUICK_MEASUREMENT


def spec(device: clspmv.Device) -> str:
    return f"{device.index[0]}:{device.index[1]}"


@pytest.fixture
def measured(monkeypatch, device) -> list[tuple[bool, bool]]:
    """store.calibration replaced: records (force, full) of each call, stores nothing."""
    calls: list[tuple[bool, bool]] = []

    def fake(dev, force=False, progress=True, full=None):
        calls.append((force, full))
        cal = fixture_calibration(dev)
        return cal if full else dataclasses.replace(cal, kind="quick")

    monkeypatch.setattr(store, "calibration", fake)
    return calls


def test_show_without_a_calibration_measures_nothing(device, calibration_cache, measured,
                                                     capsys) -> None:
    assert main(["calibrate", "--device", spec(device), "--show"]) == 1
    assert capsys.readouterr() == ("", f"clspmv: error: no calibration stored for {device.name}; "
                                       f"`clspmv calibrate --device {spec(device)}` measures it\n")
    assert measured == [] and not any(calibration_cache.iterdir())


def test_show_is_a_summary_and_json_on_request(device, calibration_cache, measured, capsys) -> None:
    cal = fixture_calibration(device)
    store.save(cal, device)
    assert main(["calibrate", "--device", spec(device), "--show"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == (f"calibration of {device.name} (driver {device.driver_version}, clspmv "
                        f"{clspmv.__version__})")
    assert lines[1] == "  kind:      full (measured: clspmv calibrate)"
    assert lines[2].startswith("  stored:    ") and lines[2].endswith(
        f" UTC, {store.calibration_path(device)}")
    assert lines[3] == f"  took:      {cal.seconds:.1f} s to measure; noise: none flagged"
    assert f"copy {cal.stream_bw / 1e9:.3g} GB/s" in lines[4]
    csr = next(line.split() for line in lines if line.startswith("csr-scalar "))
    assert csr[1] == f"{cal.kernel['csr-scalar'][0] * 1e6:.3g}"
    assert csr[4] == f"{cal.fit['csr-scalar'] * 100:.0f}"
    assert not out.lstrip().startswith("{")
    assert main(["calibrate", "--device", spec(device), "--show", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kernel"]["coo"] == cal.kernel["coo"]
    assert measured == []


def test_json_and_show_with_measuring_options_are_refused(device, calibration_cache, measured,
                                                          capsys) -> None:
    for argv in (["--json"], ["--show", "--force"], ["--show", "--quick"]):
        assert main(["calibrate", "--device", spec(device), *argv]) == 2
        assert capsys.readouterr().err == (
            "clspmv: error: --show prints what is stored (--json: as JSON) and measures "
            "nothing; --force and --quick measure: use one or the other\n")
    assert measured == []


def test_a_stored_quick_calibration_is_replaced_by_the_full_one(device, calibration_cache, measured,
                                                                 capsys) -> None:
    quick = dataclasses.replace(fixture_calibration(device), kind="quick",
                                measurement=QUICK_MEASUREMENT)
    store.save(quick, device)
    store.forget()
    assert store.load(device).kind == "quick"
    assert main(["calibrate", "--device", spec(device), "--quiet"]) == 0
    assert measured == [(True, True)]
    assert capsys.readouterr().out.startswith(
        f"calibrated {device.name} (full (measured: clspmv calibrate)) in ")
    # --quick with a quick one stored: nothing to do; with --force: measured again, quick
    assert main(["calibrate", "--device", spec(device), "--quick"]) == 0
    assert capsys.readouterr().out == (
        f"calibration of {device.name} ({store.KIND_NAMES['quick']}): "
        f"{store.calibration_path(device)}; --force measures it again, --show prints it\n")
    assert main(["calibrate", "--device", spec(device), "--quick", "--force", "--quiet"]) == 0
    assert measured == [(True, True), (True, False)]


def test_a_stored_full_calibration_is_kept(device, calibration_cache, measured, capsys) -> None:
    store.save(fixture_calibration(device), device)
    for argv in ([], ["--quick"]):
        assert main(["calibrate", "--device", spec(device), *argv]) == 0
        assert capsys.readouterr().out == (
            f"calibration of {device.name} ({store.KIND_NAMES['measured']}): "
            f"{store.calibration_path(device)}; --force measures it again, --show prints it\n")
    assert measured == []


class _Refuse(importlib.abc.MetaPathFinder):
    """An import of clspmv.cli that raises ``error`` (Ctrl-C or a closed pipe while the
    command's imports run)."""

    def __init__(self, error: type[BaseException]) -> None:
        self.error = error

    def find_spec(self, name, path, target=None):
        if name == "clspmv.cli":
            raise self.error
        return None


@pytest.mark.parametrize("error, code, said", [(KeyboardInterrupt, 130, "clspmv: interrupted\n"),
                                               (BrokenPipeError, 141, "")])
def test_an_interrupt_while_starting_is_one_line(monkeypatch, capsys, error, code, said) -> None:
    monkeypatch.delitem(sys.modules, "clspmv.cli")
    monkeypatch.delattr(clspmv, "cli")
    monkeypatch.setattr(sys, "meta_path", [_Refuse(error), *sys.meta_path])
    assert entry.main(["devices"]) == code
    assert capsys.readouterr() == ("", said)


def test_python_m_clspmv_runs_the_entry() -> None:
    source = (Path(clspmv.__file__).parent / "__main__.py").read_text()
    assert "from .entry import main" in source and "sys.exit(main())" in source


def test_out_of_memory_is_one_line(monkeypatch, capsys) -> None:
    def huge(*args: object, **kwargs: object) -> None:
        raise MemoryError("Unable to allocate 8.00 GiB for an array with shape (1073741824,) "
                          "and data type float64")

    monkeypatch.setattr("clspmv.cli.stats", huge)
    assert main(["stats", "gen:poisson2d:k=3"]) == 1
    assert capsys.readouterr() == ("", (
        "clspmv: error: out of memory while running clspmv stats: Unable to allocate 8.00 GiB "
        "for an array with shape (1073741824,) and data type float64; use smaller matrices, "
        "fewer value types or another machine\n"))


def test_the_summary_says_noise_and_a_quick_kind(device, tmp_path) -> None:
    cal = fixture_calibration(device)
    quick = dataclasses.replace(cal, kind="quick", measurements={
        "quick": {"noisy": ["gather probe"]}}, ell_row_major_width=0)
    lines = store.describe(quick, tmp_path / "none.json").splitlines()
    assert lines[1:4] == [
        "  kind:      quick (a prior scaled by seconds of probes: the first format='auto')",
        f"  stored:    not stored, {tmp_path / 'none.json'}",
        f"  took:      {cal.seconds:.1f} s to measure; noise: flagged (gather probe): measure "
        "it again on a quiet machine"]
    assert "beyond the cache" not in "\n".join(lines)  # no large probes: no such column


def test_the_summary_shows_the_correction_beyond_the_cache(device, tmp_path) -> None:
    """A quick calibration corrected by its large probes: a column of each format's ratio."""
    cal = dataclasses.replace(fixture_calibration(device), kind="quick", large_miss=0.78,
                              large_ratio={f: 2.5 if f == "sell" else 3.75 for f in
                                           fixture_calibration(device).kernel})
    lines = store.describe(cal, tmp_path / "none.json").splitlines()
    header = next(line for line in lines if line.startswith("format"))
    assert header.split()[-5:] == ["%", "beyond", "the", "cache", "x"]
    assert next(line for line in lines if line.startswith("sell ")).split()[-1] == "2.5"
    assert next(line for line in lines if line.startswith("dia ")).split()[-1] == "3.75"
    assert "corrects it beyond the cache" in lines[-1]
    assert not any(line.startswith("  beyond the cache:") for line in lines)
    split = dataclasses.replace(cal, large_shared=3.1, large_scatter=0.903)
    lines = store.describe(split, tmp_path / "none.json").splitlines()
    assert [line for line in lines if line.startswith("  beyond the cache:")] == [
        "  beyond the cache: x3.1 for every format; the rest of each format's x as far as a "
        "product gathers x as scattered as the large probes (0.90 per entry)"]
    whole = dataclasses.replace(split, large_whole=["dia"])
    lines = store.describe(whole, tmp_path / "none.json").splitlines()
    assert [line for line in lines if line.startswith("  beyond the cache:")][0].endswith(
        "(0.90 per entry); dia: its own x whole (timed on a band)")
