"""dev.sh's device step with stand-ins for apt-get and python on PATH: each try says in one line
what it found, a held package lock is waited for (within a bound) and named, and the step fails
with what to install. Nothing is installed: dev.sh is sourced (which runs nothing), its root
helper replaced by a plain call, so only the stand-ins run."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

DEV_SH = Path(__file__).resolve().parents[1] / "dev.sh"

LISTS_LOCKED = ("E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 "
                "(apt-get)\nE: Unable to lock directory /var/lib/apt/lists/")
DPKG_LOCKED = ("Waiting for cache lock: Could not get lock /var/lib/dpkg/lock-frontend. It is held "
               "by process 77 (unattended-upgr)...\nE: Unable to acquire the dpkg frontend lock "
               "(/var/lib/dpkg/lock-frontend), is another process using it?")
NO_DEVICE = ("no device builds and runs kernels; [0:0] pthread-znver5 (Portable Computing "
             "Language, cpu): does not work: PoCL 3.0 from PyPI cannot compile for this CPU "
             "(LLVM: unknown target CPU 'znver5')")


def stand_in(folder: Path, name: str, body: str) -> None:
    """An executable ``name`` in ``folder`` that logs its arguments to ``calls`` and runs
    ``body`` (bash)."""
    path = folder / name
    path.write_text(f'#!/usr/bin/env bash\necho "{name} $*" >> "{folder}/calls"\n{body}\n')
    path.chmod(0o755)


def apt_get(folder: Path, update: str = "", install: str = "") -> None:
    """apt-get whose update and install print ``update`` / ``install`` on stderr and fail
    (exit 100, as apt-get does) when they are given, else succeed."""
    cases = "".join(f'*" {verb}"*) printf "%s\\n" "{text}" >&2; exit 100 ;;\n'
                    for verb, text in (("update", update), ("install", install)) if text)
    stand_in(folder, "apt-get", f'case " $*" in\n{cases}esac\nexit 0')


def python(folder: Path, verdict: str = NO_DEVICE, pip_install: str = "") -> None:
    """python whose ``-m clspmv.doctor`` prints ``verdict`` and exits 1 (no device) and whose
    ``-m pip install`` fails with ``pip_install`` when given."""
    pip = f'printf "%s\\n" "{pip_install}" >&2; exit 1' if pip_install else "exit 0"
    stand_in(folder, "python", f'case "$*" in\n'
                               f'"-m clspmv.doctor"*) echo "{verdict}"; exit 1 ;;\n'
                               f'"-m pip install"*) {pip} ;;\n'
                               f'esac\nexit 0')


def run(folder: Path, call: str, root: bool = True, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``call`` after sourcing dev.sh in ``cwd`` (default: this process's), with the stand-ins
    of ``folder`` first on PATH, a lock wait of 1 s, and the root helper a plain call (``root``)
    or refusing."""
    allowed = "true" if root else "false"
    script = (f'source "{DEV_SH}"; log=$(mktemp); APT_LOCK_WAIT_S=1; APT_POLL_S=1; '
              f'as_root() {{ "$@"; }}; can_install_packages() {{ {allowed}; }}; {call}')
    env = {**os.environ, "PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env,
                          timeout=60, cwd=cwd)


def calls(folder: Path) -> list[str]:
    path = folder / "calls"
    return path.read_text().splitlines() if path.exists() else []


@pytest.fixture
def bin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    return folder


def test_held_lists_lock_is_waited_for_then_named(bin_dir: Path) -> None:
    apt_get(bin_dir, update=LISTS_LOCKED)
    done = run(bin_dir, "try_debian_pocl")
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "  Debian's pocl-opencl-icd (apt-get): installing (apt-get waits up to 1 s for another "
        "apt or dpkg)",
        "  waiting up to 1 s for another apt: /var/lib/apt/lists/lock is held by process 4242 "
        "(apt-get)",
        "  Debian's pocl-opencl-icd (apt-get): apt-get update failed: /var/lib/apt/lists/lock is "
        "held by process 4242 (apt-get) still after 1 s; run this command again once that one "
        "is done"]
    updates = [c for c in calls(bin_dir) if c.endswith(" update")]
    assert len(updates) == 2, calls(bin_dir)  # tried again once within the second allowed
    assert not any("install" in c for c in calls(bin_dir))


