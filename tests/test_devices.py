"""Device discovery and selection."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import device as device_module
from clspmv import device_probes
from clspmv.device import SIMULATOR


def test_devices_have_facts() -> None:
    found = clspmv.devices()
    assert found, "no OpenCL device found"
    for d in found:
        assert d.type in ("gpu", "cpu", "accelerator", "other")
        assert d.compute_units >= 1 and d.simd_width >= 1
        assert 0 < d.max_allocation <= d.global_memory
        assert d.local_memory > 0 and isinstance(d.fp64, bool)
        assert set(d.as_row()) >= {"P:D", "platform", "device", "type", "fp64", "SIMD"}
        if "NVIDIA" in d.platform:
            assert d.simd_width == 32


def test_select_by_index_type_and_name() -> None:
    for d in clspmv.devices():
        assert clspmv.select_device(f"{d.index[0]}:{d.index[1]}") is d
        assert clspmv.select_device(d.type).type == d.type
        assert d.name.lower() in clspmv.select_device(d.name.upper()).name.lower()
        assert clspmv.select_device(d) is d
        if d.platform == "Portable Computing Language":  # PoCL: matched by its version string
            assert clspmv.select_device("pocl").platform == "Portable Computing Language"


def test_pocl_by_name() -> None:
    pocl = [d for d in clspmv.devices() if d.platform == "Portable Computing Language"]
    if not pocl:
        pytest.skip("no PoCL device here")
    assert clspmv.select_device("pocl") is pocl[0]  # found in "OpenCL 3.0 PoCL ..."


def test_default_prefers_gpu_then_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    found = [d for d in clspmv.devices() if d.platform != SIMULATOR] or clspmv.devices()
    chosen = clspmv.select_device()
    gpus = [d for d in found if d.type == "gpu"]
    cpus = [d for d in found if d.type == "cpu"]
    assert chosen is (gpus or cpus or found)[0]


def test_simulator_is_never_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    real = next(d for d in clspmv.devices() if d.platform != SIMULATOR)
    simulator = dataclasses.replace(real, platform=SIMULATOR, type="gpu", index=(9, 0))
    monkeypatch.setattr(device_module, "_devices", [simulator, real])
    assert clspmv.select_device() is real  # a CPU beats the simulated GPU
    assert clspmv.select_device("oclgrind") is simulator
    monkeypatch.setattr(device_module, "_devices", [simulator])
    assert clspmv.select_device() is simulator  # the only device there is


def test_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    last = clspmv.devices()[-1]
    spec = f"{last.index[0]}:{last.index[1]}"
    monkeypatch.setenv("PYOPENCL_CTX", spec)
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    assert clspmv.select_device() is last
    first = clspmv.devices()[0]
    monkeypatch.setenv("CLSPMV_DEVICE", f"{first.index[0]}:{first.index[1]}")
    assert clspmv.select_device() is first  # CLSPMV_DEVICE wins over PYOPENCL_CTX


def test_no_match_lists_devices() -> None:
    with pytest.raises(clspmv.DeviceError, match=r"no OpenCL device matches 'no-such-thing'; "
                                                 r"available devices:\n  \[0:0\]"):
        clspmv.select_device("no-such-thing")
    with pytest.raises(clspmv.DeviceError, match="no OpenCL device matches '9:9'"):
        clspmv.select_device("9:9")


def test_no_platform_tells_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_module, "_devices", [])
    with pytest.raises(clspmv.DeviceError, match=r'pip install "clspmv\[pocl\]"'):
        clspmv.select_device()


@pytest.mark.parametrize("feature, variable", [("stream_hint", "CLSPMV_STREAM_HINT"),
                                               ("warp_shuffle", "CLSPMV_WARP_SHUFFLE")])
def test_inline_ptx_features_only_where_the_probe_builds(
        monkeypatch: pytest.MonkeyPatch, feature: str, variable: str) -> None:
    """Only NVIDIA's OpenCL takes inline PTX: the stream hint and the warp shuffles never on
    other platforms, never with their variable set to 0 (the other one stays), and on an NVIDIA
    platform only when the probe kernel (both loads and a shuffle) builds."""
    for d in clspmv.devices():
        assert getattr(d, feature) == ("NVIDIA" in d.platform)
    d = clspmv.devices()[0]
    nvidia = dataclasses.replace(d, platform="NVIDIA CUDA")
    monkeypatch.setattr(device_probes, "builds",
                        lambda dev, source: "ld.global.cs" in source and "shfl.sync" in source)
    assert getattr(nvidia, feature)
    monkeypatch.setenv(variable, "0")
    assert not getattr(nvidia, feature)
    other = "warp_shuffle" if feature == "stream_hint" else "stream_hint"
    assert getattr(nvidia, other)
    monkeypatch.delenv(variable)
    rejected = dataclasses.replace(d, platform="NVIDIA CUDA")
    monkeypatch.setattr(device_probes, "builds", lambda dev, source: False)
    assert not getattr(rejected, feature)


@pytest.fixture
def built_options(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The build options of every program clspmv.build asks for, in order (nothing is compiled:
    the programs and kernels are stand-ins). The devices are found first: discovery builds a
    probe kernel of its own, which the stand-ins would break."""
    from clspmv import build
    clspmv.devices()
    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(build, "program", lambda dev, file, options: seen.append(options))
    monkeypatch.setattr(build.cl, "Kernel", lambda prg, name: None)
    monkeypatch.setattr(build, "typed", lambda kern: kern)
    return seen


def test_kernels_build_with_the_ptx_features_where_the_device_has_them(
        monkeypatch: pytest.MonkeyPatch, built_options: list[tuple[str, ...]]) -> None:
    from clspmv import build
    seen = built_options
    d = clspmv.devices()[0]
    for hint in (True, False):
        monkeypatch.setattr(type(d), "stream_hint", property(lambda self, h=hint: h))
        monkeypatch.setattr(type(d), "warp_shuffle", property(lambda self, h=hint: not h))
        for dtype in (np.float64, np.float32):  # float32 only with stream_float32
            for stream_float32 in (False, True):
                build.kernel(d, "csr.cl", "csr_spmv", np.dtype(dtype), WG=64,
                             stream_float32=stream_float32)
                assert ("-DSTREAM_HINT=1" in seen[-1]) == (
                    hint and (dtype == np.float64 or stream_float32))
                assert ("-DWARP_SHUFFLE=1" in seen[-1]) == (not hint)  # both value types
                assert not any("stream_float32" in o for o in seen[-1])


@pytest.mark.parametrize("fmt", ["ell", "csr-merge", "sell"])
def test_float32_formats_stream_with_the_hint_where_they_say_so(
        monkeypatch: pytest.MonkeyPatch, built_options: list[tuple[str, ...]], fmt: str) -> None:
    """A float32 matrix's kernels without atomics carry STREAM_HINT on a device with the hint
    exactly when its format says so (Format.stream_float32: ell and csr-merge do, sell not)."""
    from clspmv.formats import FORMAT_CLASSES, convert
    from clspmv.precision import resolve
    seen = built_options
    d = clspmv.devices()[0]
    monkeypatch.setattr(type(d), "stream_hint", property(lambda self: True))
    A = sp.random(64, 64, density=0.1, format="csr", random_state=0, dtype=np.float32)
    cls = FORMAT_CLASSES[fmt]
    convert(A, fmt, cls.layout_for(d), resolve(np.float32, np.float32)).compile(d)
    assert seen and all(("-DSTREAM_HINT=1" in opts) == cls.stream_float32 for opts in seen)
    assert cls.stream_float32 == (fmt != "sell")
