"""Host buffers for the exchange, and timed copies between them and the device.

On a GPU the exchange buffers are pinned (page-locked) host memory: an OpenCL buffer allocated
with ``ALLOC_HOST_PTR`` and mapped once for the life of the matrix, which drivers (NVIDIA's among
them) copy from at full bus speed. MPI reads and writes the mapped numpy view directly. Where
mapping fails, or on CPU devices, plain numpy arrays serve.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from ..device import Device
from ..errors import ClspmvWarning


class HostBuffers:
    """Allocator of host arrays of one dtype for one device (``pinned``: mapped ALLOC_HOST_PTR
    buffers). Keeps the OpenCL buffers alive as long as itself."""

    def __init__(self, device: Device, dtype: np.dtype, pinned: bool) -> None:
        self.device = device
        self.dtype = np.dtype(dtype)
        self.pinned = pinned
        self._keep: list[object] = []

    def __call__(self, n: int) -> np.ndarray:
        if n == 0 or not self.pinned:
            return np.zeros(n, self.dtype)
        try:
            flags = cl.mem_flags.READ_WRITE | cl.mem_flags.ALLOC_HOST_PTR
            buf = cl.Buffer(self.device.context, flags, size=n * self.dtype.itemsize)
            array, _event = cl.enqueue_map_buffer(
                self.device.queue, buf, cl.map_flags.READ | cl.map_flags.WRITE, 0, (n,),
                self.dtype, is_blocking=True)
        except cl.Error as err:
            warnings.warn(f"pinned host memory unavailable on {self.device.name} ({err}); the "
                          "exchange uses ordinary host memory", ClspmvWarning, stacklevel=2)
            self.pinned = False
            return np.zeros(n, self.dtype)
        array[:] = 0
        self._keep.append((buf, array))
        return array


def seconds(events: list) -> float:
    """Device seconds of completed profiling events (each waited for first)."""
    total = 0
    for event in events:
        if event is None:
            continue
        event.wait()
        try:
            total += event.profile.end - event.profile.start
        except cl.Error:  # an event without profiling information (e.g. a user event)
            pass
    return total * 1e-9


def copy(queue: cl.CommandQueue, dest: object, src: object, log: list,
         wait: bool = False, **options: object) -> cl.Event:
    """``enqueue_copy(dest, src, **options)`` (e.g. ``src_offset``), recorded in ``log`` (the
    staging events of a product)."""
    event = cl.enqueue_copy(queue, dest, src, is_blocking=wait, **options)
    log.append(event)
    return event


Allocator = Callable[[int], np.ndarray]
