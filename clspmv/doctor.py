"""``clspmv doctor``: what this machine offers clspmv, and the one-line fix for each problem.

It lists every OpenCL platform and device (and each one the driver could not list or describe),
checks each device in a process of its own stopped after :data:`CHECK_LIMIT_S` (a driver can
list a device whose compiler fails, as an LLVM older than the CPU does, or hangs, or crashes):
small float32 and float64 kernels build and run, and the device probes of
:mod:`clspmv.device_probes` answer. It says whether a device has fp64, which one is the default
(and when there is none), and flags the Oclgrind simulator as not suitable for measurements;
then the baselines the benchmark compares against (one for a GPU this machine lacks is a note
marked ``i``, not a problem) and the format-selection calibration of each device.
``python -m clspmv.doctor --require-device`` prints one line, the devices that work or why none
does, and exits 0 only when some device other than the simulator works: ``dev.sh`` asks it
after each way of getting a device it tries.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import multiprocessing
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

import pyopencl as cl

from .device import Device, devices, select_device, unreadable
from .device_facts import driver_error
from .errors import DeviceError

PROBE_SOURCE = "__kernel void probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"
FP64_SOURCE = ("#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
               "__kernel void probe(__global double *a) { a[get_global_id(0)] = 1.0; }")

CHECK_LIMIT_S = 60.0
"""Seconds a device's check may take (a few on a 2-core CPU)."""
START_LIMIT_S = 120.0
"""Seconds the checking process may take to start, before it touches OpenCL (Python and the
imports of numpy, scipy and pyopencl: seconds, more on a cold or busy machine)."""

NO_DEVICE_FIX = ("install an OpenCL driver: a GPU vendor's, or PoCL for the CPU "
                 "(bash dev.sh does it; Debian/Ubuntu: sudo apt-get install pocl-opencl-icd)")
USABLE = "usable devices"
"""The ``what`` of the finding that no device works."""


@dataclass(frozen=True)
class Finding:
    """One line of the doctor's report: what was checked, whether it is fine, the detail, and
    the one-line fix when it is not."""

    topic: str
    what: str
    ok: bool
    detail: str
    fix: str = ""
    note: bool = False
    """Not fine, but no problem here (a GPU baseline on a machine without an NVIDIA GPU): said,
    not counted among the problems, no fix shown."""
    simulator: bool = False
    """The finding is about the Oclgrind simulator (:attr:`clspmv.Device.is_simulator`)."""

    @property
    def problem(self) -> bool:
        """Whether the finding is a problem to fix (neither fine nor a note)."""
        return not self.ok and not self.note

    def line(self) -> str:
        mark = "ok " if self.ok else "i  " if self.note else "-- "
        text = f"{mark}{self.topic:<12} {self.what}: {self.detail}"
        return text + (f"\n{'':16}fix: {self.fix}" if self.fix and self.problem else "")


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
CACHE_FIX = ("set XDG_CACHE_HOME to a writable folder, or make the home folder ($HOME) "
             "writable: PoCL keeps its kernel cache there too")


def explained(why: str) -> str:
    """A driver's or pyopencl's error as :func:`reason` says it, pyopencl's cryptic failure of
    an unwritable cache (:data:`PYOPENCL_CACHE_FAILURE`) in words."""
    return CACHE_FAILURE if PYOPENCL_CACHE_FAILURE in why else why


def _pocl_version(device: Device) -> str | None:
    found = re.search(r"PoCL (\d+\.\d+)", device.cl_device.platform.version)
    return found.group(1) if found else None


def _from_pypi(device: Device) -> bool:
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
    return f"PoCL {version}" + (" from PyPI" if _from_pypi(device) else "")


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


def _fix(device: Device, error: str) -> str:
    if error.startswith(NOT_STARTED):
        return ("fix what the error says (the Python environment, the home or temporary "
                "folder, the machine's memory or process limits), then run clspmv doctor "
                "again: the OpenCL driver was not reached")
    if CACHE_FAILURE in error:
        return CACHE_FIX
    if "unknown target CPU" in error:
        if _from_pypi(device):
            return ("pip uninstall pocl-binary-distribution, then install Debian's "
                    "pocl-opencl-icd (bash dev.sh does both)")
        return ("install a PoCL whose LLVM knows this CPU (Debian/Ubuntu: pocl-opencl-icd; "
                "conda: pocl), or use another device")
    return (f"update or reinstall the OpenCL driver of {device.platform}, or use another device "
            "(clspmv devices lists them)")


