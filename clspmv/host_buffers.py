"""Products from numpy arrays without copies on devices whose buffers live in host memory.

On a CPU device (:attr:`clspmv.Device.host_memory`) a numpy ``x`` and ``y`` need not be copied
into device buffers and back: a buffer made with ``CL_MEM_USE_HOST_PTR`` on the array's own memory
is what the kernels read and write. After the kernels (:func:`sync_back`), a device that really
uses the host pointer (:attr:`clspmv.Device.shares_host_pointer`, probed once per device: PoCL
3.0 and 3.1 do) only waits for the product's events; elsewhere ``y``'s buffer is mapped for
reading (blocking) and unmapped, and the OpenCL runtime copies the result into the array there,
so the path is correct on any device. Buffers are made anew for each product (about 2 us each
on PoCL; the ``pyopencl.array.Array`` around one about 12 us): nothing is cached, so new values
written into x between products are always seen.

Which arrays are used in place (:func:`usable`): contiguous (C or Fortran order), of the matrix's
value type, aligned to their element size (what the kernels need: they read x and y element by
element), not empty. Everything else (strided views, another dtype, byte-misaligned views) takes
the copy path of :mod:`clspmv.arguments`. ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (1024 bits on PoCL)
is the alignment of the buffers a device allocates itself; PoCL 3.1's CPU device uses a host
pointer directly at any element alignment (an array starting 8 bytes past a 128-byte boundary
included: the kernels write straight into it, checked in ``tests/test_host_buffers.py``), so
clspmv does not require more; the outputs it allocates itself (:func:`aligned_empty`) are
aligned to ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` anyway.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .device import Device

IN_PLACE = "in place"
"""A numpy operand the kernels used where it lies (a buffer on its memory)."""
COPIED = "copied"
"""A numpy operand copied to a device buffer (and, for y, back)."""
DEVICE = "device"
"""A pyopencl operand (already on the device)."""


def usable(a: np.ndarray, dtype: np.dtype, device: Device) -> bool:
    """True when the kernels can use ``a``'s memory directly on ``device`` (see the module
    docstring)."""
    return (device.host_memory and a.size > 0 and a.dtype == dtype and bool(a.flags.aligned)
            and bool(a.flags.c_contiguous or a.flags.f_contiguous)
            and a.ctypes.data % a.dtype.itemsize == 0)


def wrap(device: Device, a: np.ndarray, writable: bool) -> cl_array.Array:
    """A device array on ``a``'s memory (``CL_MEM_USE_HOST_PTR``; read-only for an input, so a
    read-only numpy ``x`` is fine). The buffer keeps ``a`` alive."""
    flags = cl.mem_flags.USE_HOST_PTR | (cl.mem_flags.READ_WRITE if writable
                                         else cl.mem_flags.READ_ONLY)
    buf = cl.Buffer(device.context, flags, hostbuf=a)
    order = "F" if a.ndim == 2 and a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return cl_array.Array(device.queue, a.shape, a.dtype, order=order, data=buf)


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype, order: str, device: Device,
                  zeros: bool = False) -> np.ndarray:
    """A new numpy array whose memory starts at a multiple of the device's
    ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (at least 64 bytes), filled with zeros when ``zeros``."""
    dtype = np.dtype(dtype)
    align = max(64, int(device.cl_device.mem_base_addr_align) // 8)
    count = int(np.prod(shape))
    raw = np.empty(count * dtype.itemsize + align, np.uint8)
    start = (-raw.ctypes.data) % align
    flat = raw[start:start + count * dtype.itemsize].view(dtype)
    if zeros:
        flat.fill(0)
    return flat.reshape(shape, order=order)


def sync_back(device: Device, y_dev: cl_array.Array, events: list[cl.Event]) -> None:
    """Make the kernels' writes to ``y_dev`` (a buffer on host memory) visible in the numpy
    array under it, once the product's ``events`` are done. Where the device writes straight
    into the array (:attr:`clspmv.Device.shares_host_pointer`, probed once) this only waits for
    the events (a map and an unmap would cost two more commands, about 70 us on PoCL); elsewhere
    a blocking map for reading (in the in-order queue it waits for every kernel of the
    product, and the runtime copies the result into the array) and the unmap."""
    if device.shares_host_pointer:
        if events:
            cl.wait_for_events(events)
        else:
            device.queue.finish()
        return
    queue = device.queue
    mapped, _ = cl.enqueue_map_buffer(queue, y_dev.data, cl.map_flags.READ, 0, (y_dev.nbytes,),
                                      np.uint8, is_blocking=True)
    mapped.base.release(queue).wait()
