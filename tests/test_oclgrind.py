"""Every kernel under Oclgrind's memory, data-race and uninitialised-value checks.

The checks run ``tests/oclgrind_check.py`` in a subprocess with Oclgrind's checks switched on and
fail on any report it prints. Without the Oclgrind platform (``pip install "clspmv[oclgrind]"``)
these tests skip, unless ``CLSPMV_REQUIRE_OCLGRIND=1`` (set by ``tox -e oclgrind`` and CI's
Oclgrind step) makes that a failure. ``CLSPMV_OCLGRIND=full`` runs every device layout
(``tox -e oclgrind``); the default is the quick run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from clspmv.device import SIMULATOR

from oclgrind_check import CHECK_ENV, PLANTED, declared_kernels, diagnostics

SCRIPT = Path(__file__).with_name("oclgrind_check.py")


def _oclgrind_installed() -> bool:
    import clspmv

    return any(d.platform == SIMULATOR for d in clspmv.devices())


@pytest.fixture(scope="module")
def oclgrind() -> None:
    if not _oclgrind_installed():
        message = 'no Oclgrind platform: pip install "clspmv[oclgrind]"'
        if os.environ.get("CLSPMV_REQUIRE_OCLGRIND") == "1":
            pytest.fail(message + " (CLSPMV_REQUIRE_OCLGRIND=1)")
        pytest.skip(message)


def run_checked(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **CHECK_ENV}
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env=env, timeout=1800)


# -- the report parser, on Oclgrind's real output formats (no Oclgrind needed) ---------------------
PROBE = """
Oclgrind - OpenCL runtime error detected
\tFunction: clGetDeviceInfo
\tError:    CL_INVALID_VALUE
\tFor argument 'param_name'

"""
INVALID_READ = """Invalid read of size 4 at global memory address 0x2000000000100
\tKernel: oob
\tEntity: Global(63,0,0) Local(63,0,0) Group(0,0,0)
\t  %0 = load float, float addrspace(1)* %arrayidx, align 4
\tAt line 2 (column 105) of input.cl:
\t  b[i] = a[i + 1];
"""
API_ERROR = """Oclgrind - OpenCL runtime error detected
\tFunction: clEnqueueNDRangeKernel
\tError:    CL_INVALID_WORK_GROUP_SIZE
"""


def test_parser_ignores_only_pyopencl_probes() -> None:
    assert diagnostics(PROBE * 3) == []
    found = diagnostics(PROBE + INVALID_READ + "\n" + PROBE + API_ERROR)
    assert len(found) == 2
    assert found[0].startswith("Invalid read of size 4") and "Kernel: oob" in found[0]
    assert "CL_INVALID_WORK_GROUP_SIZE" in found[1]
    assert diagnostics("Traceback (most recent call last):\n  ...\nAssertionError") != []
    assert diagnostics("Write-write data race at global memory address 0x3") != []


def test_every_kernel_is_declared() -> None:
    assert {"csr_spmv", "ell_spmv", "sell_spmv", "dia_spmv", "scale_y",
            "coo_accumulate"} <= declared_kernels()


# -- under Oclgrind --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bug", "report"),
    [("oob-read", "Invalid read of size 4"), ("oob-write", "Invalid write of size 4"),
     ("race", "data race"), ("uninitialized", "Uninitialized value")],
)
def test_planted_bug_is_reported(oclgrind: None, bug: str, report: str) -> None:
    assert bug in PLANTED
    result = run_checked("--planted", bug)
    assert f"planted {bug}: ran" in result.stdout, result.stderr[-3000:]
    found = diagnostics(result.stderr)
    assert found, f"Oclgrind reported nothing for the planted {bug}"
    assert any(report in block for block in found), found[:3]


def test_every_kernel_clean_under_oclgrind(oclgrind: None) -> None:
    full = os.environ.get("CLSPMV_OCLGRIND", "quick") == "full"
    result = run_checked(*([] if full else ["--quick"]))
    found = diagnostics(result.stderr)
    assert not found, f"{len(found)} Oclgrind reports, the first ones:\n\n" + "\n\n".join(
        found[:5])
    assert result.returncode == 0, result.stdout[-2000:]
    summary = result.stdout.splitlines()[0]
    print(summary)  # shown with pytest -s: the figures for the closing note
    assert summary.startswith("oclgrind: ") and " 0 kernel launches" not in summary
