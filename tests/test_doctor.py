"""``clspmv doctor``: device findings on real and mocked platform lists, and the exit status
``dev.sh`` relies on."""

from __future__ import annotations

import dataclasses

import pytest
from calibration_fixture import fixture_calibration

import clspmv
from clspmv import doctor, ell_order
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


# -- baselines and calibration (issue 14) ---------------------------------------------------------
class FakeBaseline:
    def __init__(self, check) -> None:
        self.availability = check


def test_baselines_found_and_missing() -> None:
    from clspmv.bench.availability import Availability

    def broken():
        raise OSError("libcudart.so.12: cannot open shared object file")

    findings = doctor.baseline_findings({
        "scipy": FakeBaseline(lambda: Availability(True, "scipy 1.17.1")),
        "mkl": FakeBaseline(lambda: Availability(False, "sparse_dot_mkl is not installed",
                                                 'pip install "clspmv[mkl]"')),
        "cusparse": FakeBaseline(broken),
        "other": FakeBaseline(None)})
    assert [(f.what, f.ok) for f in findings] == [
        ("scipy", True), ("mkl", False), ("cusparse", False), ("other", True)]
    text = doctor.report(findings)
    assert "ok baseline     scipy: scipy 1.17.1" in text
    assert "-- baseline     mkl: sparse_dot_mkl is not installed" in text
    assert 'fix: pip install "clspmv[mkl]"' in text
    assert "the check failed: OSError: libcudart.so.12" in text
    assert "fix: reinstall the library behind the cusparse baseline" in text


def test_registered_baselines_have_checks() -> None:
    from clspmv.bench.registry import BASELINES

    findings = doctor.baseline_findings(BASELINES)
    assert [f.what for f in findings] == list(BASELINES)
    scipy = findings[0]
    assert scipy.ok and scipy.detail.startswith("scipy ")
    for f in findings:  # each problem comes with its fix
        assert f.ok or f.fix, f


def test_mkl_check_names_library_path(monkeypatch) -> None:
    from clspmv.bench import availability

    monkeypatch.setattr(availability.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(availability, "find_mkl_rt", lambda: "/opt/lib/libmkl_rt.so.2")
    found = availability.mkl()
    assert not found.ok and "/opt/lib/libmkl_rt.so.2" in found.detail
    assert 'pip install "clspmv[mkl]"' in found.fix
    cupy = availability.cusparse()
    assert not cupy.ok and "cupy is not installed" in cupy.detail and "cupy-cuda" in cupy.fix


def test_calibration_state(device, monkeypatch, tmp_path) -> None:
    """None stored: fine (the first format='auto' measures one), with the command that makes
    it; a stored calibration: its kind and file."""
    from clspmv.model import store
    from clspmv.model.timemodel import quick_default

    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    (finding,) = doctor.calibration_findings([device])
    assert finding.ok and finding.topic == "calibration" and str(device) in finding.what
    assert "none yet: the first format='auto' measures it" in finding.detail
    assert finding.fix == f"clspmv calibrate --device {device.index[0]}:{device.index[1]}"
    store.save(quick_default(device.name, device.driver_version, clspmv.__version__,
                             device.type, store.SINGLE_FORMATS), device)
    (finding,) = doctor.calibration_findings([device])
    assert finding.detail == f"quick-default, stored in {store.calibration_path(device)}"
    ell_order.save(device, ell_order.EllOrder(  # a CPU's measured order: row-major from 4 slots
        {w: (1.0, 1.2) if w < 4 else (2.0, 1.0) for w in ell_order.MEASURED_WIDTHS}))
    measured = fixture_calibration(device)
    store.save(dataclasses.replace(measured, ell_row_major_width=4), device)
    (finding,) = doctor.calibration_findings([device])
    assert finding.detail == (f"measured, stored in {store.calibration_path(device)}; ELL rows "
                              "row-major from 4 slots (measured)")
    store.calibration_path(device).write_text("{not json")
    (finding,) = doctor.calibration_findings([device])
    assert "is unusable and will be measured again on first use" in finding.detail


def test_doctor_without_pocl(monkeypatch, capsys) -> None:
    """No platform at all: the device problem and its fix, the baselines still listed."""
    monkeypatch.setattr(doctor, "devices", lambda: [])
    assert doctor.main([], baselines={}) == 0
    out = capsys.readouterr().out
    assert "OpenCL platforms: none found" in out and "fix: install an OpenCL driver" in out
    assert "problem" in out  # no device: no calibration to report
