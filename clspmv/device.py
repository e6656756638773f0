"""OpenCL devices: facts read once from pyopencl, selection, and one context/queue per device.

A user's own PyOpenCL objects select a device too (:func:`select_device`): a ``pyopencl.Device``
means clspmv's :class:`Device` for it; a ``pyopencl.Context`` or ``CommandQueue`` gives a
:class:`Device` that carries that context (and queue), so that arrays of the user's context are
taken without copies and the products are enqueued on the user's queue.

(Above 400 lines because it is one thing: the class every device fact is asked of, and the
selection that names devices; the facts read from the driver are :mod:`.device_facts`'s, those
found by running kernels :mod:`.device_probes`'s.)
"""

from __future__ import annotations

import dataclasses
import os
import re
import threading
from dataclasses import dataclass, field

import pyopencl as cl

from . import device_probes as probes
from .cpu_layout import gathers_slices, narrow_vectors, vectorises_work_items
from .device_facts import driver_error, read_facts
from .errors import DeviceError
from .precision import Precision

SIMULATOR = "Oclgrind"
"""Platform name of the Oclgrind simulator (:attr:`Device.is_simulator`)."""

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
    def is_simulator(self) -> bool:
        """True for the Oclgrind simulator, a "GPU" thousands of times slower than hardware, for
        checking kernels: :func:`select_device` takes it only where it is named (its name or
        index, or a PyOpenCL object of it), never for a type (``"gpu"``) or by default, and
        nothing is measured on it (:mod:`clspmv.probing`)."""
        return self.platform == SIMULATOR

    @property
    def context(self) -> cl.Context:
        """The one OpenCL context clspmv uses for this device (made once, also under threads), or
        the user's context this device was selected with."""
        return self._once("_context", lambda: cl.Context([self.cl_device]))

    @property
    def queue(self) -> cl.CommandQueue:
        """An in-order command queue with profiling enabled (kernel times come from its events),
        or the user's queue this device was selected with (see :attr:`profiling`)."""
        return self._once("_queue", lambda: cl.CommandQueue(
            self.context, properties=cl.command_queue_properties.PROFILING_ENABLE))

    @property
    def profiling(self) -> bool:
        """True when :attr:`queue` records kernel times (``DeviceMatrix.last_events`` then carry
        profiling information). clspmv's own queues always do; a user's queue passed to
        :func:`select_device` does only if it was made with ``PROFILING_ENABLE``: products
        work either way, kernel timing (the benchmarks, calibration) needs it."""
        return bool(self.queue.properties & cl.command_queue_properties.PROFILING_ENABLE)

    @property
    def host_memory(self) -> bool:
        """True for a CPU device, whose buffers live in host memory: products from numpy arrays
        then run on buffers made on the arrays' own memory, without copies
        (:mod:`clspmv.host_buffers`)."""
        return self.type == "cpu"

    @property
    def shares_host_pointer(self) -> bool:
        """True when a buffer made with ``CL_MEM_USE_HOST_PTR`` on a numpy array is the array's
        memory itself, so that a kernel's writes are in the array once the kernel's event
        completes, without mapping the buffer. Probed once (on the first call) for a
        :attr:`host_memory` device: a kernel writes into buffers on arrays that start 0, 4 and 8
        bytes past a 128-byte boundary, and the arrays are read without a map; False without
        host memory or when any write does not show (the runtime keeps a copy:
        :mod:`clspmv.host_buffers` then maps the output buffer)."""
        if not self.host_memory:
            return False
        return self._once("_shares_host_pointer", lambda: probes.shares_host_pointer(self))

    @property
    def vectorises_work_items(self) -> bool:
        """True when the implementation runs a work-group's work-items side by side in the
        lanes of CPU vectors (Intel's CPU runtime), False where it runs them one after another
        (PoCL) or on a GPU: read once from the device's preferred and native float vector
        widths (:func:`clspmv.cpu_layout.vectorises_work_items`)."""
        return self._once("_vectorises_work_items", lambda: vectorises_work_items(
            self.type, int(self.cl_device.preferred_vector_width_float),
            int(self.cl_device.native_vector_width_float)))

    @property
    def gathers_slices(self) -> bool:
        """True where ``sell``'s and ``pjds``'s work-item per slice beats a work-item per row
        (PoCL from 3.0 on: :func:`clspmv.cpu_layout.gathers_slices`), read once."""
        return self._once("_gathers_slices", lambda: gathers_slices(
            self.type, self.cl_device.platform.version))

    @property
    def narrow_vectors(self) -> bool:
        """True where kernels must use OpenCL vectors of 32 bytes at most: a CPU compiler told of
        AVX-512 for a CPU it models without it, which aborts the process on wider ones (PyPI's
        PoCL 3.0 on a Zen 4: :func:`clspmv.cpu_layout.narrow_vectors`), read once."""
        return self._once("_narrow_vectors", lambda: narrow_vectors(
            self.cl_device.version, int(self.cl_device.native_vector_width_double)))

    @property
    def inline_ptx(self) -> bool:
        """True on NVIDIA's OpenCL when a kernel with the inline PTX that clspmv's kernels use
        builds (tried once): the loads of :attr:`stream_hint` and the shuffles of
        :attr:`warp_shuffle`. False on every other platform."""
        if "NVIDIA" not in self.platform:
            return False
        return self._once("_inline_ptx", lambda: probes.takes_inline_ptx(self))

    @property
    def stream_hint(self) -> bool:
        """True when clspmv's kernels load the matrix's arrays with a streaming cache hint
        (``STREAM_HINT`` in ``kernels_cl/common.h``: PTX's ``ld.global.cs``, so that the matrix
        read once per product does not push x out of the L2 cache): where :attr:`inline_ptx`,
        unless ``CLSPMV_STREAM_HINT=0`` (for comparing the two)."""
        return os.environ.get("CLSPMV_STREAM_HINT") != "0" and self.inline_ptx

    @property
    def warp_shuffle(self) -> bool:
        """True when clspmv's kernels sum groups of up to 32 work-items with warp shuffles
        (``WARP_SHUFFLE`` in ``kernels_cl/common.h``: PTX's ``shfl.sync``, no local memory and
        no barrier): where :attr:`inline_ptx`, unless ``CLSPMV_WARP_SHUFFLE=0`` (for comparing
        the two)."""
        return os.environ.get("CLSPMV_WARP_SHUFFLE") != "0" and self.inline_ptx

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
            "type": f"{self.type} (simulator)" if self.is_simulator else self.type,
            "CUs": self.compute_units,
            "global MiB": self.global_memory >> 20,
            "max alloc MiB": self.max_allocation >> 20,
            "local KiB": self.local_memory >> 10,
            "fp64": "yes" if self.fp64 else "no",
            "SIMD": self.simd_width,
        }


