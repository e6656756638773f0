"""The ``clspmv`` command line, run in-process through ``clspmv.cli.main``."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
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
    body = lines[rule + 1:]
    body = body[:body.index("")] if "" in body else body  # a note may follow a blank line
    return {line.split()[0]: line.split()[1:] for line in body}


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


# -- issue 14: the rough edges of the command line -----------------------------------------------
def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"clspmv {clspmv.__version__}"


@pytest.mark.parametrize(("text", "parsed"), [
    ("CSR-Scalar,ELL", ["csr-scalar", "ell"]), (" Hyb ", ["hyb"]), ("AUTO", "auto"),
    ("All", "all")])
def test_formats_in_any_case(text: str, parsed: object) -> None:
    from clspmv.cli import build_parser

    args = build_parser().parse_args(["bench", "--formats", text])
    assert args.formats == parsed


def test_unknown_format_still_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["bench", "--formats", "CSR,nope"])
    assert "unknown formats 'csr', 'nope'" in capsys.readouterr().err


def test_stats_takes_generators_and_directories(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tiny.mtx").write_text(TINY)
    (tmp_path / "notes.txt").write_text("not a matrix")
    assert main(["stats", "gen:poisson2d:k=4", str(tmp_path)]) == 0
    rows = table_rows(capsys.readouterr().out)
    assert rows["tiny"] == TINY_ROW
    assert [k for k in rows if k.startswith("gen:")] == ["gen:poisson2d:k=4"]
    assert rows["gen:poisson2d:k=4"][:2] == ["16", "64"]  # 4 x 4 grid, 5-point stencil


def test_stats_bad_generator(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "gen:nosuch:k=4"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_directory_without_matrices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for command in ("stats", "bench"):
        assert main([command, str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert f"{tmp_path}: is a directory without .mtx or .mtx.gz files" in err
        assert "gen:NAME" in err and "ss:GROUP/NAME" in err


def test_directory_stands_for_its_matrix_files(tmp_path: Path) -> None:
    from clspmv.bench import sources

    for name in ("b.mtx.gz", "a.mtx", "c.txt"):
        (tmp_path / name).write_text("")
    (tmp_path / "sub.mtx").mkdir()
    assert sources.expand([str(tmp_path), "gen:poisson2d:k=3"]) == [
        str(tmp_path / "a.mtx"), str(tmp_path / "b.mtx.gz"), "gen:poisson2d:k=3"]
    with pytest.raises(sources.SourceError, match="is a directory; pass its .mtx"):
        sources.resolve(str(tmp_path))


@pytest.mark.parametrize("variable", ["CLSPMV_DEVICE", "PYOPENCL_CTX"])
def test_bad_device_variable_is_named(variable: str, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.setenv(variable, "77:7")
    assert main(["bench", "gen:poisson2d:k=3", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"no OpenCL device matches '77:7' (from ${variable})" in err
    with pytest.raises(clspmv.DeviceError) as exc:  # a spec given in code names no variable
        clspmv.select_device("77:7")
    assert "$" not in str(exc.value)


def test_devices_marks_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["devices"]) == 0
    out = capsys.readouterr().out
    default = clspmv.select_device()
    lines = [line for line in out.splitlines() if line[:1].isdigit()]
    marked = [line for line in lines if line.rstrip().endswith("*")]
    assert len(marked) == 1 and marked[0].startswith(spec(default) + " ")
    assert out.splitlines()[0].split()[-1] == "default"
    assert "* the default device" in out


def test_devices_with_a_bad_variable_lists_them(monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("CLSPMV_DEVICE", "nothing-like-this")
    assert main(["devices"]) == 1
    out = capsys.readouterr().out
    assert all(spec(d) in out for d in clspmv.devices())
    assert "no default device" in out and "$CLSPMV_DEVICE" in out


def test_doctor_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "baseline     scipy: scipy" in out
    assert "calibration" in out
    assert main(["doctor", "--require-device"]) == 0
    assert "baseline" not in capsys.readouterr().out


# -- a benchmark that made no record fails ----------------------------------------------------
@pytest.mark.parametrize("content", ["not a matrix at all\n", TINY[:TINY.index("6 1 1.5")]],
                         ids=["notmatrix", "truncated"])
def test_bench_without_any_record_fails(content: str, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.mtx"
    bad.write_text(content)
    out = tmp_path / "out"
    code = main(["bench", str(bad), "--quiet", "--out", str(out), "--formats", "csr-scalar",
                 "--dtype", "float64", "--baselines", "none"])
    assert code == 2
    err = capsys.readouterr().err
    assert "no record was made, so no report was written" in err
    assert f"{bad}: line " in err  # the reason, with the line of the file
    assert not out.exists()  # nothing of the failed run is left to block the next one
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 1 1.0\n")
    assert main(["bench", str(bad), "--quiet", "--out", str(out), "--formats", "csr-scalar",
                 "--dtype", "float64", "--baselines", "none"]) == 0
    assert (out / "report.md").exists()


def test_bench_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", str(tmp_path / "missing.mtx"), "--quiet",
                 "--out", str(tmp_path / "out")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_bench_suitesparse_offline_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("CLSPMV_SUITESPARSE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "out"
    assert main(["bench", "ss:HB/bcsstk01", "--quiet", "--out", str(out), "--formats",
                 "csr-scalar", "--dtype", "float64", "--baselines", "none"]) == 2
    err = capsys.readouterr().err
    assert "no record was made" in err and "cannot download" in err
    assert not (out / "report.md").exists()


# -- issue 46: every failure one line and an exit code, never a traceback ------------------------
def _interrupt(*args: object, **kwargs: object) -> None:
    raise KeyboardInterrupt


@pytest.mark.parametrize("argv, target", [
    (["devices"], "clspmv.cli.devices"),
    (["doctor"], "clspmv.doctor.main"),
    (["stats", "gen:poisson2d:k=3"], "clspmv.cli.stats"),
    (["bench", "gen:poisson2d:k=3"], "clspmv.bench.sources.resolve_all"),
    (["report", "results.json"], "clspmv.report.load"),
    (["calibrate"], "clspmv.cli.select_device"),
    (["devices"], "clspmv.cli.build_parser"),  # while the parser is built (imports)
], ids=["devices", "doctor", "stats", "bench", "report", "calibrate", "parsing"])
def test_interrupt_is_one_line_and_exit_130(argv: list[str], target: str,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(target, _interrupt)
    assert main(argv) == 130
    assert capsys.readouterr() == ("", "clspmv: interrupted\n")


def test_file_errors_are_one_line(monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    def unreadable(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", "/data/a.mtx")

    monkeypatch.setattr("clspmv.bench.sources.resolve_all", unreadable)
    assert main(["stats", "/data/a.mtx"]) == 2
    assert capsys.readouterr() == ("", "clspmv: error: /data/a.mtx: Permission denied; check the "
                                       "path and its permissions\n")


def test_generator_values_it_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["stats", "gen:random:n=0,k=1"]) == 2
    assert capsys.readouterr() == ("", "clspmv: error: gen:random:n=0,k=1: n must be >= 1, got 0; "
                                       "choose other values (gen:NAME:key=val,...)\n")


@pytest.mark.parametrize("option,value", [("--modes", "task"), ("--partition", "graph")])
def test_options_of_distributed_without_it(option: str, value: str,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "gen:poisson2d:k=3", option, value]) == 2
    assert capsys.readouterr().err == (f"clspmv: error: {option} is an option of --distributed; "
                                       f"add --distributed or leave {option} out\n")


def _clspmv(argv: list[str], cwd: Path, **options: object) -> subprocess.Popen:
    env = {**os.environ, "CLSPMV_CACHE_DIR": str(cwd / "cache")}
    return subprocess.Popen([sys.executable, "-m", "clspmv", *argv], cwd=cwd, env=env, **options)


def _interrupted(argv: list[str], started: str, cwd: Path) -> tuple[int, str]:
    """(exit code, stderr) of ``clspmv argv`` sent SIGINT once ``started`` is on its stderr."""
    log = cwd / "stderr.txt"
    with open(log, "wb") as err:
        proc = _clspmv(argv, cwd, stdout=subprocess.DEVNULL, stderr=err)
        try:
            deadline = time.monotonic() + 120  # against a hang only
            while started not in log.read_text(errors="replace"):
                assert proc.poll() is None, f"ended before the interrupt: {log.read_text()}"
                assert time.monotonic() < deadline, "never started"
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return code, log.read_text()


def test_sigint_to_calibrate(device: clspmv.Device, tmp_path: Path) -> None:
    code, err = _interrupted(["calibrate", "--force", "--device", spec(device)], "calibrating",
                             tmp_path)
    assert code == 130 and "Traceback" not in err, err
    assert err.endswith("\nclspmv: interrupted\n"), err  # its own line, after the progress bar


def test_sigint_to_bench(device: clspmv.Device, tmp_path: Path) -> None:
    out = tmp_path / "run"
    code, err = _interrupted(
        ["bench", "gen:poisson2d:k=30", "--device", spec(device), "--formats", "csr-scalar,ell",
         "--dtype", "float32", "--baselines", "none", "--out", str(out)], "clspmv bench",
        tmp_path)
    assert code == 130 and "Traceback" not in err, err
    last = err.splitlines()[-1]
    assert last.startswith("clspmv: interrupted; the ") and last.endswith(
        f" records measured so far are in {out / 'results.json'} (clspmv report "
        f"{out / 'results.json'} makes a report)"), err
    data = json.loads((out / "results.json").read_text())
    assert data["meta"]["interrupted"] is True
    assert sorted(p.name for p in out.iterdir()) == ["results.csv", "results.json"]


def test_output_closed_early(tmp_path: Path) -> None:
    """``clspmv devices | head -0``: the reader has gone before the first line; no traceback."""
    proc = _clspmv(["devices"], tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 141 and err == b""
