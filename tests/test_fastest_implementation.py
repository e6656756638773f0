"""Which CPU implementation is fastest here (issue 44): the comparison of stored calibrations
(clspmv.implementations), the doctor's line, the record and the default device it sets
(clspmv.fastest_cpu), on two fake CPU devices with synthetic calibrations."""

from __future__ import annotations

import dataclasses
import os
from types import SimpleNamespace

import numpy as np
import pytest
from calibration_fixture import fixture_calibration

import clspmv
import clspmv.device as device_module
from clspmv import doctor, fastest_cpu
from clspmv.implementations import compare, reference_matrices
from clspmv.model import predict, store

SLOWER = 2.5
"""How much larger the slow fake device's kernel coefficients are."""


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch, tmp_path) -> tuple[clspmv.Device, clspmv.Device]:
    """(Intel's runtime, PoCL) as two fake CPU devices of one Xeon, in that order, in an empty
    cache folder, listed as the only devices besides the simulator; no device variable set."""
    real = next((d for d in clspmv.devices() if d.type == "cpu" and not d.is_simulator), None)
    if real is None:
        pytest.skip("no CPU device to base the fake ones on")
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    intel = dataclasses.replace(real, index=(2, 0), platform="Intel(R) OpenCL",
                                name="Intel(R) Xeon(R) Processor", driver_version="2024.18")
    pocl = dataclasses.replace(real, index=(3, 0), platform="Portable Computing Language",
                               name="pthread-skylake-avx512-Intel(R) Xeon(R) Processor",
                               driver_version="3.1+debian")
    simulator = dataclasses.replace(real, platform=device_module.SIMULATOR, type="gpu",
                                    name="Oclgrind Simulator", index=(0, 0))
    monkeypatch.setattr(device_module, "_devices", [simulator, intel, pocl])
    return intel, pocl


def calibrate(device: clspmv.Device, scale: float) -> None:
    """Store the fixture calibration as ``device``'s, its kernel coefficients times ``scale``."""
    cal = dataclasses.replace(fixture_calibration(device), ell_row_major_width=0)
    cal.kernel = {fmt: [c * scale for c in coef] for fmt, coef in cal.kernel.items()}
    assert store.save(cal, device) is not None


def test_processor_names() -> None:
    def key(name: str) -> str:
        return fastest_cpu.processor(SimpleNamespace(name=name))  # type: ignore[arg-type]

    xeon = "intel xeon processor"
    assert key("pthread-skylake-avx512-Intel(R) Xeon(R) Processor") == xeon  # Debian PoCL 3.1
    assert key("cpu-x86-64-v3-Intel(R) Xeon(R) Processor") == xeon  # PyPI PoCL
    assert key("Intel(R) Xeon(R) Processor ") == xeon  # Intel's runtime
    assert key("cpu-tigerlake-11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz") == (
        "11th gen intel core i7-1165g7 @ 2.80ghz")
    assert key("cpu-znver4-AMD EPYC 9R14 96-Core Processor") == "amd epyc 9r14 96-core processor"


def test_ranking_from_calibrations(fakes) -> None:
    intel, pocl = fakes
    calibrate(intel, SLOWER)
    calibrate(pocl, 1.0)
    other = dataclasses.replace(pocl, index=(4, 0), name="cpu-znver4-AMD EPYC 9R14")
    (comparison,) = compare([intel, pocl, other])  # the EPYC has no other implementation
    assert comparison.processor == "intel xeon processor"
    assert [imp.device for imp in comparison.ranked] == [pocl, intel]
    assert comparison.uncalibrated == ()
    ((slow, ratio),) = comparison.slower()
    assert slow.device is intel and ratio == pytest.approx(SLOWER)
    # each device's time: the geometric mean over the reference matrices of its fastest format
    fastest = comparison.ranked[0]
    cal = store.load(pocl)
    expected = {}
    for name, csr in reference_matrices().items():
        preds = predict(csr, pocl, calibration_=cal)
        best = min((p for p in preds.values() if p.kernel_s is not None),
                   key=lambda p: p.kernel_s)  # type: ignore[arg-type,return-value]
        expected[name] = (best.format, best.kernel_s)
    assert fastest.fastest == expected
    assert fastest.seconds == pytest.approx(
        np.exp(np.mean(np.log([s for _, s in expected.values()]))))
    assert set(reference_matrices()) == {"banded", "random", "powerlaw"}
    assert all(8 * 10**5 < csr.nnz < 1.1 * 10**6 for csr in reference_matrices().values())