def device_findings(found: Sequence[Device] | None = None,
                    probe: Callable[[Device], str | None] | None = None) -> list[Finding]:
    """A finding per device (works, by ``probe`` of each, default :func:`checked_device_errors`;
    fp64? the default? a simulator?) and per platform or device the driver could not read;
    then one when no device works, or when there is no default device or it is the
    simulator."""
    listed = found is None or list(found) == devices()
    found = devices() if found is None else list(found)
    out = [Finding("device", which, False, f"could not be read: {explained(why)}",
                   CACHE_FIX if PYOPENCL_CACHE_FAILURE in why else
                   "update or reinstall its OpenCL driver, or remove the driver's file in "
                   "/etc/OpenCL/vendors if it is not used")
           for which, why in (unreadable() if listed else [])]
    if not found and not out:
        return [Finding("device", "OpenCL platforms", False, "none found", NO_DEVICE_FIX)]
    default, no_default = None, ""
    if listed:
        try:
            default = select_device(None)
        except DeviceError as err:
            no_default = str(err).splitlines()[0].removesuffix("; available devices:")
    errors = [probe(d) for d in found] if probe else checked_device_errors(found)
    for d, error in zip(found, errors, strict=True):
        if error is not None:
            out.append(Finding("device", str(d), False, f"does not work: {error}",
                               _fix(d, error), simulator=d.is_simulator))
            continue
        notes = [d.type, f"{d.compute_units} compute unit{'s' if d.compute_units != 1 else ''}",
                 "fp64" if d.fp64 else "no fp64 (float32 only)"]
        if d is default:
            notes.append("the default device")
        if d.is_simulator:
            notes.append("the Oclgrind simulator, for checking kernels: not suitable for "
                         "measurements, taken only where named")
        out.append(Finding("device", str(d), True, ", ".join(notes), simulator=d.is_simulator))
    if not usable_device_exists(out):
        simulator = " other than the Oclgrind simulator" if any(
            d.is_simulator for d in found) else ""
        out.append(Finding("device", USABLE, False,
                           f"no device{simulator} builds and runs kernels", NO_DEVICE_FIX))
    elif no_default:
        out.append(Finding("device", "default device", False, f"none: {no_default}",
                           "set CLSPMV_DEVICE to a device above (clspmv devices), or unset it "
                           "and PYOPENCL_CTX"))
    elif default is not None and default.is_simulator:
        out.append(Finding("device", "default device", False,
                           f"$CLSPMV_DEVICE names the Oclgrind simulator {default}: products "
                           "thousands of times slower than hardware, nothing measured",
                           "unset CLSPMV_DEVICE, or set it to a real device (clspmv devices)"))
    return out


NVIDIA_DRIVER_GPUS = "/proc/driver/nvidia/gpus"
"""The folder where NVIDIA's Linux driver lists its GPUs (:func:`nvidia_gpu_present`)."""
NO_NVIDIA = "; it runs only where an NVIDIA GPU is, and none was found here"
"""What a GPU baseline's finding adds where it cannot run and need not (a note)."""


def nvidia_gpu_present(found: Sequence[Device]) -> bool:
    """Whether this machine has an NVIDIA GPU: an OpenCL device of NVIDIA's platform among
    ``found``, or one that NVIDIA's Linux driver lists (``/proc/driver/nvidia/gpus``: a GPU
    without NVIDIA's OpenCL, which CUDA and so cupy can still use)."""
    if any("NVIDIA" in d.platform for d in found):
        return True
    try:
        with os.scandir(NVIDIA_DRIVER_GPUS) as listed:
            return any(listed)
    except OSError:
        return False