def test_held_dpkg_lock_is_waited_for_by_apt_then_named(bin_dir: Path) -> None:
    apt_get(bin_dir, install=DPKG_LOCKED)
    done = run(bin_dir, "try_debian_pocl")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == (
        "  Debian's pocl-opencl-icd (apt-get): apt-get install failed: /var/lib/dpkg/lock-frontend "
        "is held by process 77 (unattended-upgr) still after 1 s; run this command again once "
        "that one is done")
    install = next(c for c in calls(bin_dir) if " install " in c)
    assert install == ("apt-get -o DPkg::Lock::Timeout=1 -q install -y --no-install-recommends "
                       "pocl-opencl-icd")


def test_other_apt_failure_gives_its_error(bin_dir: Path) -> None:
    apt_get(bin_dir, install="E: Unable to locate package pocl-opencl-icd")
    done = run(bin_dir, "try_debian_pocl")
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == ("  Debian's pocl-opencl-icd (apt-get): apt-get "
                                            "install failed: Unable to locate package "
                                            "pocl-opencl-icd")


def test_every_try_says_why_then_what_to_install(bin_dir: Path) -> None:
    """No device before, with PyPI's PoCL (removed again) nor after apt-get: one line per try
    with its reason, then the message on stderr and status 1."""
    python(bin_dir)
    apt_get(bin_dir, update=LISTS_LOCKED)
    done = run(bin_dir, 'opencl_device "test"')
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == f"  the drivers installed: {NO_DEVICE}"
    assert lines[1] == f"  PoCL from PyPI (the pocl extra): {NO_DEVICE}"
    assert lines[-1].startswith("  Debian's pocl-opencl-icd (apt-get): apt-get update failed: "
                                "/var/lib/apt/lists/lock is held by process 4242")
    assert done.stderr.startswith("no OpenCL device builds and runs kernels (each try above says "
                                  "why). Install an OpenCL driver")
    assert "python -m pip uninstall -q -y pocl-binary-distribution" in calls(bin_dir)
    assert "simulator" not in done.stdout + done.stderr


def test_no_root_and_no_pip_say_so(bin_dir: Path) -> None:
    python(bin_dir, pip_install="ERROR: No matching distribution found for "
                                "pocl-binary-distribution>=3.0")
    apt_get(bin_dir)
    done = run(bin_dir, 'opencl_device "test"', root=False)
    assert done.returncode == 1
    assert done.stdout.splitlines()[1:] == [
        "  PoCL from PyPI (the pocl extra): pip could not install it: ERROR: No matching "
        "distribution found for pocl-binary-distribution>=3.0",
        "  Debian's pocl-opencl-icd (apt-get): not tried: installing a system package needs root "
        "or password-less sudo"]
    assert not any(c.startswith("apt-get") for c in calls(bin_dir))


def test_a_working_device_ends_the_tries(bin_dir: Path) -> None:
    stand_in(bin_dir, "python", 'echo "builds and runs kernels: [1:0] cpu (PoCL, cpu)"')
    done = run(bin_dir, 'opencl_device "test"')
    assert done.returncode == 0
    assert done.stdout == ("  the drivers installed: builds and runs kernels: [1:0] cpu "
                           "(PoCL, cpu)\n")
    assert calls(bin_dir) == ["python -m clspmv.doctor --require-device"]


def test_a_failing_check_stops_the_step(bin_dir: Path) -> None:
    """The check itself failing (the package does not import: no verdict) is said, and nothing
    is installed: a driver would not help."""
    stand_in(bin_dir, "python", 'echo "ImportError: cannot import name \'read_fast\'" >&2; exit 1')
    apt_get(bin_dir)
    done = run(bin_dir, 'opencl_device "test"')
    assert done.returncode == 1
    assert done.stdout == ("  the drivers installed: the device check (python -m clspmv.doctor "
                           "--require-device) failed: ImportError: cannot import name "
                           "'read_fast'\n")
    assert done.stderr == ("the device check itself fails: fix that first (its error is "
                           "above)\n")
    assert calls(bin_dir) == ["python -m clspmv.doctor --require-device"]


def test_tox_device_step_leaves_out_pypi_pocl(bin_dir: Path) -> None:
    """For tox (no extras: its environments do not see .venv's packages) the tries are the
    installed drivers, then Debian's PoCL; nothing is pip-installed."""
    python(bin_dir)
    apt_get(bin_dir)
    done = run(bin_dir, 'opencl_device ""')
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        f"  the drivers installed: {NO_DEVICE}",
        "  Debian's pocl-opencl-icd (apt-get): installing (apt-get waits up to 1 s for another "
        "apt or dpkg)",
        f"  Debian's pocl-opencl-icd (apt-get): {NO_DEVICE}"]
    assert not any("pip" in c for c in calls(bin_dir)), calls(bin_dir)


