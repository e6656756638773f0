"""``clspmv doctor``: what this machine offers clspmv, and the one-line fix for each problem.

It lists every OpenCL platform and device, builds a small kernel on each (a driver can list a
device whose compiler fails: PoCL 3.0's LLVM on AMD Zen 5, for one), and says whether it has
fp64 and which device is the default; then the baselines the benchmark compares against and the
format-selection calibration of each device. ``python -m clspmv.doctor --require-device`` exits
0 only when some device other than the Oclgrind simulator builds a kernel: ``dev.sh`` asks it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyopencl as cl

from .device import SIMULATOR, Device, devices, select_device
from .errors import DeviceError

PROBE_SOURCE = "__kernel void probe(__global float *a) { a[get_global_id(0)] = 1.0f; }"

NO_DEVICE_FIX = ("install an OpenCL driver: a GPU vendor's, or PoCL for the CPU "
                 "(bash dev.sh does it; Debian/Ubuntu: sudo apt-get install pocl-opencl-icd)")


@dataclass(frozen=True)
class Finding:
    """One line of the doctor's report: what was checked, whether it is fine, the detail, and
    the one-line fix when it is not."""

    topic: str
    what: str
    ok: bool
    detail: str
    fix: str = ""

    def line(self) -> str:
        mark = "ok " if self.ok else "-- "
        text = f"{mark}{self.topic:<12} {self.what}: {self.detail}"
        return text + (f"\n{'':16}fix: {self.fix}" if self.fix and not self.ok else "")


def build_error(device: Device) -> str | None:
    """None when a small kernel builds and runs on ``device``, else the first line of the
    error."""
    try:
        ctx = cl.Context([device.cl_device])
        program = cl.Program(ctx, PROBE_SOURCE).build()
        queue = cl.CommandQueue(ctx)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, 4)
        program.probe(queue, (1,), None, buf)
        queue.finish()
    except Exception as err:  # any failure of the driver means: this device does not work
        return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]
    return None


def _build_fix(device: Device, error: str) -> str:
    if "unknown target CPU" in error:
        return ("this PoCL's LLVM does not know the CPU: pip uninstall pocl-binary-distribution "
                "and install Debian's pocl-opencl-icd (bash dev.sh does it)")
    return f"update or reinstall the OpenCL driver of {device.platform}"


def device_findings(found: Sequence[Device] | None = None,
                    probe: Callable[[Device], str | None] = build_error) -> list[Finding]:
    """A finding per device (builds a kernel? fp64?) and one for the default device."""
    found = devices() if found is None else list(found)
    if not found:
        return [Finding("device", "OpenCL platforms", False, "none found", NO_DEVICE_FIX)]
    try:
        default: Device | None = select_device(None) if found == devices() else None
    except DeviceError:
        default = None
    out = []
    for d in found:
        error = probe(d)
        notes = [d.type, f"{d.compute_units} compute units",
                 "fp64" if d.fp64 else "no fp64 (float32 only)"]
        if d is default:
            notes.append("the default device")
        if d.platform == SIMULATOR:
            notes.append("simulator: never the default")
        if error is None:
            out.append(Finding("device", str(d), True, ", ".join(notes)))
        else:
            out.append(Finding("device", str(d), False, f"kernels do not build: {error}",
                               _build_fix(d, error)))
    if not usable_device_exists(out):
        out.append(Finding("device", "usable devices", False,
                           "no device other than the simulator builds kernels", NO_DEVICE_FIX))
    return out


def baseline_findings(baselines: Mapping[str, Any]) -> list[Finding]:
    """A finding per baseline (``name -> Baseline``, :data:`clspmv.bench.registry.BASELINES`):
    its availability check (what was found: versions, library paths) and the fix when it
    cannot run. A baseline without a check, or whose check raises, says so."""
    out = []
    for name, baseline in baselines.items():
        check = getattr(baseline, "availability", None)
        if check is None:
            out.append(Finding("baseline", name, True, "no availability check (the benchmark "
                               "records why when it cannot run)"))
            continue
        try:
            found = check()
        except Exception as err:  # a broken library: report it, do not stop the doctor
            out.append(Finding("baseline", name, False,
                               f"the check failed: {type(err).__name__}: {err}",
                               f"reinstall the library behind the {name} baseline"))
            continue
        out.append(Finding("baseline", name, found.ok, found.detail, found.fix))
    return out


CALIBRATION_MODULE = "clspmv.model"
"""The format-selection model whose per-device calibration the doctor reports."""


def calibration_findings(found: Sequence[Device] | None = None) -> list[Finding]:
    """The calibration state of each device for ``format="auto"``: asked of
    :data:`CALIBRATION_MODULE`'s ``calibration_findings(devices)`` (a list of
    :class:`Finding`) when the module has one; "not available in this version" when there is
    no such module."""
    try:
        model = importlib.import_module(CALIBRATION_MODULE)
    except ModuleNotFoundError as err:
        if err.name not in (CALIBRATION_MODULE, "clspmv"):
            raise  # the model exists but something it needs is missing: a real problem
        return [Finding("calibration", "format selection", True,
                        "not available in this version")]
    hook = getattr(model, "calibration_findings", None)
    if hook is None:
        return [Finding("calibration", "format selection", True,
                        f"{CALIBRATION_MODULE} reports no calibration state")]
    return list(hook(devices() if found is None else list(found)))


def report(findings: Sequence[Finding]) -> str:
    """The findings as text, one per line (fixes indented under the failures)."""
    return "\n".join(f.line() for f in findings)


def usable_device_exists(findings: Sequence[Finding]) -> bool:
    """True when a device other than the Oclgrind simulator builds kernels."""
    return any(f.ok and f.topic == "device" and SIMULATOR not in f.what for f in findings)


def main(argv: Sequence[str] | None = None,
         baselines: Mapping[str, Any] | None = None) -> int:
    """``python -m clspmv.doctor [--require-device]`` (also ``clspmv doctor``): the device
    findings, then (without ``--require-device``) those of ``baselines`` (default: the
    benchmark's registered ones) and the calibration."""
    parser = argparse.ArgumentParser(prog="python -m clspmv.doctor", description=__doc__)
    parser.add_argument("--require-device", action="store_true",
                        help="only check the devices; exit 1 unless one builds kernels")
    args = parser.parse_args(argv)
    findings = device_findings()
    if args.require_device:
        print(report(findings))
        return 0 if usable_device_exists(findings) else 1
    if baselines is None:  # a command, like cli.py: it reports on the benchmark's baselines
        from .bench.registry import BASELINES as baselines
    findings += baseline_findings(baselines) + calibration_findings()
    print(report(findings))
    problems = [f for f in findings if not f.ok]
    print(f"\n{len(problems)} problem{'s' if len(problems) != 1 else ''}"
          + (": each with its fix above" if problems else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
