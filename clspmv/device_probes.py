"""The device facts clspmv finds out by running a kernel rather than by asking the driver
(:class:`clspmv.device.Device` calls them once each, on first use)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

if TYPE_CHECKING:
    from .device import Device

_HOST_POINTER_PROBE = ("__kernel void probe(__global int *a, int n) "
                       "{ int i = get_global_id(0); if (i < n) a[i] = i + 1; }")


def shares_host_pointer(device: Device) -> bool:
    """See :attr:`Device.shares_host_pointer`: whether kernels write straight into host memory
    behind ``CL_MEM_USE_HOST_PTR`` buffers at 4-byte, 8-byte and 128-byte alignment."""
    kern = cl.Kernel(cl.Program(device.context, _HOST_POINTER_PROBE).build(), "probe")
    n, align = 4096, 128
    flags = cl.mem_flags.USE_HOST_PTR | cl.mem_flags.READ_WRITE
    for offset in (0, 4, 8):
        raw = np.zeros(4 * n + align + offset, np.uint8)
        start = (-raw.ctypes.data) % align + offset
        a = raw[start:start + 4 * n].view(np.int32)
        buf = cl.Buffer(device.context, flags, hostbuf=a)
        kern(device.queue, (n,), None, buf, np.int32(n)).wait()
        shared = bool((a == np.arange(1, n + 1, dtype=np.int32)).all())
        buf.release()
        if not shared:
            return False
    return True


_INLINE_PTX_PROBE = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void probe(__global const int *a, __global const double *b, __global double *c)
{
    int i;
    double v;
    __asm__ __volatile__("ld.global.cs.s32 %0, [%1];" : "=r"(i) : "l"(a));
    __asm__ __volatile__("ld.global.cs.f64 %0, [%1];" : "=d"(v) : "l"(b));
    __asm__ __volatile__("shfl.sync.bfly.b32 %0, %1, %2, 31, 0xffffffff;"
                         : "=r"(i) : "r"(i), "r"(1));
    c[0] = v + i;
}"""
"""The inline PTX of ``kernels_cl/common.h``: the two loads of ``STREAM_HINT`` (a column index
and a float64) and a shuffle of ``WARP_SHUFFLE``."""


def takes_inline_ptx(device: Device) -> bool:
    """See :attr:`Device.inline_ptx`: whether a kernel loading an int and a double with PTX's
    ``ld.global.cs`` and shuffling an int with ``shfl.sync`` builds (a compiler that rejects
    inline PTX raises)."""
    return builds(device, _INLINE_PTX_PROBE)


def builds(device: Device, source: str) -> bool:
    """Whether ``source`` builds for ``device``."""
    try:
        with warnings.catch_warnings():  # NVIDIA's compiler prints its log for every build
            warnings.simplefilter("ignore", cl.CompilerWarning)
            cl.Program(device.context, source).build()
    except cl.Error:
        return False
    return True
