"""The check ``clspmv doctor`` makes of each OpenCL device: small float32 and float64 kernels
build and run, and the device probes of :mod:`clspmv.device_probes` answer
(:func:`device_error`), in a process of its own stopped after :data:`CHECK_LIMIT_S`
(:func:`checked_device_errors`: a driver can list a device whose compiler fails, as an LLVM
older than the CPU does, or hangs, or crashes); a driver's error said in one line
(:func:`reason`)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import multiprocessing
import os
import re
import sys
import tempfile
from collections.abc import Iterator, Sequence
from typing import IO, Any

import pyopencl as cl

from .cpu_layout import pocl_version
from .device import Device, devices
from .device_facts import driver_error

PROBE_SOURCE = "__kernel void probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"
FP64_SOURCE = ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
               "__kernel void probe(__global double *a) { a[get_global_id(0)] = 1.0; }")

CHECK_LIMIT_S = 60.0
"""Seconds a device's check may take (a few on a 2-core CPU)."""
START_LIMIT_S = 120.0
"""Seconds the checking process may take to start, before it touches OpenCL (Python and the
imports of numpy, scipy and pyopencl: seconds, more on a cold or busy machine)."""


def device_error(device: Device) -> str | None:
    """None when small kernels build and run on ``device`` (float32, and float64 where it
    reports fp64) and its device probes answer; else what failed, the driver's error summarised
    (:func:`reason`). In this process: :func:`checked_device_errors` runs it in others."""
    stage = ""
    try:
        ctx = cl.Context([device.cl_device])
        queue = cl.CommandQueue(ctx)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 8)
        kernels = [("", PROBE_SOURCE)] + (
            [("float64 kernels fail (it reports fp64): ", FP64_SOURCE)] if device.fp64 else [])
        for what, source in kernels:
            stage = what
            cl.Program(ctx, source).build().probe(queue, (1,), None, buf)
            queue.finish()
        stage = "its device probes fail: "
        _ = (device.shares_host_pointer, device.inline_ptx)  # each runs once, remembered
    except Exception as err:  # any failure of the driver means: this device does not work
        return stage + reason(device, err)
    return None


def reason(device: Device, err: BaseException) -> str:
    """A driver's error in one line: an LLVM that does not know the CPU said so, else the
    compiler's first error, else the error's first line (pyopencl's thrice-repeated build
    failure once)."""
    text = str(err)
    cpu = re.search(r"unknown target CPU '([^']*)'", text)
    if cpu:
        return (f"{_compiler(device)} cannot compile for this CPU "
                f"(LLVM: unknown target CPU '{cpu.group(1)}')")
    first = explained(" - ".join(dict.fromkeys(driver_error(err).split(" - "))))
    log = re.search(r"^\s*error: (?:\S+:\d+:\d+: )?(.+)$", text, re.MULTILINE)
    return f"{first}: {log.group(1)}"[:200] if log else first


PYOPENCL_CACHE_FAILURE = "PYOPENCL_CACHE_FAILURE_FATAL"
"""What pyopencl (2025.x) raises, as a KeyError of this name, where it cannot use its compiler
cache: it reads ``os.environ["PYOPENCL_CACHE_FAILURE_FATAL"]`` to decide whether that is fatal,
and fails on the variable's absence."""
CACHE_FAILURE = ("pyopencl cannot use its compiler cache (in $XDG_CACHE_HOME, else "
                 "~/.cache/pyopencl), and fails on that with KeyError "
                 f"'{PYOPENCL_CACHE_FAILURE}' instead of building without it")
def explained(why: str) -> str:
    """A driver's or pyopencl's error as :func:`reason` says it, pyopencl's cryptic failure of
    an unwritable cache (:data:`PYOPENCL_CACHE_FAILURE`) in words."""
    return CACHE_FAILURE if PYOPENCL_CACHE_FAILURE in why else why


def _pocl_version(device: Device) -> str | None:
    version = pocl_version(device.cl_device.platform.version)
    return None if version is None else f"{version[0]}.{version[1]}"


def from_pypi(device: Device) -> bool:
    """Whether ``device``'s PoCL is the ``pocl-binary-distribution`` of this environment."""
    try:
        wheel = importlib.metadata.version("pocl-binary-distribution")
    except importlib.metadata.PackageNotFoundError:
        return False
    version = _pocl_version(device)
    return version is not None and wheel.startswith(version)


