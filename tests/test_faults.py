"""Faults: allocations the device refuses, kernels that fail to build, and many threads at once.

Each must end in a clspmv error that says what happened (or in correct results), and leave the
device usable: no leaked buffers, the same context still working.
"""

from __future__ import annotations

import dataclasses
import gc
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import build
from clspmv.formats import FORMAT_CLASSES

from oracle import assert_matches

ATTEMPTS = 100


def live_buffers() -> int:
    gc.collect()
    return sum(isinstance(o, cl.MemoryObjectHolder) for o in gc.get_objects())


# -- allocations -----------------------------------------------------------------------------------
def test_refused_allocations_leak_nothing(device) -> None:
    A = sp.random(300, 300, density=0.05, format="csr", random_state=4)
    small = dataclasses.replace(device, max_allocation=2000, global_memory=10**9)
    starved = dataclasses.replace(device, global_memory=5000)
    before = live_buffers()
    for i in range(ATTEMPTS):
        fmt = clspmv.FORMATS[i % len(clspmv.FORMATS)]
        # strips uploads its blocks, each a format of its own: the refusal names the block's
        owner = fmt if FORMAT_CLASSES[fmt].kernel_file else r"[\w-]+"
        with pytest.raises(clspmv.DeviceError,
                           match=rf"format '{owner}' needs a buffer of \d+ bytes for '\w+', "
                                 r"above the 2000 bytes .* allows in one allocation"):
            clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=small, dtype=np.float32)
    with pytest.raises(clspmv.DeviceError, match=r"needs \d+ bytes, more than the 5000 bytes of "
                                                 r"global memory"):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=starved, dtype=np.float32)
    assert live_buffers() == before
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype=np.float32)
    x = np.linspace(-1, 1, 300)
    assert_matches(M @ x, A, x, np.float32)


# Runs in a subprocess: PoCL's memory limit must be set before PoCL starts. The device's facts are
# faked upwards, so that clspmv's own guard lets the upload through and the driver refuses it.
DRIVER_REFUSAL = r"""
import dataclasses, gc, json, sys
import numpy as np, pyopencl as cl, scipy.sparse as sp
import clspmv
from clspmv.formats.base import Layout
from clspmv.formats.csr import CsrScalar

def live():
    gc.collect()
    return sum(isinstance(o, cl.MemoryObjectHolder) for o in gc.get_objects())

def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096

dev = next(d for d in clspmv.devices() if d.platform == "Portable Computing Language")
liar = dataclasses.replace(dev, max_allocation=1 << 40, global_memory=1 << 41)
layout = Layout.for_device(dev)
big_ok = np.ones(dev.max_allocation // 8, np.int32)            # uploaded, then released
too_big = np.zeros(dev.max_allocation // 4 + 1024, np.float32)  # the driver refuses it
arrays = {"row_ptr": big_ok, "col": np.zeros(1, np.int32), "val": too_big}
messages, sizes = set(), []
A = sp.random(50, 40, density=0.2, format="csr", random_state=0)
M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=liar, dtype=np.float32)
buffers, memory = live(), rss()
for i in range(int(sys.argv[1])):
    fmt = CsrScalar((1, 1), np.float32, layout, dict(arrays), threads_per_row=1)
    try:
        fmt.upload(liar)
    except clspmv.DeviceError as err:
        messages.add(str(err).split(": ")[0])
        sizes.append(len(fmt.buffers))
after_buffers, after_memory = live(), rss()
x = np.linspace(-1, 1, 40)
error = float(np.abs(M @ x - A @ x).max())  # the same context still works
print(json.dumps({"messages": sorted(messages), "failures": len(sizes), "kept": max(sizes),
                  "buffers": [buffers, after_buffers], "rss": [memory, after_memory],
                  "error": error, "max_allocation": dev.max_allocation}))
"""


