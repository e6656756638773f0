"""``clspmv doctor``: device findings on real and mocked platform lists, and the exit status
``dev.sh`` relies on."""

from __future__ import annotations

import dataclasses
import multiprocessing.context

import pyopencl as cl
import pytest
from calibration_fixture import fixture_calibration
from ell_orders import order_from

import clspmv
from clspmv import device as device_module
from clspmv import doctor, doctor_check, ell_order
from clspmv.device import SIMULATOR


def test_real_devices_build(device) -> None:
    """Checked in a process of its own: small kernels build and run, the device probes
    answer."""
    findings = doctor.device_findings([device])
    assert [f.ok for f in findings] == [True], doctor.report(findings)
    assert str(device) in findings[0].what
    assert doctor.usable_device_exists(findings)
    assert doctor.verdict(findings) == f"builds and runs kernels: {device}"


def test_no_platform_says_what_to_install() -> None:
    findings = doctor.device_findings([])
    assert not doctor.usable_device_exists(findings)
    text = doctor.report(findings)
    assert "OpenCL platforms: none found" in text
    assert "fix: install an OpenCL driver" in text and "pocl-opencl-icd" in text
    assert doctor.verdict(findings) == "no OpenCL platform found"


UNKNOWN_CPU = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: "
               "BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
               "Build on <pyopencl.Device 'pthread-znver5' on 'Portable Computing Language'>:"
               "\n\nerror: unknown target CPU 'znver5'\nnote: valid target CPU values are: "
               "nocona, core2, penryn\n")


@pytest.mark.parametrize("pypi", [True, False])
def test_pocl_whose_llvm_lacks_the_cpu(device, monkeypatch, pypi) -> None:
    """A PoCL listed but unable to build (PoCL 3.0 from PyPI on Zen 5): its reason in one line
    (the LLVM's, not pyopencl's thrice-repeated failure), its fix, and no usable device unless
    another one works; no simulator is mentioned where none is listed."""
    version = doctor_check._pocl_version(device)
    if version is None:
        pytest.skip(f"{device.platform} is not PoCL")
    wheel = {True: f"{version}.0", False: None}[pypi]

    def installed(name: str) -> str:
        if wheel is None:
            raise doctor_check.importlib.metadata.PackageNotFoundError(name)
        return wheel

    monkeypatch.setattr(doctor_check.importlib.metadata, "version", installed)
    broken = dataclasses.replace(device, name="pthread-znver5",
                                 platform="Portable Computing Language")
    reason = doctor_check.reason(broken, RuntimeError(UNKNOWN_CPU))
    from_pypi = " from PyPI" if pypi else ""
    assert reason == (f"PoCL {version}{from_pypi} cannot compile for this CPU (LLVM: unknown "
                      "target CPU 'znver5')")
    findings = doctor.device_findings([broken], probe=lambda d: reason)
    assert not doctor.usable_device_exists(findings)
    text = doctor.report(findings)
    assert f"{broken}: does not work: {reason}" in text
    assert ("pip uninstall pocl-binary-distribution" in text) is pypi
    assert doctor.verdict(findings) == f"no device builds and runs kernels; {broken}: does not " \
                                       f"work: {reason}"
    assert "simulator" not in text

    both = doctor.device_findings([broken, device],
                                  probe=lambda d: reason if d is broken else None)
    assert doctor.usable_device_exists(both)
    assert doctor.verdict(both) == f"builds and runs kernels: {device}"


def test_compiler_error_in_one_line(device) -> None:
    """A real build failure: pyopencl's first line once, then the compiler's first error
    without its temporary file's name."""
    with pytest.raises(cl.Error) as err:
        cl.Program(device.context, "__kernel void k(__global float *a) { a[0] = b; }").build()
    reason = doctor_check.reason(device, err.value)
    assert reason.startswith("clBuildProgram failed: BUILD_PROGRAM_FAILURE")
    assert reason.count("BUILD_PROGRAM_FAILURE") == 1 and "\n" not in reason
    assert "undeclared identifier 'b'" in reason and ".cl:" not in reason


