"""OpenCL devices: facts read once from pyopencl, selection, and one context/queue per device."""

from __future__ import annotations

import os
import re
import threading
from dataclasses import dataclass, field

import pyopencl as cl

from .errors import DeviceError
from .precision import Precision

_TYPE_NAMES = (
    (cl.device_type.GPU, "gpu"),
    (cl.device_type.CPU, "cpu"),
    (cl.device_type.ACCELERATOR, "accelerator"),
)

SIMULATOR = "Oclgrind"
"""Platform name of the Oclgrind simulator: listed and selectable by name, never the default."""

_once_lock = threading.RLock()  # reentrant: the queue makes the context under it

_INSTALL_HINT = (
    'pip install "clspmv[pocl]" (or your distribution\'s pocl-opencl-icd) for a CPU device'
)


@dataclass(frozen=True, eq=False)
class Device:
    """One OpenCL device with the facts clspmv needs, read once from the driver.

    ``index`` is ``(platform_index, device_index)``, the same numbers ``select_device("P:D")``
    takes. ``simd_width`` is the number of work-items that execute in lockstep: the warp (32 on
    NVIDIA) or wavefront width on GPUs, the float vector width on CPUs. Layouts pad row counts to
    a multiple of it. ``cache_bytes`` is the global memory cache the driver reports (the L2 of
    NVIDIA GPUs, the last-level cache of the host CPU under PoCL): data smaller than that may be
    served from cache rather than memory.
    """

    index: tuple[int, int]
    platform: str
    name: str
    type: str
    compute_units: int
    global_memory: int
    max_allocation: int
    local_memory: int
    max_work_group_size: int
    fp64: bool
    int64_atomics: bool
    float_atomics_std: str | None
    """``-cl-std`` value (``"CL3.0"`` or ``"CL2.0"``) under which the device's
    ``cl_ext_float_atomics`` can be used; None when it lacks the extension or OpenCL C >= 2.0."""
    simd_width: int
    driver_version: str
    cache_bytes: int
    cl_device: cl.Device = field(repr=False, compare=False)

    def __str__(self) -> str:
        return f"[{self.index[0]}:{self.index[1]}] {self.name} ({self.platform}, {self.type})"

    @property
    def context(self) -> cl.Context:
        """The one OpenCL context clspmv uses for this device (made once, also under threads)."""
        return self._once("_context", lambda: cl.Context([self.cl_device]))

    @property
    def queue(self) -> cl.CommandQueue:
        """An in-order command queue with profiling enabled (kernel times come from its events)."""
        return self._once("_queue", lambda: cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE))

    def _once(self, name: str, make):
        """``make()`` stored under ``name`` the first time; threads that race get the same one
        (functools.cached_property has no lock since Python 3.12)."""
        value = self.__dict__.get(name)
        if value is None:
            with _once_lock:
                value = self.__dict__.get(name)
                if value is None:
                    value = self.__dict__[name] = make()
        return value

    def supports(self, dtype) -> bool:
        """True when kernels in ``dtype`` (float32, float64 or ``"mixed"``: float32 values
        summed in float64) can run on this device."""
        return not Precision.of(dtype).needs_fp64 or self.fp64

    def require(self, dtype) -> None:
        """Raise :class:`DeviceError` naming this device when it cannot run ``dtype`` (see
        :meth:`supports`)."""
        if self.supports(dtype):
            return
        if Precision.of(dtype).mixed:
            raise DeviceError(f"{self.name} has no float64 support (cl_khr_fp64), which "
                              "dtype='mixed' needs for its float64 sums; use dtype=float32")
        raise DeviceError(f"{self.name} has no float64 support (cl_khr_fp64); use dtype=float32")

    def as_row(self) -> dict[str, object]:
        """The device as one row of the ``clspmv devices`` table."""
        return {
            "P:D": f"{self.index[0]}:{self.index[1]}",
            "platform": self.platform,
            "device": self.name,
            "type": self.type,
            "CUs": self.compute_units,
            "global MiB": self.global_memory >> 20,
            "max alloc MiB": self.max_allocation >> 20,
            "local KiB": self.local_memory >> 10,
            "fp64": "yes" if self.fp64 else "no",
            "SIMD": self.simd_width,
        }


def _device_type(d: cl.Device) -> str:
    for flag, name in _TYPE_NAMES:
        if d.type & flag:
            return name
    return "other"


def _simd_width(d: cl.Device, kind: str) -> int:
    """Warp/wavefront width on GPUs, float vector width on CPUs."""
    ext = d.extensions
    if "cl_nv_device_attribute_query" in ext:
        return int(d.warp_size_nv)
    if "cl_amd_device_attribute_query" in ext:
        try:
            return int(d.wavefront_width_amd)
        except cl.Error:
            pass
    if kind == "cpu":
        return max(1, int(d.preferred_vector_width_float))
    # Other GPUs and accelerators: the preferred work-group size multiple of a trivial kernel.
    ctx = cl.Context([d])
    prg = cl.Program(ctx, "__kernel void probe(__global float *a) { a[0] = 0; }").build()
    return int(
        prg.probe.get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, d
        )
    )