def events_ns(events: list[cl.Event]) -> int:
    """Nanoseconds a product whose commands are ``events`` (on one profiling queue) took on the
    device: from the start of the first to the end of the last, so the gaps between dependent
    kernels count (microseconds each on a GPU, tens of them on PoCL), as they do in a product
    timed by events around it (the cuSPARSE baseline); 0 for none. Waits for them."""
    if not events:
        return 0
    cl.wait_for_events(events)
    return (max(ev.profile.end for ev in events)
            - min(ev.profile.start for ev in events))


def _read_device(p_index: int, platform: cl.Platform, d_index: int, d: cl.Device) -> Device:
    return Device(index=(p_index, d_index), platform=platform.name.strip(), cl_device=d,
                  **read_facts(d))  # type: ignore[arg-type]



_lock = threading.Lock()
_devices: list[Device] | None = None
_unreadable: list[tuple[str, str]] = []


def devices() -> list[Device]:
    """Every OpenCL device on every platform, in platform order (read once, then cached). A
    platform or device whose driver fails to list or describe it is left out, not fatal
    (:func:`unreadable` says which and why)."""
    global _devices
    with _lock:
        if _devices is None:
            try:
                platforms = cl.get_platforms()
            except cl.Error:  # the ICD loader reports "no platforms" as an error
                platforms = []
            _devices, _unreadable[:] = _enumerate(platforms)
        return list(_devices)


def unreadable() -> list[tuple[str, str]]:
    """(which, the driver's error) of each platform or device :func:`devices` left out."""
    devices()
    return list(_unreadable)