def test_a_check_past_its_bound_is_flagged(device, monkeypatch) -> None:
    """A device whose check does not finish in time (here: a bound too short to start the
    process) is a failing finding with its fix, not a hang; the doctor goes on."""
    monkeypatch.setattr(doctor_check, "CHECK_LIMIT_S", 0.01)
    findings = doctor.device_findings([device])
    assert [f.ok for f in findings] == [False, False]
    assert findings[0].detail == ("does not work: its check did not finish within 0.01 s (the "
                                  "driver hangs)")
    assert findings[0].fix == (f"update or reinstall the OpenCL driver of {device.platform}, "
                               "or use another device (clspmv devices lists them)")
    assert findings[1].what == doctor.USABLE


def test_a_device_gone_from_a_new_process(device) -> None:
    ghost = dataclasses.replace(device, index=(97, 3))
    assert doctor.checked_device_errors([ghost, device]) == [
        "not listed again in a new process", None]


def test_simulator_alone_is_not_usable(device) -> None:
    sim = dataclasses.replace(device, platform=SIMULATOR, name="Oclgrind Simulator")
    findings = doctor.device_findings([sim], probe=lambda d: None)
    assert findings[0].ok and findings[0].detail.endswith(
        "the Oclgrind simulator, for checking kernels: not suitable for measurements, taken "
        "only where named")
    assert not doctor.usable_device_exists(findings)
    assert doctor.verdict(findings) == ("no device other than the Oclgrind simulator builds and "
                                        "runs kernels")


@pytest.fixture
def listed(device, monkeypatch):
    """The simulator and ``device`` as the devices found (no variable set), every check
    passing."""
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    sim = dataclasses.replace(device, platform=SIMULATOR, name="Oclgrind Simulator", type="gpu",
                              index=(0, 0))
    real = dataclasses.replace(device, index=(1, 0))
    monkeypatch.setattr(device_module, "_devices", [sim, real])
    monkeypatch.setattr(device_module, "_unreadable", [])
    monkeypatch.setattr(doctor, "checked_device_errors", lambda found: [None] * len(found))
    return sim, real


def test_default_device_problems(listed, monkeypatch) -> None:
    """No default device (a bad $CLSPMV_DEVICE), or the simulator named by it: flagged."""
    sim, real = listed
    assert all(f.ok for f in doctor.device_findings())
    monkeypatch.setenv("CLSPMV_DEVICE", "0:0")
    last = doctor.device_findings()[-1]
    assert (last.what, last.ok) == ("default device", False)
    assert last.detail == (f"$CLSPMV_DEVICE names the Oclgrind simulator {sim}: products "
                           "thousands of times slower than hardware, nothing measured")
    monkeypatch.setenv("CLSPMV_DEVICE", "gpu")  # a type never gives the simulator
    last = doctor.device_findings()[-1]
    assert not last.ok and last.detail.startswith(
        "none: no GPU (from $CLSPMV_DEVICE) besides the Oclgrind simulator")
    assert "set CLSPMV_DEVICE to a device above" in last.fix


