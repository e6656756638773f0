"""Every kernel under Oclgrind's memory, data-race and uninitialised-value checks.

The checks run ``tests/oclgrind_check.py`` in a subprocess with Oclgrind's checks switched on and
fail on any report it prints. Without the Oclgrind platform (``pip install "clspmv[oclgrind]"``)
these tests skip, unless ``CLSPMV_REQUIRE_OCLGRIND=1`` (set by ``tox -e oclgrind`` and CI's
Oclgrind step) makes that a failure. ``CLSPMV_OCLGRIND=full`` runs every device layout
(``tox -e oclgrind``); the default is the quick run. The checker's launch log and its keeper of
Oclgrind's shadow memory are tested on the ordinary devices.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.device import SIMULATOR
from clspmv.vectors import DeviceVectors

from oclgrind_check import (
    CHECK_ENV,
    PLANTED,
    LaunchLog,
    SimulatorMemory,
    declared_kernels,
    diagnostics,
    matmat_columns,
    mixed_uncovered,
)

SCRIPT = Path(__file__).with_name("oclgrind_check.py")


def _oclgrind_installed() -> bool:
    return any(d.platform == SIMULATOR for d in clspmv.devices())


@pytest.fixture(scope="module")
def oclgrind() -> None:
    if not _oclgrind_installed():
        message = 'no Oclgrind platform: pip install "clspmv[oclgrind]"'
        if os.environ.get("CLSPMV_REQUIRE_OCLGRIND") == "1":
            pytest.fail(message + " (CLSPMV_REQUIRE_OCLGRIND=1)")
        pytest.skip(message)


def run_checked(*args: str) -> subprocess.CompletedProcess[str]:
    """The script in a subprocess that imports the clspmv this test imported (a source checkout
    run with ``python -m pytest`` is first on sys.path here, but not in a child process, which
    would otherwise check an installed clspmv)."""
    package_root = str(Path(clspmv.__file__).resolve().parent.parent)
    path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, **CHECK_ENV, "PYTHONPATH": path}
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
    assert {"csr_spmv", "ell_spmv", "sell_spmv", "dia_spmv", "scale_y_t", "coo_spmv",
            "csr_spmv_t", "coo_accumulate_t", "csr_matmat", "atomic_add_kind", "dots",
            "cg_step", "copy_strided", "copy_vec", "read_vec"} <= declared_kernels()


def test_matmat_columns_choose_every_block_width() -> None:
    from clspmv.formats.base import MATMAT_BLOCKS, matmat_block

    columns = matmat_columns()
    chosen = [matmat_block(k, 4, 64, 8, 1 << 15) for k in columns]
    assert sorted(chosen) == sorted(MATMAT_BLOCKS)
    assert all(k % kb for k, kb in zip(columns[1:], chosen[1:], strict=True))  # partial last block
    assert columns[-1] > max(MATMAT_BLOCKS)  # two blocks of the widest


# -- the checker's machinery, on the ordinary devices (no Oclgrind needed) -------------------------
def test_launch_log_records_every_clspmv_launch(device) -> None:
    A = sp.random(30, 20, density=0.2, format="csr", random_state=1)
    A = sp.csr_matrix(sp.diags((np.arange(30) != 3).astype(float)) @ A)  # row 3 empty
    A.eliminate_zeros()
    M = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=device, dtype=np.float32,
                                       staged=False)
    x = np.linspace(-1, 1, 20).astype(np.float32)
    call = cl.Kernel.__call__
    with LaunchLog() as log:
        y = M.matvec(x)  # Format.run: coo_spmv_serial, coo_spmv (its carries), coo_empty
        a = cl_array.to_device(device.queue, x)
        s = cl_array.zeros(device.queue, 4, np.float32)
        DeviceVectors(device, np.float32).dots(20, [(a, a)], s, 1)  # not through Format.run
        doubled = (a + a).get()  # PyOpenCL's own kernel: not clspmv's, not counted
    assert cl.Kernel.__call__ is call  # restored
    np.testing.assert_allclose(y, A @ x, rtol=1e-5)
    assert s.get()[1] == pytest.approx(float(x @ x), rel=1e-5) and doubled[0] == 2 * x[0]
    assert log.launches == 5
    assert log.functions() == {"coo_spmv_serial", "coo_spmv", "coo_empty", "dots",
                               "sum_partials"}
    assert log.defines("dots", "NDOT") == {"1"} and log.defines("dots", "VALUE_T") == {"float"}
    M.matvec(x)
    assert log.launches == 5  # nothing is recorded outside the context


def test_mixed_coverage_counts_only_float64_sums(device) -> None:
    """The check's list of kernel files never run with dtype="mixed" shrinks only by mixed
    launches."""
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64")
    A = sp.random(30, 20, density=0.2, format="csr", random_state=1)
    x = np.ones(20)
    plain = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype=np.float32)
    mixed = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype="mixed")
    with LaunchLog() as log:
        plain.matvec(x)
        before = mixed_uncovered(log)
        mixed.matvec(x)
    assert before == ["bsr.cl", "coo.cl", "csr.cl", "dia.cl", "ell.cl", "sell.cl"]
    assert mixed_uncovered(log) == ["bsr.cl", "coo.cl", "csr.cl", "dia.cl", "ell.cl"]


def test_simulator_memory_keeps_buffers_and_fills_by_writing(device) -> None:
    saved = (cl.Buffer, cl.MemoryObject.release, cl.enqueue_fill_buffer)
    with SimulatorMemory() as memory:
        z = cl_array.zeros(device.queue, 10, np.float64)  # cl.enqueue_fill: a host write here
        buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 64)
        cl.enqueue_fill_buffer(device.queue, buf, np.float32(1.5), 0, 64)
        cl.enqueue_fill_buffer(device.queue, buf, np.float32(-2), 16, 8)  # part: a real fill
        out = np.empty(16, np.float32)
        cl.enqueue_copy(device.queue, out, buf)
        buf.release()  # kept instead
        assert any(k is buf for k in memory.kept) and any(k is z.base_data for k in memory.kept)
        other = memory.fresh(device)  # a new context; the kept buffers are let go
        assert other.context is not device.context and other.index == device.index
        assert not memory.kept and memory.buffers == 2
    assert (cl.Buffer, cl.MemoryObject.release, cl.enqueue_fill_buffer) == saved
    assert not np.any(z.get()) and isinstance(z.base_data, cl.Buffer)
    np.testing.assert_array_equal(out, [1.5] * 4 + [-2] * 2 + [1.5] * 10)


# -- under Oclgrind --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("bug", "report"),
    [("oob-read", "Invalid read of size 4"), ("oob-write", "Invalid write of size 4"),
     ("race", "data race"), ("uninitialized", "Uninitialized value"),
     ("stale-output", "Uninitialized value")],
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
    print("\n".join(result.stdout.splitlines()[:2]))  # with pytest -s: the figures and times
    assert summary.startswith("oclgrind: ") and " 0 kernel launches" not in summary