def _enumerate(platforms: list[cl.Platform]) -> tuple[list[Device], list[tuple[str, str]]]:
    """The devices of ``platforms``, and (which, why) of each platform or device that failed."""
    found: list[Device] = []
    failed: list[tuple[str, str]] = []
    for pi, p in enumerate(platforms):
        try:
            listed = p.get_devices()
        except Exception as err:  # any failure of a driver means: this platform cannot be used
            failed.append((f"platform {pi} ({p.name.strip()})", driver_error(err)))
            continue
        for di, d in enumerate(listed):
            try:
                found.append(_read_device(pi, p, di, d))
            except Exception as err:
                failed.append((f"[{pi}:{di}] ({p.name.strip()})", driver_error(err)))
    return found, failed


def _listing(found: list[Device]) -> str:
    return "\n".join(f"  {d}" for d in found)


def _naming(d: Device) -> str:
    """How to name ``d``, the simulator, to use it."""
    return (f"clspmv takes it only where it is named: device='oclgrind' or "
            f"'{d.index[0]}:{d.index[1]}' (--device oclgrind, CLSPMV_DEVICE=oclgrind)")


def select_device(spec: object = None) -> Device:
    """Choose a device.

    ``spec`` is ``"gpu"``, ``"cpu"`` or ``"accelerator"``; a substring of a platform or device
    name or of the device's OpenCL version string (``"nvidia"``, ``"pocl"``, case-insensitive);
    ``"P:D"`` platform and device indices; a :class:`Device`; or a PyOpenCL object of the
    user's: a ``pyopencl.Device`` (clspmv's context and queue for it), a ``pyopencl.Context`` of
    one device (clspmv adds an in-order profiling queue to it) or a ``pyopencl.CommandQueue``
    (used as it is: it must be in-order; without ``PROFILING_ENABLE`` products work but kernel
    timing does not, see :attr:`Device.profiling`). The same context or queue gives the same
    :class:`Device` each time. Without a spec: the
    environment variable ``CLSPMV_DEVICE`` (same syntax), else ``PYOPENCL_CTX`` (PyOpenCL's
    ``"P:D"`` or ``"P"`` syntax), else the first GPU, else among the CPU devices the fastest
    implementation (Debian's PoCL, PyPI's, Intel's runtime: one machine can have several) where
    ``clspmv doctor`` compared two or more by their stored calibrations and those calibrations
    are unchanged since (:mod:`clspmv.fastest_cpu`: one small file read, nothing measured),
    else the first CPU, else the first device.
    The Oclgrind simulator (:attr:`Device.is_simulator`) is taken only where a spec or
    ``CLSPMV_DEVICE`` names it: a name matching a real device too gives the real one, and a
    type, the default and ``PYOPENCL_CTX`` (set for PyOpenCL, not for clspmv) never give it.

    Raises :class:`DeviceError` when no OpenCL platform exists, nothing matches, or only the
    simulator would; the message lists the devices that do exist and how to name the simulator.
    """
    if isinstance(spec, Device):
        return spec
    if isinstance(spec, (cl.Device, cl.Context, cl.CommandQueue)):
        return _from_pyopencl(spec)
    found = devices()
    if not found:
        failed = "".join(f"; {which} could not be read: {why}" for which, why in unreadable())
        raise DeviceError(f"no OpenCL platform or device found{failed}; {_INSTALL_HINT}")
    variable = None
    if spec is None:
        variable = next((v for v in ("CLSPMV_DEVICE", "PYOPENCL_CTX") if os.environ.get(v)),
                        None)
        if variable is None:
            return _default(found)
        spec = os.environ[variable]
    origin = f" (from ${variable})" if variable else ""
    text = str(spec).strip()
    match = _match(text, found)
    if match is None:
        raise DeviceError(
            f"no OpenCL device matches {spec!r}{origin}; available devices:\n{_listing(found)}")
    if match.is_simulator and (variable == "PYOPENCL_CTX" or text.lower() in _TYPES):
        what = (f"no {text.upper()}{origin} besides" if variable != "PYOPENCL_CTX" else
                f"$PYOPENCL_CTX={text!r} (set for PyOpenCL; unset it for clspmv's default) selects")
        raise DeviceError(f"{what} the Oclgrind simulator {match}, thousands of times slower "
                          f"than hardware; {_naming(match)}; available devices:\n"
                          f"{_listing(found)}")
    return match