def test_unreadable_platform_is_flagged(listed, monkeypatch, capsys) -> None:
    monkeypatch.setattr(device_module, "_unreadable",
                        [("platform 2 (Broken CL)", "clGetDeviceIDs failed: DEVICE_NOT_FOUND")])
    findings = doctor.device_findings()
    assert findings[0] == doctor.Finding(
        "device", "platform 2 (Broken CL)", False,
        "could not be read: clGetDeviceIDs failed: DEVICE_NOT_FOUND",
        "update or reinstall its OpenCL driver, or remove the driver's file in "
        "/etc/OpenCL/vendors if it is not used")
    assert doctor.main(["--require-device"]) == 0  # the other device works
    monkeypatch.setattr(device_module, "_devices", [listed[0]])
    assert doctor.main(["--require-device"]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == (
        "no device other than the Oclgrind simulator builds and runs kernels; platform 2 "
        "(Broken CL): could not be read: clGetDeviceIDs failed: DEVICE_NOT_FOUND")


def test_require_device_exit_status(capsys, monkeypatch) -> None:
    assert doctor.main(["--require-device"]) == 0  # this machine has a device (the tests run)
    assert capsys.readouterr().out.startswith("builds and runs kernels: [")
    monkeypatch.setattr(doctor, "devices", lambda: [])
    monkeypatch.setattr(doctor, "unreadable", lambda: [])
    assert doctor.main(["--require-device"]) == 1
    assert capsys.readouterr().out == "no OpenCL platform found\n"


def test_default_device_is_marked() -> None:
    findings = doctor.device_findings(probe=lambda d: None)
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
    assert "none yet: the first format='auto' measures " in finding.detail
    assert finding.fix == f"clspmv calibrate --device {device.index[0]}:{device.index[1]}"
    store.save(quick_default(device.name, device.driver_version, clspmv.__version__,
                             device.type, store.SINGLE_FORMATS), device)
    (finding,) = doctor.calibration_findings([device])
    assert finding.detail == f"quick-default, stored in {store.calibration_path(device)}"
    ell_order.save(device, order_from(4, 2))  # a CPU's measured order
    measured = fixture_calibration(device)
    store.save(dataclasses.replace(measured, ell_row_major_width=4,
                                   ell_scattered_row_major_width=2), device)
    (finding,) = doctor.calibration_findings([device])
    assert finding.detail == (f"measured, stored in {store.calibration_path(device)}; ELL rows "
                              "of 4 slots or more row-major, rows of scattered columns from 2 "
                              "(measured)")
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


# -- issue 43: a baseline for hardware this machine lacks is a note; issue 46: the simulator flag
class FakeGpuBaseline(FakeBaseline):
    device_type = "gpu"


def test_a_gpu_baseline_without_nvidia_is_a_note(monkeypatch, capsys) -> None:
    """cuSPARSE (through cupy) cannot run on a machine without an NVIDIA GPU: said as a note
    (marked i, no fix, not counted), while a missing CPU baseline stays a problem; where an
    NVIDIA GPU is, the same missing cupy is a problem with its fix."""
    from clspmv.bench.availability import Availability

    missing = Availability(False, "cupy is not installed", "pip install cupy-cuda12x")
    baselines = {"mkl": FakeBaseline(lambda: Availability(False, "sparse_dot_mkl is not "
                                                          "installed", "pip install mkl")),
                 "cusparse": FakeGpuBaseline(lambda: missing)}
    mkl, cusparse = doctor.baseline_findings(baselines, nvidia=False)
    assert mkl.problem and not mkl.note
    assert cusparse.note and not cusparse.problem and not cusparse.ok
    assert cusparse.line() == ("i  baseline     cusparse: cupy is not installed; it runs only "
                               "where an NVIDIA GPU is, and none was found here")
    assert doctor.summary([mkl, cusparse]) == ("1 problem: each with its fix above; 1 note (i: "
                                               "not a problem here)")
    (there,) = doctor.baseline_findings({"cusparse": FakeGpuBaseline(lambda: missing)},
                                        nvidia=True)
    assert there.problem and there.line() == ("-- baseline     cusparse: cupy is not installed"
                                              f"\n{'':16}fix: pip install cupy-cuda12x")

    monkeypatch.setattr(doctor, "devices", lambda: [])
    monkeypatch.setattr(doctor, "nvidia_gpu_present", lambda found: False)
    assert doctor.main([], baselines={"cusparse": FakeGpuBaseline(lambda: missing)}) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "1 problem: each with its fix above; 1 note (i: not a problem here)")  # no device


