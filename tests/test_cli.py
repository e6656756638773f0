"""The ``clspmv`` command line, run in-process through ``clspmv.cli.main``."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import demo
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
    assert str(missing) in captured.err and "No such file" in captured.err


# -- demo ---------------------------------------------------------------------------------------
def test_demo_checks_and_times(device: clspmv.Device, dtype: np.dtype,
                               capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["demo", "--size", "20", "--format", "csr-scalar,sell", "--device", spec(device),
            "--dtype", dtype.name]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"device: {device}" in out
    assert "400 rows, 1920 entries" in out  # 5 k^2 - 4 k entries for k = 20
    rows = table_rows(out)
    assert list(rows) == ["csr-scalar", "sell"]
    for cells in rows.values():
        mib, ms, gflops, error, check = cells
        assert 0 < float(mib) < 1 and float(ms) >= 0 and float(gflops) >= 0
        assert float(error) <= demo.TOLERANCE[dtype]
        assert check == "ok"
    # CSR bytes: row pointers + column indices + values.
    assert float(rows["csr-scalar"][0]) == pytest.approx(
        (401 * 4 + 1920 * (4 + dtype.itemsize)) / 2**20, abs=0.01)


def test_demo_reports_refused_formats(device: clspmv.Device, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    # One row holding every column: ELL would pad each of the 6000 rows to 6000 entries.
    n = 6000
    rows = np.concatenate([np.arange(n), np.zeros(n, np.int64)])
    cols = np.concatenate([np.arange(n), np.arange(n)])
    A = sp.csr_matrix((np.ones(2 * n), (rows, cols)), shape=(n, n))
    monkeypatch.setattr(demo, "poisson2d", lambda k: A)
    assert main(["demo", "--format", "ell,csr-vector", "--device", spec(device)]) == 0
    table = table_rows(capsys.readouterr().out)
    assert table["ell"][:2] == ["refused:", "format"]
    assert "'ell' would need" in " ".join(table["ell"])
    assert table["csr-vector"][-1] == "ok"


def test_demo_failed_check_exits_1(device: clspmv.Device, monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(demo, "relative_error", lambda y, ref: 0.5)
    assert main(["demo", "--size", "8", "--format", "coo", "--device", spec(device)]) == 1
    captured = capsys.readouterr()
    assert table_rows(captured.out)["coo"][-2:] == ["5.0e-01", "FAILED"]
    assert "relative error above 0.0001 for coo" in captured.err


def test_demo_unknown_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--format", "csr-scalar,csr"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "unknown format 'csr'" in err and "csr-vector" in err


def test_demo_bad_size(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["demo", "--size", "0"])
    assert exc.value.code == 2
    assert "--size: expected a positive integer, got '0'" in capsys.readouterr().err


def test_demo_unknown_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--size", "4", "--device", "no-such-device-anywhere"]) == 1
    err = capsys.readouterr().err
    assert "no OpenCL device matches 'no-such-device-anywhere'" in err


def test_command_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2
    assert "usage: clspmv" in capsys.readouterr().err


# -- the pieces demo is made of -----------------------------------------------------------------
def test_poisson2d() -> None:
    k = 5
    A = demo.poisson2d(k)
    assert A.shape == (k * k, k * k) and A.nnz == 5 * k * k - 4 * k
    assert np.all(A.diagonal() == 4) and np.all(A.data != 0)
    assert (A != A.T).nnz == 0
    grid = np.arange(k * k).reshape(k, k)
    # An interior point couples to its four neighbours, a corner to two.
    assert sorted(A[grid[2, 2]].indices) == sorted(
        [grid[1, 2], grid[3, 2], grid[2, 1], grid[2, 3], grid[2, 2]])
    assert A[grid[0, 0]].nnz == 3
    with pytest.raises(ValueError):
        demo.poisson2d(0)


def test_relative_error() -> None:
    ref = np.array([1.0, -4.0, 2.0])
    assert demo.relative_error(ref, ref) == 0.0
    assert demo.relative_error(np.array([1.0, -4.0, 2.4]), ref) == pytest.approx(0.1)
    assert demo.relative_error(np.array([0.5, 0.0]), np.zeros(2)) == 0.5
    assert not demo.DemoResult("csr", 1, rel_error=float("nan"), tolerance=1.0).ok


def test_python_dash_m(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "clspmv", "devices"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["P:D", "platform"]
