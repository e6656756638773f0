"""A device's streaming memory bandwidth, measured in the same run as the products.

The yardstick of the reports' "% of copy bandwidth" is the best of several copies of a buffer
well above the device's cache: vector-typed copy kernels (``kernels_cl/copy.cl``: float, float4,
float16 and double2 elements) at several work-group sizes, and ``pyopencl.enqueue_copy``. One
scalar copy kernel underestimates the bandwidth (by about 10% on an H200), hence the variants.
Copy bandwidth counts bytes read plus bytes written. A read-only stream (``read_vec``) is
measured with the same kernels' shapes and reported beside it.

Nothing is measured on a simulator, whose times say nothing of hardware and which would take
hours over buffers sized from its facts (:mod:`clspmv.probing`): :func:`measure` gives a record
without rates there (:meth:`Bandwidth.not_measured`) unless the caller sizes the buffer (a check
of the kernels, as ``tests/oclgrind_check.py`` makes), and :func:`copy_rate` refuses it. Both
show their steps on a progress bar and stop with a DeviceError past the probes' time bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyopencl as cl

from . import build
from .device import Device, events_ns
from .errors import BuildError
from .formats.base import round_up
from .probing import ProbeRun, refuse_simulator

COPY_VECTORS: tuple[tuple[np.dtype, int], ...] = (
    (np.dtype(np.float32), 1),
    (np.dtype(np.float32), 4),
    (np.dtype(np.float32), 16),
    (np.dtype(np.float64), 2),
)
"""(element type, vector width) of the copy kernels tried; double2 only on fp64 devices."""

WORK_GROUP_SIZES = (64, 256, 1024)
"""Work-group sizes tried (those above the device's maximum are left out)."""

MIN_BUFFER = 256 << 20
MAX_BUFFER = 512 << 20
"""Most bytes per buffer. Four times the cache a device reports would be far more on a CPU:
there the driver reports the whole last-level cache of the host's processor (a 2-core VM on a
large Zen part reported 480 MiB, so 1920 MiB per buffer, two of them, 13-20 s of ``clspmv bench``)
while a core streams through its own share of it (32-96 MiB per Zen CCD); the largest cache one
device reaches today is a GPU's 256 MiB (MI300X's Infinity Cache), which 512 MiB still doubles."""
MEMORY_SHARE = 8
"""A buffer takes at most this share of the device's global memory (the host's, on a CPU): the
two take a quarter, leaving the rest to the matrices of the run and to other programs."""
PROBE = "the copy bandwidth"
"""The probe's name in its progress bar and errors."""


def buffer_bytes(device: Device) -> int:
    """Bytes per buffer: 4 x the device's cache, at least :data:`MIN_BUFFER` and at most
    :data:`MAX_BUFFER`, half the largest allocation and 1/:data:`MEMORY_SHARE` of global memory
    (two buffers are needed), a multiple of 4 KiB."""
    want = min(max(MIN_BUFFER, 4 * device.cache_bytes), MAX_BUFFER)
    cap = min(device.max_allocation // 2, device.global_memory // MEMORY_SHARE)
    return max(4096, (min(want, cap) // 4096) * 4096)


@dataclass(frozen=True)
class Bandwidth:
    """Best streaming rates of one device, in GB/s (1e9 bytes per second); None where nothing
    was measured (:meth:`not_measured`)."""

    copy_gbps: float | None
    """Best copy: (bytes read + bytes written) / kernel time."""
    copy_variant: str
    read_gbps: float | None
    """Best read-only stream: bytes read / kernel time."""
    read_variant: str
    buffer_bytes: int
    cache_bytes: int
    variants: dict[str, float] = field(default_factory=dict)
    """GB/s of every variant tried, by name."""

    @classmethod
    def not_measured(cls, device: Device) -> Bandwidth:
        """The record of a simulator, on which nothing is measured: no rates and no buffer (a
        report shows dashes, and records no share of the copy bandwidth)."""
        why = "not measured on a simulator"
        return cls(None, why, None, why, 0, device.cache_bytes)

    @property
    def buffer_over_cache(self) -> float | None:
        """How many times the device's cache the buffer is (None when no cache is reported)."""
        return self.buffer_bytes / self.cache_bytes if self.cache_bytes else None

    def as_dict(self) -> dict[str, object]:
        """The figures as plain JSON values."""
        return {
            "copy_gbps": self.copy_gbps, "copy_variant": self.copy_variant,
            "read_gbps": self.read_gbps, "read_variant": self.read_variant,
            "buffer_bytes": self.buffer_bytes, "cache_bytes": self.cache_bytes,
            "variants": dict(self.variants),
        }


def _median_ns(enqueue, repeat: int) -> float:
    """Median device time of ``repeat`` runs after a warm-up, at least 1 ns: a clock that reports
    no time at all for a small buffer (a simulator's, or a coarse one) gives a huge rate, not a
    ZeroDivisionError."""
    events_ns([enqueue()])  # warm-up
    return max(1.0, float(np.median([events_ns([enqueue()]) for _ in range(max(repeat, 1))])))


class _Stream:
    """The copy and read kernels over one pair of buffers, timed per variant within ``run``'s
    bound."""

    def __init__(self, device: Device, size: int, repeat: int, run: ProbeRun) -> None:
        self.device, self.size, self.repeat, self.run = device, size, repeat, run
        flags = cl.mem_flags.READ_WRITE
        self.src = cl.Buffer(device.context, flags, size)
        self.dst = cl.Buffer(device.context, flags, size)
        self.found = cl.Buffer(device.context, flags, 4)
        queue = device.queue
        cl.enqueue_fill_buffer(queue, self.src, np.float32(1.0), 0, size)
        cl.enqueue_fill_buffer(queue, self.dst, np.float32(0.0), 0, size)
        queue.finish()
        self.copies: dict[str, float] = {}
        self.reads: dict[str, float] = {}

    def release(self) -> None:
        for buf in (self.src, self.dst, self.found):
            buf.release()

    def median_ns(self, enqueue) -> float:
        """:func:`_median_ns` of ``enqueue``, the probe's bound checked before each run."""
        def checked():
            self.run.check()
            return enqueue()

        return _median_ns(checked, self.repeat)

    def enqueue_copy(self) -> None:
        queue = self.device.queue
        self.copies["enqueue_copy"] = 2 * self.size / self.median_ns(
            lambda: cl.enqueue_copy(queue, self.dst, self.src, byte_count=self.size))
        self.run.step()

    def kernels(self, dtype: np.dtype, vec: int, wg: int, reads: bool = True) -> str:
        """Time copy_vec (and read_vec where ``reads``) with ``vec``-wide elements of ``dtype``;
        returns the name."""
        queue = self.device.queue
        n_vec = self.size // (dtype.itemsize * vec)
        total = round_up(n_vec, wg)
        name = f"{build.c_type(dtype)}{vec if vec > 1 else ''} wg={wg}"
        copy = build.kernel(self.device, "copy.cl", "copy_vec", dtype, WG=wg, VEC=vec)
        self.copies[f"copy {name}"] = 2 * self.size / self.median_ns(
            lambda: copy(queue, (total,), (wg,), np.int64(n_vec), self.src, self.dst))
        if not reads:
            return name
        read = build.kernel(self.device, "copy.cl", "read_vec", dtype, WG=wg, VEC=vec)
        self.reads[f"read {name}"] = self.size / self.median_ns(
            lambda: read(queue, (total,), (wg,), np.int64(n_vec), self.src, self.found,
                         dtype.type(-1.0)))
        return name


def _try_kernels(stream: _Stream, dtype: np.dtype, vec: int, wg: int, reads: bool = True
                 ) -> str | None:
    """:meth:`_Stream.kernels`, or None where the driver cannot build or create that variant
    (PoCL 3.0 on an AVX-512 CPU built the float16 copy without its kernel, clCreateKernel:
    INVALID_KERNEL_NAME): the measurement goes on with the other variants."""
    try:
        name: str | None = stream.kernels(dtype, vec, wg, reads)
    except (cl.Error, BuildError):
        name = None
    stream.run.step()
    return name


def _first_pass(stream: _Stream, reads: bool) -> dict[tuple[np.dtype, int], str]:
    """``enqueue_copy``, then the kernels of every vector type of :data:`COPY_VECTORS` the
    device supports at :func:`_first_wg`; the names of the variants that built, by (element
    type, vector width)."""
    device = stream.device
    stream.enqueue_copy()
    tried = {}
    for dtype, vec in COPY_VECTORS:
        if device.supports(dtype):
            name = _try_kernels(stream, dtype, vec, _first_wg(device), reads)
            if name is not None:
                tried[(dtype, vec)] = name
    return tried


def _first_wg(device: Device) -> int:
    """The work-group size of :func:`_first_pass`: 256, or the device's maximum."""
    return min(256, device.max_work_group_size)


def _sweep(device: Device) -> list[int]:
    """The other work-group sizes :func:`measure` tries the best variant at."""
    return [wg for wg in WORK_GROUP_SIZES
            if wg != _first_wg(device) and wg <= device.max_work_group_size]


def _steps(device: Device, sweep: bool) -> int:
    """The variants :func:`_first_pass` times (and :func:`measure`'s work-group sweep)."""
    first = 1 + sum(device.supports(dtype) for dtype, _ in COPY_VECTORS)
    return first + (len(_sweep(device)) if sweep else 0)


def copy_rate(device: Device, repeat: int = 5, progress: bool = True,
              nbytes: int | None = None) -> float:
    """Bytes per second (read plus written) of the best copy of :func:`measure`'s buffers by
    ``enqueue_copy`` and by the copy kernel of every vector type of :data:`COPY_VECTORS` at
    work-group size 256 (or the device's maximum): :func:`measure`'s copy figure without its
    read kernels and work-group sweep, a quarter of its kernel builds (the calibration's
    streaming prior, within the calibration's time budget). ``nbytes``: bytes per buffer instead
    of :func:`buffer_bytes` (the quick calibration's smaller pair, :mod:`clspmv.model.quick`).
    DeviceError on a simulator and past the probes' time bound (:mod:`clspmv.probing`)."""
    refuse_simulator(device, PROBE)
    with ProbeRun(device, PROBE, _steps(device, sweep=False), progress) as run:
        stream = _Stream(device, nbytes or buffer_bytes(device), repeat, run)
        try:
            _first_pass(stream, reads=False)
        finally:
            stream.release()
    return max(stream.copies.values()) * 1e9


def measure(device: Device, repeat: int = 5, nbytes: int | None = None,
            progress: bool = True) -> Bandwidth:
    """Measure the copy and read bandwidth of ``device``.

    Every vector type of :data:`COPY_VECTORS` is tried at work-group size 256 (or the device's
    maximum), then the best of them at the other :data:`WORK_GROUP_SIZES`; plus
    ``enqueue_copy``. A variant the driver cannot build is left out. Each variant: one warm-up,
    then the median of ``repeat`` runs. On a simulator nothing is measured unless ``nbytes``
    is given (:meth:`Bandwidth.not_measured`); DeviceError past the probes' time bound
    (:mod:`clspmv.probing`).
    """
    if device.is_simulator and nbytes is None:
        return Bandwidth.not_measured(device)
    size = nbytes or buffer_bytes(device)
    with ProbeRun(device, PROBE, _steps(device, sweep=True), progress) as run:
        stream = _Stream(device, size, repeat, run)
        try:
            tried = _first_pass(stream, reads=True)
            if tried:
                best = max(tried, key=lambda key: stream.copies["copy " + tried[key]])
                for wg in _sweep(device):
                    _try_kernels(stream, *best, wg)
        finally:
            stream.release()
    copies, reads = stream.copies, stream.reads
    best_copy = max(copies, key=copies.__getitem__)
    best_read = max(reads, key=reads.__getitem__)
    return Bandwidth(
        copy_gbps=copies[best_copy], copy_variant=best_copy,
        read_gbps=reads[best_read], read_variant=best_read,
        buffer_bytes=size, cache_bytes=device.cache_bytes,
        variants={**copies, **reads},
    )