def baseline_findings(baselines: Mapping[str, Any], nvidia: bool | None = None
                      ) -> list[Finding]:
    """A finding per baseline (``name -> Baseline``, :data:`clspmv.bench.registry.BASELINES`):
    its availability check (what was found: versions, library paths) and the fix when it
    cannot run. A baseline without a check, or whose check raises, says so. A GPU baseline
    (``device_type`` ``"gpu"``: cuSPARSE, through CUDA) that cannot run where no NVIDIA GPU is
    (``nvidia``; None: :func:`nvidia_gpu_present` of the devices found) is a note, not a
    problem: it has nothing to measure on."""
    if nvidia is None:
        nvidia = nvidia_gpu_present(devices())
    out = []
    for name, baseline in baselines.items():
        nothing_to_measure = not nvidia and getattr(baseline, "device_type", "cpu") == "gpu"
        check = getattr(baseline, "availability", None)
        if check is None:
            out.append(Finding("baseline", name, True, "no availability check (the benchmark "
                               "records why when it cannot run)"))
            continue
        try:
            found = check()
        except Exception as err:  # a broken library: report it, do not stop the doctor
            out.append(Finding("baseline", name, False,
                               f"the check failed: {type(err).__name__}: {err}"
                               + (NO_NVIDIA if nothing_to_measure else ""),
                               f"reinstall the library behind the {name} baseline",
                               note=nothing_to_measure))
            continue
        note = nothing_to_measure and not found.ok
        out.append(Finding("baseline", name, found.ok, found.detail + (NO_NVIDIA if note else ""),
                           found.fix, note=note))
    return out


def calibration_findings(found: Sequence[Device] | None = None) -> list[Finding]:
    """The calibration state of each device for ``format="auto"``
    (:func:`clspmv.model.calibration_findings`)."""
    from .model import calibration_findings as state

    return [Finding("calibration", **entry)  # type: ignore[arg-type]
            for entry in state(devices() if found is None else list(found))]


def report(findings: Sequence[Finding]) -> str:
    """The findings as text, one per line (fixes indented under the failures)."""
    return "\n".join(f.line() for f in findings)


def _working(findings: Sequence[Finding]) -> list[str]:
    """The devices, other than the Oclgrind simulator, that work (:func:`device_findings`)."""
    return [f.what for f in findings if f.topic == "device" and f.ok and not f.simulator]


def usable_device_exists(findings: Sequence[Finding]) -> bool:
    """True when a device other than the Oclgrind simulator builds and runs kernels."""
    return bool(_working(findings))


def verdict(findings: Sequence[Finding]) -> str:
    """The device findings in one line: the devices that work, else why none does (each
    device's or platform's problem)."""
    working = _working(findings)
    if working:
        return f"builds and runs kernels: {'; '.join(working)}"
    problems = [f for f in findings if f.topic == "device" and not f.ok]
    head = next((f.detail for f in problems if f.what == USABLE), "no OpenCL platform found")
    return "; ".join([head] + [f"{f.what}: {f.detail}" for f in problems
                               if f.what not in (USABLE, "OpenCL platforms")])


def main(argv: Sequence[str] | None = None,
         baselines: Mapping[str, Any] | None = None) -> int:
    """``python -m clspmv.doctor [--require-device]`` (also ``clspmv doctor``): the device
    findings, then (without ``--require-device``) those of ``baselines`` (default: the
    benchmark's registered ones) and the calibration."""
    parser = argparse.ArgumentParser(prog="python -m clspmv.doctor", description=__doc__)
    parser.add_argument("--require-device", action="store_true",
                        help="only check the devices: one line, the devices that work or why "
                             "none does; exit 1 unless one works")
    args = parser.parse_args(argv)
    findings = device_findings()
    if args.require_device:
        print(verdict(findings))
        return 0 if usable_device_exists(findings) else 1
    if baselines is None:  # a command, like cli.py: it reports on the benchmark's baselines
        from .bench.registry import BASELINES as baselines
    findings += baseline_findings(baselines) + calibration_findings()
    print(report(findings))
    print(f"\n{summary(findings)}")
    return 0


def summary(findings: Sequence[Finding]) -> str:
    """The count of problems (and of notes, marked ``i``, which are none) under the report."""
    problems = sum(f.problem for f in findings)
    notes = sum(f.note for f in findings)
    return (f"{problems} problem{'s' if problems != 1 else ''}"
            + (": each with its fix above" if problems else "")
            + (f"; {notes} note{'s' if notes != 1 else ''} (i: not a problem here)"
               if notes else ""))


if __name__ == "__main__":
    sys.exit(main())