def test_driver_refusal_is_a_device_error_and_leaks_nothing() -> None:
    if not any(d.platform == "Portable Computing Language" for d in clspmv.devices()):
        pytest.skip("needs PoCL, whose memory limit (POCL_MEMORY_LIMIT) can be made small")
    if not Path("/proc/self/statm").exists():
        pytest.skip("measures the resident memory through /proc")
    env = {**os.environ, "POCL_MEMORY_LIMIT": "1"}  # 1 GiB: largest allocation 256 MiB
    run = subprocess.run([sys.executable, "-c", DRIVER_REFUSAL, str(ATTEMPTS)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["failures"] == ATTEMPTS and out["kept"] == 0
    assert out["messages"] == [
        f"the OpenCL driver of {clspmv.select_device('cpu').name} refused a buffer of "
        f"{(out['max_allocation'] // 4 + 1024) * 4} bytes for 'val' of format 'csr-scalar' "
        f"({out['max_allocation'] // 2 + (out['max_allocation'] // 4 + 1024) * 4 + 4} bytes "
        "in all)"
    ]
    before, after = out["buffers"]
    assert after == before
    # each attempt uploaded max_allocation / 2 bytes first: 100 leaks would be 12 GiB
    assert out["rss"][1] - out["rss"][0] < out["max_allocation"], out["rss"]
    assert out["error"] < 1e-4


# Also in a subprocess with a small PoCL memory limit: a vector the driver refuses (it is above the
# real largest allocation; the faked facts let it past clspmv's own guard: pyopencl's LogicError
# before). The copy path (a GPU's) is the same guard around every buffer of the product.
VECTOR_REFUSAL = r"""
import dataclasses, json
import numpy as np, scipy.sparse as sp
import clspmv

dev = next(d for d in clspmv.devices() if d.platform == "Portable Computing Language")
liar = dataclasses.replace(dev, max_allocation=1 << 40, global_memory=1 << 41)
n = dev.max_allocation // 4 + 1024
A = sp.csr_matrix((np.ones(2, np.float32), ([0, 1], [0, n - 1])), shape=(2, n))
M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=liar, dtype=np.float32)
messages = []
try:
    M @ np.ones(n, np.float32)  # a buffer on the array's own memory
except clspmv.DeviceError as err:
    messages.append(str(err))
small = np.ones(5, np.float32)
B = clspmv.DeviceMatrix.from_scipy(sp.eye(5, format="csr"), device=liar, dtype=np.float32)
print(json.dumps({"messages": messages, "n": n, "after": (B @ small).tolist()}))
"""


def test_driver_refusal_of_a_vector_is_a_device_error() -> None:
    if not any(d.platform == "Portable Computing Language" for d in clspmv.devices()):
        pytest.skip("needs PoCL, whose memory limit (POCL_MEMORY_LIMIT) can be made small")
    env = {**os.environ, "POCL_MEMORY_LIMIT": "1"}  # 1 GiB: largest allocation 256 MiB
    run = subprocess.run([sys.executable, "-c", VECTOR_REFUSAL], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    name = clspmv.select_device("cpu").name
    assert len(out["messages"]) == 1, out
    for message in out["messages"]:
        assert message.startswith(
            f"the OpenCL driver of {name} refused the buffers of the product ({out['n'] * 4} "
            "bytes for the input, 8 bytes for the output): "), message
        assert message.endswith("; free device memory or multiply in parts"), message
    assert out["after"] == [1.0] * 5  # the device still works


# -- builds ----------------------------------------------------------------------------------------
def test_build_failure_carries_the_compiler_log(device, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    real = build.kernel_dir()
    (tmp_path / "common.h").write_text((real / "common.h").read_text())
    broken = f"broken_{os.getpid()}_{device.index[0]}_{device.index[1]}.cl"
    (tmp_path / broken).write_text(
        '#include "common.h"\n'
        "__kernel void k(__global VALUE_T *y) { y[0] = undeclared_thing_42; }\n"
    )
    monkeypatch.setattr(build, "kernel_dir", lambda: tmp_path)
    with pytest.raises(clspmv.BuildError) as info:
        build.program(device, broken, build.options_for(np.float32, WG=64))
    message = str(info.value)
    assert message.startswith(f"building {broken} for {device.name} with options -DINDEX_T=int")
    log = message.split("failed:\n", 1)[1]
    assert "undeclared_thing_42" in log and "error" in log.lower(), log  # the compiler's words
    assert isinstance(info.value, clspmv.DeviceError)


# -- threads ---------------------------------------------------------------------------------------
THREADS = 8
ROUNDS = 15


def _in_threads(work) -> list[BaseException]:
    """Run ``work(i)`` in THREADS threads released at once; the exceptions they raised."""
    start = threading.Barrier(THREADS)
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException as err:  # collected and re-raised by the test
            errors.append(err)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    return errors


@pytest.mark.parametrize("fmt", ["coo", "csr-vector", "sell", "hyb"])
def test_one_matrix_from_eight_threads(fmt: str, device) -> None:
    A = sp.random(2000, 1500, density=0.01, format="csr", random_state=5)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float32)

    def work(i: int) -> None:
        rng = np.random.default_rng(i)
        for r in range(ROUNDS):
            x = rng.standard_normal(1500)
            y0 = rng.standard_normal(2000).astype(np.float32)
            y = y0.copy()
            M.matvec(x, y, alpha=i + 1.0, beta=r - 2.0)
            assert_matches(y, A, x, np.float32, i + 1.0, r - 2.0, y0)

    errors = _in_threads(work)
    assert not errors, errors[0]


def test_eight_matrices_on_one_fresh_device_from_eight_threads(device) -> None:
    # A fresh Device object: its context and queue are made by the racing threads themselves.
    fresh = dataclasses.replace(device)
    contexts: set[int] = set()

    def work(i: int) -> None:
        fmt = clspmv.FORMATS[i % len(clspmv.FORMATS)]
        A = sp.random(1000, 800, density=0.01, format="csr", random_state=10 + i)
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=fresh, dtype=np.float32)
        contexts.add(fresh.context.int_ptr)
        rng = np.random.default_rng(i)
        for _ in range(ROUNDS):
            x = rng.standard_normal(800)
            assert_matches(M @ x, A, x, np.float32)

    errors = _in_threads(work)
    assert not errors, errors[0]
    assert len(contexts) == 1