def _compiler(device: Device) -> str:
    version = _pocl_version(device)
    if version is None:
        return f"the compiler of {device.platform}"
    return f"PoCL {version}" + (" from PyPI" if from_pypi(device) else "")


def checked_device_errors(found: Sequence[Device]) -> list[str | None]:
    """:func:`device_error` of each device, in another process (one for all: starting one
    takes seconds) whose compilers' chatter on stderr is kept aside, each check stopped after
    :data:`CHECK_LIMIT_S`: a driver that hangs or crashes is a finding, not the doctor's end
    (the process is ended and the devices after it checked in a new one)."""
    out: list[str | None] = []
    while len(out) < len(found):
        out += _checked_in_child(found[len(out):])
    return out


NOT_STARTED = "its check could not start"
"""How a device's finding begins where the process checking it failed before it used OpenCL
(:func:`_checked_in_child`): a problem of this machine or Python environment, not of the
driver."""
STARTED = "started"
"""What the checking process sends once it runs, before it touches OpenCL."""


@contextlib.contextmanager
def _stderr_into(log: IO[bytes]) -> Iterator[None]:
    """This process's stderr (the file descriptor, which a child started meanwhile inherits)
    pointed at ``log``, then back."""
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        os.dup2(log.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _child_log() -> IO[bytes]:
    """A temporary file for the checking child's stderr; /dev/null where no temporary file can
    be made (the child's last words are then lost, its check still runs)."""
    try:
        return tempfile.TemporaryFile()
    except OSError:
        return open(os.devnull, "w+b")  # closed by the caller's with


def _last_words(log: IO[bytes]) -> str:
    """The last line the child wrote on stderr (the error of a Python traceback), else ""."""
    log.seek(max(0, os.fstat(log.fileno()).st_size - 4096))
    lines = [line.strip() for line in log.read().decode(errors="replace").splitlines()]
    last = next((line for line in reversed(lines) if line), "")
    return explained(last)[:300]


def _checked_in_child(found: Sequence[Device]) -> list[str | None]:
    """The answers of one child process checking ``found`` in order, up to the first device
    whose check does not finish or crashes the child (included, as that finding). The child's
    stderr goes to a temporary file: the compilers' chatter is hidden, and its last line says
    why a child failed. A child that cannot start, or ends before it sends :data:`STARTED`
    (before any OpenCL call), answers :data:`NOT_STARTED` and that reason for every device:
    the driver is not to blame."""
    spawn = multiprocessing.get_context("spawn")  # not fork: the driver's threads
    with _child_log() as log:
        receive, send = spawn.Pipe(duplex=False)
        child = spawn.Process(target=_check, args=([d.index for d in found], send),
                              daemon=True)
        try:
            with _stderr_into(log):
                child.start()
        except Exception as err:  # no process (fork or exec refused, no memory, ...)
            receive.close()
            send.close()
            return [f"{NOT_STARTED}: starting a process failed ({type(err).__name__}: "
                    f"{err})"] * len(found)
        send.close()
        out: list[str | None] = []
        started = False
        try:
            if not receive.poll(START_LIMIT_S) or receive.recv() != STARTED:
                raise TimeoutError
            started = True
            for _ in found:
                if not receive.poll(CHECK_LIMIT_S):
                    out.append(f"its check did not finish within {CHECK_LIMIT_S:g} s (the "
                               "driver hangs)")
                    break
                out.append(receive.recv())
        except EOFError:  # the child died without an answer
            child.join(5)
            words = _last_words(log)
            said = f": {words}" if words else ""
            if started:
                out.append(f"its check crashed the process (exit code {child.exitcode}){said}")
            else:  # before it sent STARTED: Python or its imports failed, not the driver
                out = [f"{NOT_STARTED}: the process checking it ended before using OpenCL "
                       f"(exit code {child.exitcode}){said}"] * len(found)
        except TimeoutError:
            out = [f"{NOT_STARTED}: the process checking it did not start within "
                   f"{START_LIMIT_S:g} s"] * len(found)
        finally:
            if child.is_alive():
                child.kill()
            child.join()
            receive.close()
    return out


def _check(indices: list[tuple[int, int]], send: Any) -> None:
    """The child of :func:`_checked_in_child`: :data:`STARTED`, then the device of each index
    checked, in order (its stdout hidden; its stderr is the parent's file)."""
    send.send(STARTED)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 1)
    listed = {d.index: d for d in devices()}
    for index in indices:
        found = listed.get(index)
        send.send(device_error(found) if found else "not listed again in a new process")