def test_pyenv_pythons_are_named_for_tox(bin_dir: Path) -> None:
    """The CPython 3 versions pyenv holds join the one in use in PYENV_VERSION (its shims then
    answer for python3.12 and the like); pyenv's Python 2 and virtualenvs are left out."""
    stand_in(bin_dir, "pyenv", 'case "$*" in\n'
                               '"versions --bare --skip-aliases") '
                               'printf "2.7.18\\n3.10.13\\n3.11.7\\n3.12.1\\nwork\\n" ;;\n'
                               '"version-name") echo 3.11.7 ;;\n'
                               'esac')
    done = run(bin_dir, 'unset PYENV_VERSION; other_pythons; echo "$PYENV_VERSION"')
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "  pyenv's CPythons, for tox's py3XX environments: 3.10.13 3.11.7 3.12.1",
        "3.11.7:3.10.13:3.11.7:3.12.1"]


@pytest.mark.parametrize("status", [0, 3])
def test_tox_skips_repeated_at_the_end(bin_dir: Path, status: int) -> None:
    """tox's status is dev.sh's; the environments that skipped (an implementation that builds no
    kernel here, a Python not found) are said again after tox's own summary."""
    stand_in(bin_dir, "tox", 'echo "SKIPPED ENVIRONMENT pypi-pocl: PoCL from PyPI builds no '
                             'kernel"\n'
                             'echo "SKIPPED [4] tests/test_product.py:35: format refuses"\n'
                             'echo "  main: OK (700.00=setup[60.00]+cmd[640.00] seconds)"\n'
                             'echo "  py312: SKIP (0.05 seconds)"\n'
                             f'exit {status}')
    done = run(bin_dir, "status=0; run_tox -e main || status=$?; echo status=$status")
    assert done.stdout.splitlines()[-3:] == [
        "SKIPPED ENVIRONMENT pypi-pocl: PoCL from PyPI builds no kernel",
        "SKIPPED ENVIRONMENT py312: tox found no such Python here",
        f"status={status}"]
    assert calls(bin_dir) == ["tox -e main"]


def test_discarding_tox_runs_each_environment_then_deletes_it(bin_dir: Path,
                                                              tmp_path: Path) -> None:
    """With CLSPMV_DISCARD_TOX_ENVS=1 (CI) and no tox options: one tox run per environment of
    env_list, each one's folder under .tox deleted after it ran (another's kept until its turn),
    every environment run even after one failed, the failed ones named and dev.sh failing."""
    work = tmp_path / "work"
    (work / ".tox" / "keep").mkdir(parents=True)
    stand_in(bin_dir, "tox", 'case "$*" in\n'
                             '"-l") printf "alpha\\nbeta\\ngamma\\n" ;;\n'
                             '"-e beta") mkdir -p .tox/beta; ls .tox; exit 1 ;;\n'
                             '"-e "*) mkdir -p ".tox/${2}"; ls .tox ;;\n'
                             'esac')
    done = run(bin_dir, "status=0; CLSPMV_DISCARD_TOX_ENVS=1 run_tox || status=$?; "
                        "echo status=$status; ls .tox", cwd=work)
    assert calls(bin_dir) == ["tox -l", "tox -e alpha", "tox -e beta", "tox -e gamma"]
    assert done.stdout.splitlines() == [
        "alpha", "keep",  # what each run saw under .tox: its own folder, not the one before
        "beta", "keep",
        "gamma", "keep",
        "tox environments that failed: beta",
        "status=1",
        "keep"]


def test_tox_options_keep_one_tox_run(bin_dir: Path, tmp_path: Path) -> None:
    """Named environments (tox options) run in one tox, as without CLSPMV_DISCARD_TOX_ENVS."""
    stand_in(bin_dir, "tox", "exit 0")
    done = run(bin_dir, "CLSPMV_DISCARD_TOX_ENVS=1 run_tox -e main -- -k csr", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert calls(bin_dir) == ["tox -e main -- -k csr"]


@pytest.mark.parametrize(("listing", "says"), [
    ("exit 1", "tox -l failed: no environment to run"),
    ("exit 0", "tox -l lists no environment: nothing would be tested")])
def test_discarding_tox_fails_without_environments(bin_dir: Path, tmp_path: Path, listing: str,
                                                   says: str) -> None:
    """A tox that cannot list its environments, or lists none, fails the run (it must not pass
    having tested nothing)."""
    stand_in(bin_dir, "tox", listing)
    done = run(bin_dir, "CLSPMV_DISCARD_TOX_ENVS=1 run_tox", cwd=tmp_path)
    assert done.returncode == 1
    assert says in done.stderr
    assert calls(bin_dir) == ["tox -l"]