def test_nvidia_gpu_found_by_opencl_or_its_driver(device, monkeypatch, tmp_path) -> None:
    listed = tmp_path / "gpus"
    monkeypatch.setattr(doctor, "NVIDIA_DRIVER_GPUS", str(listed))
    assert not doctor.nvidia_gpu_present([device])  # no driver folder (this machine: no GPU)
    listed.mkdir()
    assert not doctor.nvidia_gpu_present([device])  # the driver, no GPU
    (listed / "0000:01:00.0").mkdir()
    assert doctor.nvidia_gpu_present([])
    listed.joinpath("0000:01:00.0").rmdir()
    assert doctor.nvidia_gpu_present([dataclasses.replace(device, platform="NVIDIA CUDA")])


def test_the_simulator_is_told_by_its_device_not_its_name(device) -> None:
    """A working device whose name reads like the simulator's listing is usable; the simulator
    is known by Device.is_simulator, which its finding carries."""
    lookalike = dataclasses.replace(device, name=f"card ({SIMULATOR}, gpu)")
    sim = dataclasses.replace(device, platform=SIMULATOR, name="Oclgrind Simulator")
    findings = doctor.device_findings([lookalike, sim], probe=lambda d: None)
    assert [f.simulator for f in findings] == [False, True]
    assert doctor.usable_device_exists(findings)
    assert doctor.verdict(findings) == f"builds and runs kernels: {lookalike}"


def _fails_before_opencl(indices: object, send: object) -> None:
    """A checking child that fails as an unreadable home folder makes Python fail, before it
    sends doctor_check.STARTED (run in the spawned child, so defined at module level)."""
    raise PermissionError(13, "Permission denied", "/home/nobody/.cache")


def test_a_child_failing_before_opencl_is_not_blamed_on_the_driver(device, monkeypatch) -> None:
    """The checking process's stderr is kept: one that ends before it touches OpenCL says its
    last line and a fix that is not the driver's, for every device it was to check."""
    monkeypatch.setattr(doctor_check, "_check", _fails_before_opencl)
    findings = doctor.device_findings([device, device])
    said = ("does not work: its check could not start: the process checking it ended before "
            "using OpenCL (exit code 1): PermissionError: [Errno 13] Permission denied: "
            "'/home/nobody/.cache'")
    assert [f.detail for f in findings[:2]] == [said, said]
    assert findings[0].fix == (
        "fix what the error says (the Python environment, the home or temporary folder, the "
        "machine's memory or process limits), then run clspmv doctor again: the OpenCL driver "
        "was not reached")
    assert "driver of" not in doctor.report(findings)


def test_a_child_that_cannot_be_started(device, monkeypatch) -> None:
    def refused(self: object) -> None:
        raise OSError(11, "Resource temporarily unavailable")

    monkeypatch.setattr(multiprocessing.context.SpawnProcess, "start", refused)
    assert doctor.checked_device_errors([device, device]) == [
        "its check could not start: starting a process failed (BlockingIOError: [Errno 11] "
        "Resource temporarily unavailable)"] * 2


def test_pyopencl_cache_failure_is_said_in_words(listed, device, monkeypatch) -> None:
    """pyopencl fails on an unwritable cache with KeyError('PYOPENCL_CACHE_FAILURE_FATAL'):
    the finding says what that means and how to fix it, not the driver."""
    words = ("pyopencl cannot use its compiler cache (in $XDG_CACHE_HOME, else "
             "~/.cache/pyopencl), and fails on that with KeyError "
             "'PYOPENCL_CACHE_FAILURE_FATAL' instead of building without it")
    fix = ("set XDG_CACHE_HOME to a writable folder, or make the home folder ($HOME) writable: "
           "PoCL keeps its kernel cache there too")
    assert doctor_check.reason(device, KeyError("PYOPENCL_CACHE_FAILURE_FATAL")) == words
    monkeypatch.setattr(device_module, "_unreadable",
                        [("[0:0] (Oclgrind)", "'PYOPENCL_CACHE_FAILURE_FATAL'")])
    first = doctor.device_findings()[0]
    assert (first.detail, first.fix) == (f"could not be read: {words}", fix)
    broken = doctor.device_findings([device], probe=lambda d: words)[0]
    assert (broken.detail, broken.fix) == (f"does not work: {words}", fix)
