"""Products from numpy arrays without copies on devices whose buffers live in host memory.

On a CPU device (:attr:`clspmv.Device.host_memory`) a numpy ``x`` and ``y`` need not be copied
into device buffers and back: a buffer made with ``CL_MEM_USE_HOST_PTR`` on the array's own memory
is what the kernels read and write. After the kernels (:func:`sync_back`), a device that really
uses the host pointer (:attr:`clspmv.Device.shares_host_pointer`, probed once per device: PoCL
3.0 and 3.1 do) only waits for the product's events; elsewhere ``y``'s buffer is mapped for
reading (blocking) and unmapped, and the OpenCL runtime copies the result into the array there,
so the path is correct on any device. Buffers are made anew for each product (microseconds
each): nothing is cached, so new values written into x between products are always seen.

Which arrays are used in place (:func:`usable`): contiguous (C or Fortran order), of the matrix's
value type, aligned to their element size (what the kernels need: they read x and y element by
element), not empty. Everything else (strided views, another dtype, byte-misaligned views) takes
the copy path of :mod:`clspmv.arguments`. PoCL 3.1's CPU device uses a host pointer at any
element alignment (``tests/test_host_buffers.py`` checks it), so clspmv asks no more than that;
the outputs it allocates itself (:func:`aligned_empty`) are aligned to the device's
``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` anyway.
"""

from __future__ import annotations

import functools
import math
import sys

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
    # numpy's aligned flag is alignment to dtype.alignment, the element size for float32 and
    # float64 on the usual platforms: the address is read (a ctypes object, a few us on the
    # path of every product) only where the two differ
    return (device.host_memory and a.size > 0 and a.dtype == dtype and bool(a.flags.aligned)
            and bool(a.flags.c_contiguous or a.flags.f_contiguous)
            and (a.dtype.alignment >= a.dtype.itemsize
                 or a.ctypes.data % a.dtype.itemsize == 0))


class HostVector:
    """The buffer on a 1-D numpy array's memory, with the array's shape, dtype and size: all
    that a vector product's kernels and :func:`sync_back` take from it: lighter than a
    ``pyopencl.array.Array``, which would be made per operand and product."""

    __slots__ = ("data", "shape", "dtype", "nbytes", "size")

    def __init__(self, data: cl.Buffer, a: np.ndarray) -> None:
        self.data, self.shape, self.dtype = data, a.shape, a.dtype
        self.nbytes, self.size = a.nbytes, a.size


def wrap(device: Device, a: np.ndarray, writable: bool) -> cl_array.Array | HostVector:
    """A device array on ``a``'s memory (``CL_MEM_USE_HOST_PTR``): a :class:`HostVector` for a
    1-D ``a``, else a ``pyopencl.array.Array``. The buffer keeps ``a`` alive. An input
    (``writable`` False) is declared read-only only where numpy's array is (a read-only ``x`` is
    fine): Intel's CPU runtime copies a read-only buffer's memory at its creation unless it
    starts at a multiple of 128 bytes (3.2 ms for a numpy x of 8 MB, whose memory starts 16
    bytes past a page), and uses it in place when the buffer may be written; the kernels never
    write an input."""
    writes = writable or bool(a.flags.writeable)
    flags = cl.mem_flags.USE_HOST_PTR | (cl.mem_flags.READ_WRITE if writes
                                         else cl.mem_flags.READ_ONLY)
    buf = cl.Buffer(device.context, flags, hostbuf=a)
    if a.ndim == 1:
        return HostVector(buf, a)
    order = "F" if a.ndim == 2 and a.flags.f_contiguous and not a.flags.c_contiguous else "C"
    return cl_array.Array(device.queue, a.shape, a.dtype, order=order, data=buf)


def matrix_buffer(device: Device, a: np.ndarray, in_place: bool) -> cl.Buffer:
    """A read-only buffer holding a matrix's array ``a`` (:meth:`clspmv.formats.Format.upload`):
    made on ``a``'s own memory (``CL_MEM_USE_HOST_PTR``, the buffer keeping ``a`` alive) where
    ``in_place`` (the caller's word that nothing else reads or writes ``a``) and the device uses
    host pointers in place (:attr:`clspmv.Device.shares_host_pointer`), else a copy. In place a
    CPU device's upload costs next to nothing and the products run as fast; the copy is an empty
    buffer and a blocking write into it, several times faster than ``CL_MEM_COPY_HOST_PTR`` on
    NVIDIA's OpenCL for large arrays (evidence: docs/measurements.md, "Evidence behind the
    code"). OpenCL has no empty buffers: an empty array gets one element nobody reads."""
    if a.size == 0:
        a = np.zeros(1, a.dtype)
    elif in_place and device.shares_host_pointer:
        return cl.Buffer(device.context, cl.mem_flags.READ_ONLY | cl.mem_flags.USE_HOST_PTR,
                         hostbuf=a)
    buf = cl.Buffer(device.context, cl.mem_flags.READ_ONLY, a.nbytes)
    cl.enqueue_copy(device.queue, buf, np.ascontiguousarray(a), is_blocking=True)
    return buf