def test_doctor_line_and_default_device(fakes) -> None:
    intel, pocl = fakes
    calibrate(intel, SLOWER)
    calibrate(pocl, 1.0)
    assert clspmv.select_device() is intel  # nothing compared yet: the first CPU
    (finding,) = doctor.implementation_findings()
    ms = compare()[0].ranked[0].seconds * 1e3
    assert finding.line() == (
        f"ok cpu          fastest CPU implementation: {pocl}: predicted {ms:.3g} ms per "
        "product (geometric mean of the fastest formats on the reference matrices, measured "
        f"calibration; the default among the CPU devices), {intel} 2.50x its time (measured "
        "calibration)")
    assert clspmv.select_device() is pocl  # the doctor recorded it
    assert clspmv.select_device("cpu") is intel  # a named type: the first CPU, as always
    os.environ["CLSPMV_DEVICE"] = "2:0"  # an explicit choice wins (monkeypatch restores it)
    assert clspmv.select_device() is intel
    del os.environ["CLSPMV_DEVICE"]
    path = store.calibration_path(pocl)  # measured again since: the first CPU until compared
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert clspmv.select_device() is intel
    doctor.implementation_findings()
    assert clspmv.select_device() is pocl
    path.unlink()  # removed: not compared any more
    assert clspmv.select_device() is intel


@pytest.fixture
def explicit(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("CLSPMV_DEVICE", "2:0")


def test_explicit_device_wins_over_the_record(fakes, explicit) -> None:
    intel, pocl = fakes
    calibrate(intel, SLOWER)
    calibrate(pocl, 1.0)
    doctor.implementation_findings()
    assert clspmv.select_device() is intel
    assert clspmv.select_device("3:0") is pocl and clspmv.select_device("intel") is intel


def test_one_calibrated_says_how_to_calibrate_the_others(fakes) -> None:
    intel, pocl = fakes
    (finding,) = doctor.implementation_findings()
    assert finding.note and not finding.problem
    assert finding.detail == (
        "unknown: no CPU implementation has a calibration; calibrate the others to compare "
        f"them (seconds each), then run clspmv doctor again: {intel}: clspmv calibrate --quick "
        f"--device 2:0; {pocl}: clspmv calibrate --quick --device 3:0")
    calibrate(pocl, 1.0)
    (finding,) = doctor.implementation_findings()
    assert finding.line() == (
        f"i  cpu          fastest CPU implementation: unknown: only {pocl} has a calibration; "
        "calibrate the others to compare them (seconds each), then run clspmv doctor again: "
        f"{intel}: clspmv calibrate --quick --device 2:0")
    assert not fastest_cpu.record_path().exists()  # nothing compared, nothing recorded
    assert clspmv.select_device() is intel
    assert doctor.summary([finding]) == "0 problems; 1 note (i: not a problem here)"


def test_a_single_cpu_has_nothing_to_compare(fakes, monkeypatch: pytest.MonkeyPatch) -> None:
    intel, pocl = fakes
    calibrate(intel, 1.0)
    assert doctor.implementation_findings([intel]) == []
    other = dataclasses.replace(pocl, name="cpu-znver4-AMD EPYC 9R14")  # another processor
    calibrate(other, 1.0)
    assert doctor.implementation_findings([intel, other]) == []


def test_unusable_record_warns_and_keeps_the_first_cpu(fakes) -> None:
    intel, pocl = fakes
    fastest_cpu.record_path().write_text('{"clspmv": "0", "host": "x", "devices": []}')
    with pytest.warns(clspmv.ClspmvWarning) as caught:
        assert clspmv.select_device() is intel
    assert str(caught[0].message) == (
        f"CPU implementations record {fastest_cpu.record_path()} is unusable (it was made by "
        "clspmv 0 on x); the first CPU device is the default until clspmv doctor compares "
        "them again")


def test_calibrate_of_a_cpu_device_records_the_comparison(
        fakes, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``clspmv calibrate`` of a CPU device compares it with the other implementations of its
    processor and records the fastest for the default device (the measurement itself stubbed:
    it stores the slow fixture calibration)."""
    from clspmv import cli

    intel, pocl = fakes
    calibrate(pocl, 1.0)

    def measured(device, force, full, progress):  # what store.calibration would store
        calibrate(device, SLOWER)
        return store.load(device)

    monkeypatch.setattr(store, "calibration", measured)
    assert clspmv.select_device() is intel  # nothing compared yet: the first CPU
    assert cli.main(["calibrate", "--device", "2:0", "--force", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "fastest CPU implementation" not in out  # the finding's detail, not its title
    assert f"{pocl}: predicted" in out and f"{intel} 2.50x its time" in out, out
    assert clspmv.select_device() is pocl  # recorded by calibrate, no doctor run
