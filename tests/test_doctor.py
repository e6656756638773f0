"""``clspmv doctor``: device findings on real and mocked platform lists, and the exit status
``dev.sh`` relies on."""

from __future__ import annotations

import dataclasses

import pytest

import clspmv
from clspmv import doctor
from clspmv.device import SIMULATOR


def test_real_devices_build(device) -> None:
    findings = doctor.device_findings([device])
    assert [f.ok for f in findings] == [True], doctor.report(findings)
    assert str(device) in findings[0].what
    assert doctor.usable_device_exists(findings)


def test_no_platform_says_what_to_install() -> None:
    findings = doctor.device_findings([])
    assert not doctor.usable_device_exists(findings)
    text = doctor.report(findings)
    assert "OpenCL platforms: none found" in text
    assert "fix: install an OpenCL driver" in text and "pocl-opencl-icd" in text


def test_pocl_whose_llvm_lacks_the_cpu(device) -> None:
    """A PoCL listed but unable to build (PoCL 3.0 on Zen 5): named, with its fix, and no usable
    device unless another one builds."""
    broken = dataclasses.replace(device, name="pthread-generic", platform="Portable Computing "
                                 "Language")
    error = "clBuildProgram failed: BUILD_PROGRAM_FAILURE - error: unknown target CPU 'generic'"
    findings = doctor.device_findings([broken], probe=lambda d: error)
    assert not doctor.usable_device_exists(findings)
    text = doctor.report(findings)
    assert "kernels do not build: clBuildProgram failed" in text
    assert "pip uninstall pocl-binary-distribution" in text
    assert "no device other than the simulator builds kernels" in text

    both = doctor.device_findings([broken, device],
                                  probe=lambda d: error if d is broken else None)
    assert doctor.usable_device_exists(both)


def test_simulator_alone_is_not_usable(device) -> None:
    sim = dataclasses.replace(device, platform=SIMULATOR, name="Oclgrind Simulator")
    findings = doctor.device_findings([sim], probe=lambda d: None)
    assert "simulator: never the default" in findings[0].detail
    assert not doctor.usable_device_exists(findings)


def test_require_device_exit_status(capsys, monkeypatch) -> None:
    assert doctor.main(["--require-device"]) == 0  # this machine has a device (the tests run)
    monkeypatch.setattr(doctor, "devices", lambda: [])
    assert doctor.main(["--require-device"]) == 1
    assert "none found" in capsys.readouterr().out


def test_default_device_is_marked() -> None:
    findings = doctor.device_findings()
    default = str(clspmv.select_device())
    marked = [f for f in findings if "the default device" in f.detail]
    assert [f.what for f in marked] == [default]


@pytest.mark.parametrize("fp64", [True, False])
def test_fp64_reported(device, fp64) -> None:
    d = dataclasses.replace(device, fp64=fp64)
    detail = doctor.device_findings([d], probe=lambda _: None)[0].detail
    assert ("no fp64" in detail) is not fp64
