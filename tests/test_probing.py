"""The device probes that time many kernels (clspmv.probing): nothing measured on a simulator,
progress shown, and a probe past its time bound stopped with a DeviceError naming the device,
the probe and the fix."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import clspmv
from clspmv import bandwidth, probing
from clspmv.device import SIMULATOR
from clspmv.env_seconds import env_seconds
from clspmv.errors import ClspmvError, SettingError
from clspmv.model import probes
from clspmv.precision import resolve


@pytest.fixture
def simulator(device: clspmv.Device) -> clspmv.Device:
    """``device`` taken for the simulator (a "GPU"): nothing may run on it."""
    return dataclasses.replace(device, platform=SIMULATOR, name="Oclgrind Simulator",
                               type="gpu")


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any buffer or conversion of the probes fails the test."""
    def ran(*args: object, **kwargs: object) -> None:
        pytest.fail("a probe ran on the simulator")

    monkeypatch.setattr(bandwidth, "_Stream", ran)
    monkeypatch.setattr(probes, "convert", ran)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The probes' clock, 10 s further at each reading (a device where every step is slow),
    with a bound of 25 s: the third check after the start is past it."""
    now = [0.0]

    def tick() -> float:
        now[0] += 10.0
        return now[0]

    monkeypatch.setattr(probing.time, "monotonic", tick)
    monkeypatch.setenv(probing.LIMIT_VARIABLE, "25")
    return now


def test_bandwidth_not_measured_on_a_simulator(simulator, nothing_runs) -> None:
    bw = bandwidth.measure(simulator)
    assert bw == bandwidth.Bandwidth(None, "not measured on a simulator", None,
                                     "not measured on a simulator", 0, simulator.cache_bytes)
    assert bw.as_dict()["copy_gbps"] is None
    with pytest.raises(clspmv.DeviceError, match=r"is the Oclgrind simulator: clspmv measures "
                                                 r"nothing on it \(the copy bandwidth would"):
        bandwidth.copy_rate(simulator)


def test_x_cache_probe_refuses_a_simulator(simulator, nothing_runs) -> None:
    with pytest.raises(clspmv.DeviceError) as err:
        probes.probe_x_cache(simulator, resolve(np.float32, np.float32))
    assert str(err.value) == (
        f"{simulator} is the Oclgrind simulator: clspmv measures nothing on it (the x cache "
        "probe would run for hours and time no hardware); measure on another device (clspmv "
        "devices lists them)")


def test_bandwidth_past_its_bound(device, clock, capsys) -> None:
    """Stopped before the second timed run of enqueue_copy (30 s since the start), before any
    kernel variant: a DeviceError naming the device, the probe and the fix; its progress was
    shown."""
    calls = []
    real = bandwidth.events_ns

    def counted(events):
        calls.append(len(events))
        return real(events)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bandwidth, "events_ns", counted)
        with pytest.raises(clspmv.DeviceError) as err:
            bandwidth.measure(device, repeat=3, nbytes=1 << 16)
    assert len(calls) == 2  # its warm-up and one of 3 timed runs
    assert str(err.value) == (
        f"{device}: the copy bandwidth stopped after 30.0 s, past its bound of 25 s: the device "
        "is far slower than its facts suggest (a simulator, or a driver that runs kernels on one "
        "thread). Choose another device (clspmv devices lists them; device=..., --device or "
        "$CLSPMV_DEVICE), or allow the probe more time with $CLSPMV_PROBE_LIMIT_S=SECONDS")
    assert f"the copy bandwidth on {device.name[:20]}" in capsys.readouterr().err


def test_x_cache_probe_past_its_bound(device, clock, monkeypatch) -> None:
    """Small probe matrices; the bound passes at the third upload, before any product."""
    monkeypatch.setattr(probes, "X_PROBE_ENTRIES", 1024)
    monkeypatch.setattr(probes, "kernel_times", lambda *a: pytest.fail("timed past the bound"))
    with pytest.raises(clspmv.DeviceError, match=r"the x cache probe stopped after 30\.0 s, past "
                                                 r"its bound of 25 s: .* Choose another device"):
        probes.probe_x_cache(device, resolve(np.float32, np.float32), progress=False)


def test_kernel_times_keep_to_a_bound(device, clock) -> None:
    """Checked after every product and round: two formats, the third check (the end of the
    first round) past the bound."""
    import pyopencl.array as cl_array
    import scipy.sparse as sp

    from clspmv.formats import FORMAT_CLASSES, convert

    A = sp.random(64, 64, density=0.1, format="csr", random_state=1, dtype=np.float32)
    precision = resolve(np.float32, np.float32)
    formats = {}
    for name in ("csr-scalar", "ell"):
        formats[name] = convert(A, name, FORMAT_CLASSES[name].layout_for(device), precision)
        formats[name].upload(device)
    x = cl_array.to_device(device.queue, np.ones(64, np.float32))
    y = cl_array.zeros(device.queue, 64, np.float32)
    with probing.ProbeRun(device, "a test probe", progress=False) as run:  # clock: 10 s
        with pytest.raises(clspmv.DeviceError, match="a test probe stopped after 30.0 s"):
            probes.kernel_times(formats, x, y, 3, run)


@pytest.mark.parametrize("value", ["0", "-5", "soon", "nan", "inf"])
def test_a_bad_bound_is_named(monkeypatch, value) -> None:
    monkeypatch.setenv(probing.LIMIT_VARIABLE, value)
    with pytest.raises(SettingError) as err:
        probing.limit_s()
    assert str(err.value) == (f"$CLSPMV_PROBE_LIMIT_S={value!r} is not a number of seconds "
                              "above 0; set it to one (e.g. CLSPMV_PROBE_LIMIT_S=600), or unset "
                              "it for the default of 300 s")
    monkeypatch.setenv(probing.LIMIT_VARIABLE, " 12.5 ")
    assert probing.limit_s() == 12.5
    monkeypatch.delenv(probing.LIMIT_VARIABLE)
    assert probing.limit_s() == probing.PROBE_LIMIT_S


@pytest.mark.parametrize(("value", "expected"), [("", 300.0), ("  ", 300.0), ("0", None),
                                                 ("0.0", None), ("2.5", 2.5), ("1e3", 1000.0)])
def test_seconds_where_zero_means_no_bound(monkeypatch, value, expected) -> None:
    """The rule of a bounded MPI collective's wait ($CLSPMV_MPI_TIMEOUT): 0 is no bound."""
    monkeypatch.setenv("CLSPMV_TEST_WAIT", value)
    assert env_seconds("CLSPMV_TEST_WAIT", 300.0, zero_unbounds=True) == expected


@pytest.mark.parametrize("value", ["-1", "soon", "nan", "inf", "-0.5"])
def test_bad_seconds_where_zero_means_no_bound(monkeypatch, value) -> None:
    monkeypatch.setenv("CLSPMV_TEST_WAIT", value)
    with pytest.raises(SettingError) as err:
        env_seconds("CLSPMV_TEST_WAIT", 300.0, zero_unbounds=True)
    assert str(err.value) == (f"$CLSPMV_TEST_WAIT={value!r} is not a number of seconds above 0 "
                              "(0: no bound); set it to one (e.g. CLSPMV_TEST_WAIT=600), or "
                              "unset it for the default of 300 s")
    assert isinstance(err.value, ClspmvError) and isinstance(err.value, ValueError)
