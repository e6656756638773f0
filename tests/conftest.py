"""Shared fixtures: every test that takes ``device`` runs once per OpenCL device found.

``CLSPMV_TEST_DEVICES`` narrows the devices: ``all`` (default), ``cpu``, ``gpu``, or any
``clspmv.select_device`` spec such as ``nvidia`` or ``0:0``. The Oclgrind simulator (installed by
the ``oclgrind`` extra) is too slow for the whole suite: it is left out unless the spec names it
(``CLSPMV_TEST_DEVICES=oclgrind``); ``tests/test_oclgrind.py`` runs the kernels on it.

Hypothesis profiles: ``ci`` (default; derandomized, bounded: ``tox -e short-fuzz``, which CI runs)
and ``fuzz`` (thousands of cases, ``tox -e fuzz``), chosen by ``HYPOTHESIS_PROFILE``. Which OpenCL
implementation the devices come from is tox's choice (``.ci/opencl_env.py``), not the tests'.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

import clspmv
from clspmv.device import SIMULATOR

from shared_data import MATRICES

settings.register_profile(
    "ci",
    derandomize=True,
    database=None,
    max_examples=100,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                           HealthCheck.data_too_large],
)
settings.register_profile(
    "fuzz",
    parent=settings.get_profile("ci"),
    derandomize=False,
    max_examples=1000,
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# format="auto" (from_scipy's default) must not calibrate the test machine nor read the user's
# cache: the quick default, in a cache of the test session's own (tests/test_model.py stores a
# calibration fixture there where it needs a measured one), also where CLSPMV_CACHE_DIR is set
# (a measured calibration there made the tests that expect the quick default fail on the H100).
os.environ.setdefault("CLSPMV_CALIBRATE", "0")
os.environ["CLSPMV_CACHE_DIR"] = tempfile.mkdtemp(prefix="clspmv-test-cache-")


def _test_devices() -> list[clspmv.Device]:
    found = clspmv.devices()
    spec = os.environ.get("CLSPMV_TEST_DEVICES", "all").strip()
    if spec.lower() in ("oclgrind", SIMULATOR.lower()):
        return [d for d in found if d.platform == SIMULATOR]
    found = [d for d in found if d.platform != SIMULATOR]
    if spec in ("", "all"):
        return found
    if spec in ("cpu", "gpu", "accelerator"):
        return [d for d in found if d.type == spec]
    return [clspmv.select_device(spec)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        devs = _test_devices()
        ids = [f"{d.index[0]}:{d.index[1]}-{d.type}" for d in devs]
        # No device at all is a failure of the environment, not a reason to pass silently.
        metafunc.parametrize("device", devs or [None], ids=ids or ["no-device"], scope="session")


@pytest.fixture
def device(request: pytest.FixtureRequest) -> clspmv.Device:
    dev = request.param
    if dev is None:
        pytest.fail('no OpenCL device found: install PoCL (pip install "clspmv[pocl]" or the '
                    "distribution's pocl-opencl-icd)")
    return dev


@pytest.fixture(params=[np.float32, np.float64], ids=["f32", "f64"])
def dtype(request: pytest.FixtureRequest, device: clspmv.Device) -> np.dtype:
    dt = np.dtype(request.param)
    if not device.supports(dt):
        pytest.skip(f"{device.name} has no fp64 (test_errors checks the DeviceError)")
    return dt


@pytest.fixture(params=clspmv.FORMATS)
def fmt(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def shared_matrices() -> str:
    if not MATRICES.is_dir():
        pytest.skip(f"the shared matrix folder {MATRICES} is absent")
    return str(MATRICES)


@pytest.fixture
def calibration_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache folder of this test's own, with no calibration held in memory."""
    from clspmv.model import store

    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    store.forget()
    yield tmp_path
    store.forget()


@pytest.fixture
def measured_device(device: clspmv.Device) -> clspmv.Device:
    """``device`` where something is measured (not the simulator)."""
    if device.is_simulator:
        pytest.skip("nothing is measured on a simulator")
    return device


@pytest.fixture
def first_use_cache(calibration_cache: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """:func:`calibration_cache` with ``CLSPMV_CALIBRATE`` unset: the first ``format="auto"``
    measures the quick calibration, as on a user's first day."""
    monkeypatch.delenv("CLSPMV_CALIBRATE", raising=False)
    return calibration_cache


@pytest.fixture
def drained(monkeypatch: pytest.MonkeyPatch) -> list:
    """The queues :func:`clspmv.host_buffers.drain` is called on during the test, in order (it
    still drains them)."""
    from clspmv import host_buffers

    queues: list = []
    drain = host_buffers.drain
    monkeypatch.setattr(host_buffers, "drain", lambda queue: (queues.append(queue),
                                                              drain(queue)))
    return queues


@pytest.fixture
def toy() -> Iterator[type]:
    """The toy format of ``test_format_hooks`` (a plain CSR kernel under a new name) registered
    for the test, and gone from the registry afterwards."""
    from test_format_hooks import TOY, ToyCsr

    from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, register, unregister

    register(ToyCsr)
    try:
        yield ToyCsr
    finally:
        unregister(TOY)
    assert TOY not in FORMAT_CLASSES and TOY not in SINGLE_FORMATS
