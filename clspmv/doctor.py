"""``clspmv doctor``: what this machine offers clspmv, and the one-line fix for each problem.

It lists every OpenCL platform and device (and each one the driver could not list or describe),
checks each device in a process of its own stopped after
:data:`clspmv.doctor_check.CHECK_LIMIT_S` (:mod:`clspmv.doctor_check`: a driver can list a
device whose compiler fails, as an LLVM older than the CPU does, or hangs, or crashes): small
float32 and float64 kernels build and run, and the device probes of
:mod:`clspmv.device_probes` answer. It says whether a device has fp64, which one is the default
(and when there is none), and flags the Oclgrind simulator as not suitable for measurements;
then the baselines the benchmark compares against (one for a GPU this machine lacks is a note
marked ``i``, not a problem), the format-selection calibration of each device and, where one
processor has several CPU implementations (PoCL, Intel's runtime), which is fastest by their
stored calibrations (:mod:`clspmv.implementations`; recorded for the default device) or the
command that calibrates those not compared.
``python -m clspmv.doctor --require-device`` prints one line, the devices that work or why none
does, and exits 0 only when some device other than the simulator works: ``dev.sh`` asks it
after each way of getting a device it tries.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .device import Device, devices, select_device, unreadable
from .doctor_check import (
    CACHE_FAILURE,
    NOT_STARTED,
    PYOPENCL_CACHE_FAILURE,
    checked_device_errors,
    explained,
    from_pypi,
)
from .errors import DeviceError

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


CACHE_FIX = ("set XDG_CACHE_HOME to a writable folder, or make the home folder ($HOME) "
             "writable: PoCL keeps its kernel cache there too")
"""The fix of pyopencl's unusable compiler cache (:data:`clspmv.doctor_check.CACHE_FAILURE`)."""


def _fix(device: Device, error: str) -> str:
    if error.startswith(NOT_STARTED):
        return ("fix what the error says (the Python environment, the home or temporary "
                "folder, the machine's memory or process limits), then run clspmv doctor "
                "again: the OpenCL driver was not reached")
    if CACHE_FAILURE in error:
        return CACHE_FIX
    if "unknown target CPU" in error:
        if from_pypi(device):
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


def implementation_findings(found: Sequence[Device] | None = None) -> list[Finding]:
    """Which CPU implementation is fastest, per processor with two or more
    (:func:`clspmv.implementations.compare`, from the stored calibrations), recorded for the
    default device (:func:`clspmv.fastest_cpu.remember`) where two or more are calibrated."""
    from .implementations import compare_and_remember, finding

    return [Finding("cpu", **finding(comp))  # type: ignore[arg-type]
            for comp in compare_and_remember(found)]


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
    benchmark's registered ones), the calibration and the fastest CPU implementation."""
    parser = argparse.ArgumentParser(prog="python -m clspmv.doctor", description=__doc__)
    parser.add_argument("--require-device", action="store_true",
                        help="only check the devices: one line, the devices that work or why "
                             "none does; exit 1 unless one works")
    args = parser.parse_args(argv)
    if args.require_device:
        findings = device_findings()
        print(verdict(findings))
        return 0 if usable_device_exists(findings) else 1
    if baselines is None:  # a command, like cli.py: it reports on the benchmark's baselines
        from .bench.registry import BASELINES as baselines
    fastest = implementation_findings()  # first: it records the default CPU device
    findings = (device_findings() + baseline_findings(baselines) + calibration_findings()
                + fastest)
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
