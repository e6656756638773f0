"""Device discovery and selection."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import device as device_module
from clspmv import device_facts, device_probes
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
        if not d.is_simulator:  # a type never gives the simulator (test_simulator_*)
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


@pytest.fixture
def simulated(monkeypatch: pytest.MonkeyPatch) -> tuple[clspmv.Device, clspmv.Device]:
    """(a simulator that reports itself a GPU, a real CPU), the simulator listed first as
    Oclgrind is here, and no device variable set."""
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    real = next(d for d in clspmv.devices() if not d.is_simulator)
    real = dataclasses.replace(real, type="cpu", index=(1, 0))
    simulator = dataclasses.replace(real, platform=SIMULATOR, name="Oclgrind Simulator",
                                    type="gpu", index=(0, 0))
    monkeypatch.setattr(device_module, "_devices", [simulator, real])
    return simulator, real


def test_simulator_is_never_the_default(simulated, monkeypatch: pytest.MonkeyPatch) -> None:
    simulator, real = simulated
    assert simulator.is_simulator and not real.is_simulator
    assert clspmv.select_device() is real  # a CPU beats the simulated GPU
    monkeypatch.setattr(device_module, "_devices", [simulator])
    with pytest.raises(clspmv.DeviceError) as err:  # not even as the only device there is
        clspmv.select_device()
    assert str(err.value) == (
        "the only OpenCL device is the Oclgrind simulator [0:0] Oclgrind Simulator (Oclgrind, "
        "gpu), thousands of times slower than hardware; clspmv takes it only where it is "
        "named: device='oclgrind' or '0:0' (--device oclgrind, CLSPMV_DEVICE=oclgrind); "
        'pip install "clspmv[pocl]" (or your distribution\'s pocl-opencl-icd) for a CPU device')


@pytest.mark.parametrize("kind", ["gpu", "GPU", "accelerator"])
def test_a_type_never_gives_the_simulator(simulated, monkeypatch: pytest.MonkeyPatch,
                                          kind: str) -> None:
    """device="gpu" with the simulator the only "GPU": a DeviceError saying there is none,
    listing the devices and how to name the simulator; with a real GPU too, the real one. An
    accelerator-typed simulator alike."""
    simulator, real = simulated
    if kind == "accelerator":
        simulator = dataclasses.replace(simulator, type="accelerator")
        monkeypatch.setattr(device_module, "_devices", [simulator, real])
    with pytest.raises(clspmv.DeviceError) as err:
        clspmv.DeviceMatrix.from_scipy(sp.identity(4, format="csr"), device=kind)
    assert str(err.value) == (
        f"no {kind.upper()} besides the Oclgrind simulator {simulator}, thousands of times "
        "slower than hardware; clspmv takes it only where it is named: device='oclgrind' or "
        "'0:0' (--device oclgrind, CLSPMV_DEVICE=oclgrind); available devices:\n"
        f"  {simulator}\n  {real}")
    gpu = dataclasses.replace(real, type=simulator.type, index=(2, 0))
    monkeypatch.setattr(device_module, "_devices", [simulator, real, gpu])
    assert clspmv.select_device(kind) is gpu


def test_bench_on_gpu_without_one(simulated, capsys: pytest.CaptureFixture[str]) -> None:
    """``clspmv bench --device gpu`` with the simulator the only "GPU": exit 1 and the error in
    one line, before anything is measured."""
    from clspmv.cli import main

    assert main(["bench", "gen:poisson2d:k=3", "--device", "gpu", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("clspmv: error: no GPU besides the Oclgrind simulator [0:0]")


def test_the_simulator_when_named(simulated) -> None:
    """By its name or index, or as a Device, it is taken; a name that a real device matches
    too gives the real one (both fakes here carry the real device's version strings)."""
    simulator, real = simulated
    for spec in ("oclgrind", "Oclgrind Simulator", "0:0", "0", simulator):
        assert clspmv.select_device(spec) is simulator, spec
    shared = real.cl_device.version.split()[-1].lower()  # in both devices' search text
    assert clspmv.select_device(shared) is real


def test_the_real_simulator_as_a_pyopencl_device() -> None:
    simulator = next((d for d in clspmv.devices() if d.is_simulator), None)
    if simulator is None:
        pytest.skip('no Oclgrind platform here (pip install "clspmv[oclgrind]")')
    assert clspmv.select_device(simulator.cl_device) is simulator
    assert clspmv.select_device("oclgrind") is simulator
    assert simulator.as_row()["type"] == f"{simulator.type} (simulator)"


def test_variables_and_the_simulator(simulated, monkeypatch: pytest.MonkeyPatch) -> None:
    """$CLSPMV_DEVICE names it like a spec (a type there never gives it); $PYOPENCL_CTX, set
    for PyOpenCL, never selects it: a DeviceError naming the variable and the fix."""
    simulator, _ = simulated
    monkeypatch.setenv("CLSPMV_DEVICE", "gpu")
    with pytest.raises(clspmv.DeviceError, match=r"^no GPU \(from \$CLSPMV_DEVICE\) besides "
                                                 r"the Oclgrind simulator \[0:0\]"):
        clspmv.select_device()
    monkeypatch.setenv("CLSPMV_DEVICE", "oclgrind")
    assert clspmv.select_device() is simulator
    monkeypatch.delenv("CLSPMV_DEVICE")
    for value in ("0", "0:0", "oclgrind"):
        monkeypatch.setenv("PYOPENCL_CTX", value)
        with pytest.raises(clspmv.DeviceError) as err:
            clspmv.select_device()
        assert str(err.value).startswith(
            f"$PYOPENCL_CTX={value!r} (set for PyOpenCL; unset it for clspmv's default) selects "
            f"the Oclgrind simulator {simulator}, thousands of times slower than hardware; "
            "clspmv takes it only where it is named: device='oclgrind' or '0:0'")
    monkeypatch.setenv("PYOPENCL_CTX", "1")
    assert clspmv.select_device().index == (1, 0)


class BrokenPlatform:
    """A platform whose driver fails to list its devices, or lists one it cannot describe."""

    name = "Broken CL "

    def __init__(self, devices: list[object] | None = None) -> None:
        self.devices = devices

    def get_devices(self) -> list[object]:
        if self.devices is None:
            raise cl.LogicError("clGetDeviceIDs failed: DEVICE_NOT_FOUND")
        return self.devices


class UnreadableDevice:
    """A device whose every query fails."""

    def __getattr__(self, name: str) -> object:
        raise cl.RuntimeError("clGetDeviceInfo failed: OUT_OF_HOST_MEMORY\nmore detail")


def test_a_platform_that_fails_is_left_out_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    real = clspmv.devices()[0]
    found, failed = device_module._enumerate(
        [BrokenPlatform(), BrokenPlatform([UnreadableDevice()]), real.cl_device.platform])
    assert [d.name for d in found] == [d.name for d in clspmv.devices()
                                       if d.cl_device.platform == real.cl_device.platform]
    assert found[0].index[0] == 2
    assert failed == [("platform 0 (Broken CL)", "clGetDeviceIDs failed: DEVICE_NOT_FOUND"),
                      ("[1:0] (Broken CL)", "clGetDeviceInfo failed: OUT_OF_HOST_MEMORY")]
    monkeypatch.setattr(device_module, "_devices", [])
    monkeypatch.setattr(device_module, "_unreadable", failed[:1])
    with pytest.raises(clspmv.DeviceError, match=r"^no OpenCL platform or device found; "
                                                 r"platform 0 \(Broken CL\) could not be read: "
                                                 r"clGetDeviceIDs failed: DEVICE_NOT_FOUND; pip"):
        clspmv.select_device()


class NoFp64Query:
    """A device without cl_khr_fp64 whose driver rejects the double-precision query."""

    extensions = "cl_khr_byte_addressable_store"

    @property
    def double_fp_config(self) -> int:
        raise cl.LogicError("clGetDeviceInfo failed: INVALID_VALUE")


def test_a_rejected_fp64_query_means_no_fp64() -> None:
    assert device_facts._has_fp64(NoFp64Query()) is False


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