def _default(found: list[Device]) -> Device:
    """The first GPU, else the fastest CPU implementation recorded by ``clspmv doctor``
    (:func:`clspmv.fastest_cpu.recorded_fastest`), else the first CPU, else the first device,
    the simulator left out."""
    real = [d for d in found if not d.is_simulator]
    if not real:
        raise DeviceError(f"the only OpenCL device is the Oclgrind simulator {found[0]}, "
                          f"thousands of times slower than hardware; {_naming(found[0])}; "
                          f"{_INSTALL_HINT}")
    gpu = next((d for d in real if d.type == "gpu"), None)
    cpus = [d for d in real if d.type == "cpu"]
    if gpu is not None or not cpus:
        return gpu or real[0]
    if len(cpus) == 1:
        return cpus[0]
    from .fastest_cpu import recorded_fastest  # only where CPUs are to be compared

    return recorded_fastest(cpus) or cpus[0]


_user_devices: dict[tuple[int, int], Device] = {}
"""The :class:`Device` of each user context or queue, kept for the process like the programs
built for it (:mod:`clspmv.build` caches them by the context's identity, which must not be
reused by another context)."""


def _from_pyopencl(obj: cl.Device | cl.Context | cl.CommandQueue) -> Device:
    """The :class:`Device` of a user's PyOpenCL device, context or queue (see
    :func:`select_device`)."""
    if isinstance(obj, cl.Device):
        return _known(obj)
    if isinstance(obj, cl.CommandQueue):
        if obj.properties & cl.command_queue_properties.OUT_OF_ORDER_EXEC_MODE_ENABLE:
            raise DeviceError("clspmv enqueues dependent commands one after the other and needs "
                              "an in-order queue; pass a CommandQueue made without "
                              "OUT_OF_ORDER_EXEC_MODE_ENABLE (or its Context)")
        context, queue, cl_device = obj.context, obj, obj.device
    else:
        found = obj.devices
        if len(found) != 1:
            names = ", ".join(d.name.strip() for d in found)
            raise DeviceError(f"the context holds {len(found)} devices ({names}); pass a "
                              "CommandQueue of the context to say which one clspmv uses")
        context, queue, cl_device = obj, None, found[0]
    key = (context.int_ptr, queue.int_ptr if queue is not None else 0)
    with _once_lock:
        dev = _user_devices.get(key)
        if dev is None:
            dev = dataclasses.replace(_known(cl_device))
            dev.__dict__["_context"] = context
            if queue is not None:
                dev.__dict__["_queue"] = queue
            _user_devices[key] = dev
        return dev


def _known(cl_device: cl.Device) -> Device:
    """clspmv's :class:`Device` for a ``pyopencl.Device`` (facts read afresh for one not listed
    by :func:`devices`, such as a sub-device)."""
    for dev in devices():
        if dev.cl_device == cl_device:
            return dev
    platform = cl_device.platform
    platforms = cl.get_platforms()
    p_index = next((i for i, p in enumerate(platforms) if p == platform), -1)
    return _read_device(p_index, platform, -1, cl_device)


_TYPES = ("gpu", "cpu", "accelerator")


def _match(spec: str, found: list[Device]) -> Device | None:
    """The device ``spec`` names: by index; by type or name, a real device before the
    simulator (:func:`select_device` refuses the simulator for a type)."""
    indices = re.fullmatch(r"(\d+)(?::(\d+))?", spec)
    if indices:
        p, d = int(indices.group(1)), int(indices.group(2) or 0)
        return next((x for x in found if x.index == (p, d)), None)
    low = spec.lower()
    matches = [x for x in found
               if (x.type == low if low in _TYPES else low in _search_text(x))]
    return next((x for x in matches if not x.is_simulator), matches[0] if matches else None)


def _search_text(d: Device) -> str:
    """What a name spec is matched against: device and platform names, vendors and versions
    (so that ``"pocl"`` finds PoCL, whose platform is called "Portable Computing Language")."""
    p = d.cl_device.platform
    parts = (d.name, d.platform, d.cl_device.vendor, d.cl_device.version, p.vendor, p.version)
    return " ".join(parts).lower()
