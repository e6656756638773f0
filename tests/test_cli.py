"""The ``clspmv`` command line, run in-process through ``clspmv.cli.main``."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

import clspmv
from clspmv import device as device_module
from clspmv.cli import main

# Row lengths 1, 1, 1, 1, 2, 6: Av 2, Max-Av 4, sigma sqrt(20/6) = 1.83, %sigma/Av 91.29;
# the HYB width is 2 (two of six rows reach it), so ELL holds 8 of the 12 entries: 66.7 %.
TINY = """%%MatrixMarket matrix coordinate real general
% six rows of lengths 1 1 1 1 2 6
6 6 12
1 1 1.0
2 2 2.0
3 3 3.0
4 4 4.0
5 1 5.0
5 5 6.0
6 1 1.5
6 2 2.5
6 3 3.5
6 4 4.5
6 5 5.5
6 6 6.5
"""
TINY_ROW = ["6", "12", "2.00", "4.00", "1.83", "91.29", "66.7"]


def spec(device: clspmv.Device) -> str:
    return f"{device.index[0]}:{device.index[1]}"


def table_rows(out: str) -> dict[str, list[str]]:
    """The rows of a tabulate "simple" table, keyed by their first cell."""
    lines = out.splitlines()
    rule = next(i for i, line in enumerate(lines) if line.startswith("---"))
    return {line.split()[0]: line.split()[1:] for line in lines[rule + 1:] if line.strip()}


# -- devices ------------------------------------------------------------------------------------
def test_devices_lists_every_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert header[:4] == ["P:D", "platform", "device", "type"]
    rows = table_rows(out)
    assert list(rows) == [spec(d) for d in clspmv.devices()]
    for d in clspmv.devices():
        line = next(line for line in out.splitlines() if line.startswith(spec(d) + " "))
        assert d.name in line and d.platform in line and f" {d.type} " in line


def test_devices_without_any_device(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(device_module, "_devices", [])
    assert main(["devices"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "no OpenCL platform or device found" in captured.err
    assert "pocl" in captured.err


# -- stats --------------------------------------------------------------------------------------
def test_stats_prints_table_i(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny.mtx").write_text(TINY)
    with gzip.open(tmp_path / "packed.mtx.gz", "wt") as fh:
        fh.write(TINY)
    assert main(["stats", str(tmp_path / "tiny.mtx"), str(tmp_path / "packed.mtx.gz")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["Matrix", "N", "Entries", "Av", "Max-Av", "σ",
                                           "%σ/Av", "%ELL(HYB)"]
    assert table_rows(out) == {"tiny": TINY_ROW, "packed": TINY_ROW}


def test_stats_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mtx"
    bad.write_text(TINY.replace("6 3 3.5", "6 three 3.5"))
    assert main(["stats", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"{bad}: line 12:" in captured.err and "'three'" in captured.err


def test_stats_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.mtx"
    assert main(["stats", str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert str(missing) in captured.err and "no such file" in captured.err.lower()


def test_command_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "usage: clspmv" in capsys.readouterr().err


def test_python_dash_m(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "clspmv", "devices"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["P:D", "platform"]