def _opencl_c_versions(d: cl.Device) -> set[tuple[int, int]]:
    """(major, minor) of every OpenCL C version the device compiles."""
    try:  # OpenCL 3.0 devices list them all
        return {(v.version >> 22, (v.version >> 12) & 0x3FF) for v in d.opencl_c_all_versions}
    except (cl.Error, AttributeError):
        found = re.search(r"OpenCL C (\d+)\.(\d+)", d.opencl_c_version)
        return {(int(found.group(1)), int(found.group(2)))} if found else set()


def _float_atomics_std(d: cl.Device) -> str | None:
    """The ``-cl-std`` that unlocks ``cl_ext_float_atomics`` (it needs OpenCL C 2.0 atomics)."""
    if "cl_ext_float_atomics" not in d.extensions:
        return None
    versions = _opencl_c_versions(d)
    return next((f"CL{major}.0" for major in (3, 2) if (major, 0) in versions), None)


def _read_device(p_index: int, platform: cl.Platform, d_index: int, d: cl.Device) -> Device:
    kind = _device_type(d)
    ext = d.extensions
    return Device(
        index=(p_index, d_index),
        platform=platform.name.strip(),
        name=d.name.strip(),
        type=kind,
        compute_units=int(d.max_compute_units),
        global_memory=int(d.global_mem_size),
        max_allocation=int(d.max_mem_alloc_size),
        local_memory=int(d.local_mem_size),
        max_work_group_size=int(d.max_work_group_size),
        fp64="cl_khr_fp64" in ext or d.double_fp_config != 0,
        int64_atomics="cl_khr_int64_base_atomics" in ext,
        float_atomics_std=_float_atomics_std(d),
        simd_width=_simd_width(d, kind),
        driver_version=d.driver_version.strip(),
        cache_bytes=int(d.global_mem_cache_size),
        cl_device=d,
    )


_lock = threading.Lock()
_devices: list[Device] | None = None


def devices() -> list[Device]:
    """Every OpenCL device on every platform, in platform order (read once, then cached)."""
    global _devices
    with _lock:
        if _devices is None:
            try:
                platforms = cl.get_platforms()
            except cl.Error:  # the ICD loader reports "no platforms" as an error
                platforms = []
            _devices = [
                _read_device(pi, p, di, d)
                for pi, p in enumerate(platforms)
                for di, d in enumerate(p.get_devices())
            ]
        return list(_devices)


def _listing(found: list[Device]) -> str:
    return "\n".join(f"  {d}" for d in found)


def select_device(spec: str | Device | None = None) -> Device:
    """Choose a device.

    ``spec`` is ``"gpu"``, ``"cpu"`` or ``"accelerator"``; a substring of a platform or device
    name or of the device's OpenCL version string (``"nvidia"``, ``"pocl"``, case-insensitive);
    ``"P:D"`` platform and device indices; or a :class:`Device`. Without a spec: the
    environment variable ``CLSPMV_DEVICE`` (same syntax), else ``PYOPENCL_CTX`` (PyOpenCL's
    ``"P:D"`` or ``"P"`` syntax), else the first GPU, else the first CPU, else the first device.
    The Oclgrind simulator (a "GPU" thousands of times slower than a real one) is chosen only
    when a spec names it.

    Raises :class:`DeviceError` when no OpenCL platform exists or nothing matches; the message
    lists the devices that do exist.
    """
    if isinstance(spec, Device):
        return spec
    found = devices()
    if not found:
        raise DeviceError(f"no OpenCL platform or device found; {_INSTALL_HINT}")
    origin = "" if spec is not None else next(
        (f" (from ${v})" for v in ("CLSPMV_DEVICE", "PYOPENCL_CTX") if os.environ.get(v)), "")
    if spec is None:
        spec = os.environ.get("CLSPMV_DEVICE") or os.environ.get("PYOPENCL_CTX") or None
    if spec is None:
        real = [d for d in found if d.platform != SIMULATOR] or found
        for kind in ("gpu", "cpu"):
            for d in real:
                if d.type == kind:
                    return d
        return real[0]
    match = _match(str(spec).strip(), found)
    if match is None:
        raise DeviceError(
            f"no OpenCL device matches {spec!r}{origin}; available devices:\n{_listing(found)}"
        )
    return match


def _match(spec: str, found: list[Device]) -> Device | None:
    indices = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if indices:
        p, d = int(indices.group(1)), int(indices.group(2) or 0)
        return next((x for x in found if x.index == (p, d)), None)
    low = spec.lower()
    if low in ("gpu", "cpu", "accelerator"):
        return next((x for x in found if x.type == low), None)
    return next((x for x in found if low in _search_text(x)), None)


def _search_text(d: Device) -> str:
    """What a name spec is matched against: device and platform names, vendors and versions
    (so that ``"pocl"`` finds PoCL, whose platform is called "Portable Computing Language")."""
    p = d.cl_device.platform
    parts = (d.name, d.platform, d.cl_device.vendor, d.cl_device.version, p.vendor, p.version)
    return " ".join(parts).lower()