@functools.cache
def buffer_alignment(device: Device) -> int:
    """Bytes the start of a buffer ``device`` allocates is a multiple of
    (``CL_DEVICE_MEM_BASE_ADDR_ALIGN``, which the driver gives in bits), at least 64 (a cache
    line); read once per device, off the path of every product."""
    return max(64, int(device.cl_device.mem_base_addr_align) // 8)


def aligned_empty(shape: tuple[int, ...], dtype: np.dtype, order: str, device: Device,
                  zeros: bool = False, pool: OutputPool | None = None) -> np.ndarray:
    """A new numpy array whose memory starts at a multiple of the device's
    :func:`buffer_alignment`, filled with zeros when ``zeros``; its
    memory comes from ``pool`` where one is given (see :class:`OutputPool`)."""
    dtype = np.dtype(dtype)
    align = buffer_alignment(device)
    count = math.prod(shape)  # not np.prod: about 3 us a call, on the path of every M @ x
    size = count * dtype.itemsize + align
    raw = pool.take(size) if pool is not None else np.empty(size, np.uint8)
    start = (-raw.ctypes.data) % align
    flat = raw[start:start + count * dtype.itemsize].view(dtype)
    if zeros:
        flat.fill(0)
    return flat.reshape(shape, order=order)


class OutputPool:
    """Memory for the new outputs of one matrix's products (``y = M @ x`` without a given y),
    reused once no array refers to it any more.

    A fresh output of a few MB costs page faults when the kernels first write it (the operating
    system zeroes every page: on a 2-core CPU a tenth to a fifth of a product of 1 to 4 M
    entries), which the MKL baseline, writing into one array, never pays. The pool keeps up to
    :attr:`KEEP` blocks; a block is handed out again only when its reference count shows that
    nothing but the pool holds it (numpy views of an output, and views of views, all refer to
    the block itself as their ``base``), so an output the caller still holds, or any view of it,
    is never reused. Cost: up to ``KEEP`` outputs' memory stays allocated while the matrix
    lives. Not thread-safe: call under the matrix's lock.
    """

    KEEP = 2
    """Blocks kept: two, so that ``y = M @ x`` in a loop (the old y is alive during the call)
    alternates between two blocks."""

    def __init__(self) -> None:
        self._blocks: list[np.ndarray] = []
        # the reference count of a block that only the list holds, taken the way take() takes
        # it (the count of the call's own arguments differs between Python versions)
        alone = [np.empty(0, np.uint8)]
        self._alone = sys.getrefcount(alone[0])

    def take(self, nbytes: int) -> np.ndarray:
        """A uint8 block of exactly ``nbytes`` that no array uses: a kept one, else a new one
        (kept in place of a free block of another size, or while fewer than KEEP are kept)."""
        free = None
        for i in range(len(self._blocks)):
            if sys.getrefcount(self._blocks[i]) <= self._alone:  # only the list holds it
                if self._blocks[i].size == nbytes:
                    return self._blocks[i]
                free = i
        new = np.empty(nbytes, np.uint8)
        if free is not None:
            self._blocks[free] = new
        elif len(self._blocks) < self.KEEP:
            self._blocks.append(new)
        return new


def drain(queue: cl.CommandQueue) -> None:
    """Wait for every command of ``queue``: called where a product fails or is interrupted
    (Ctrl-C), before its buffers on numpy memory go: a kernel still running would otherwise read
    or write memory that numpy may already have handed to another array (the output pool's next
    y, say). An error of the queue itself is not raised here: the product's own exception,
    which the caller raises next, says what went wrong first."""
    try:
        queue.finish()
    except cl.Error:
        pass


def sync_back(device: Device, y_dev: cl_array.Array | HostVector, events: list[cl.Event]) -> None:
    """Make the kernels' writes to ``y_dev`` (a buffer on host memory) visible in the numpy
    array under it, once the product's ``events`` are done. Where the device writes straight
    into the array (:attr:`clspmv.Device.shares_host_pointer`, probed once) this only waits for
    the events (a map and an unmap would cost two more commands); elsewhere
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
