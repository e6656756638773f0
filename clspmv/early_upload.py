"""Copies of a matrix's large arrays to the device started before the arrays are checked and
laid out, so that the copy runs beside that host work instead of after it.

``DeviceMatrix.from_scipy(A, format=<a CSR kernel>)`` on a device that copies matrices (a GPU)
spends its time in three steps one after another: the checks of A's arrays
(:func:`clspmv.canonical.canonical_csr`), the kernel's metadata (row blocks, merge-path
shares: a walk over the row pointers for ``csr-adaptive``) and the copy of the arrays. A CSR
kernel stores A's ``indices`` and ``data`` as they are when A is canonical already, so their
copy can start first, on a thread of its own: pyopencl lets go of the GIL during a blocking
copy, and the checks' numpy and scipy loops do too, so the three steps overlap (on an H200 node,
a 45 M-entry matrix: copy 58 ms and walk 58 ms together in 59 ms). Where the checks find A not
canonical, or the format lays the arrays out anew, the early buffers go unused and are freed.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .device import Device
from .precision import resolve


class EarlyUpload:
    """Device buffers of some host arrays being filled by a thread; :meth:`take` hands one
    over once its copy is done. The arrays are held (not copied) until then."""

    def __init__(self, device: Device, arrays: list[np.ndarray]) -> None:
        self.device = device
        self._arrays = [a for a in arrays if a.size]
        self._buffers: dict[tuple[int, int, str], cl.Buffer] = {}
        self._thread = threading.Thread(target=self._copy, name="clspmv-early-upload",
                                        daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, device: Device, arrays: list[np.ndarray]) -> EarlyUpload | None:
        """Start copying the contiguous 1-D ``arrays`` to ``device``; None where it is not a GPU
        (a CPU device uses host memory in place; the Oclgrind simulator, a "GPU", is not safe to
        call from two threads at once: it crashed in CI) or where they may not fit it (the
        upload proper then raises the error that says so)."""
        arrays = [a for a in arrays
                  if isinstance(a, np.ndarray) and a.ndim == 1 and a.flags.c_contiguous]
        total = sum(a.nbytes for a in arrays)
        if (not arrays or device.type != "gpu" or device.is_simulator or device.shares_host_pointer
                or total > device.global_memory // 2
                or any(a.nbytes > device.max_allocation for a in arrays)):
            return None
        return cls(device, arrays)

    def _copy(self) -> None:
        try:
            for a in self._arrays:
                buf = cl.Buffer(self.device.context, cl.mem_flags.READ_ONLY, a.nbytes)
                cl.enqueue_copy(self.device.queue, buf, a, is_blocking=True)
                self._buffers[_memory_of(a)] = buf
        except cl.Error:
            self._buffers.clear()  # short of memory: the upload proper copies and reports

    def take(self, a: np.ndarray) -> cl.Buffer | None:
        """The buffer holding a copy of ``a``'s own memory (an array, or a view scipy made of
        it, over the same bytes: not an equal array elsewhere), waiting for the copies to
        finish; None where ``a`` was not among the arrays or its copy failed. Each buffer is
        handed over once."""
        self._thread.join()
        if not a.flags.c_contiguous:
            return None
        return self._buffers.pop(_memory_of(a), None)

    def close(self) -> None:
        """Wait for the copies and free the buffers nobody took."""
        self._thread.join()
        self._buffers.clear()
        self._arrays.clear()


def _memory_of(a: np.ndarray) -> tuple[int, int, str]:
    """Where a contiguous array's bytes lie, how many and of which type: the same for the views
    scipy makes of one array (the arrays copied are held, so their memory is not reused)."""
    return a.ctypes.data, a.nbytes, a.dtype.str


def of_given_csr(A: object, dtype: object, device: Device) -> EarlyUpload | None:
    """The early copy of a scipy CSR ``A``'s ``indices`` and ``data``, which
    :func:`clspmv.canonical.canonical_csr` keeps as they are (``copy=False``) where A is
    canonical: 32-bit indices, values of the type ``dtype`` resolves to; else None (nothing to
    copy early, or see :meth:`EarlyUpload.start`)."""
    if not sp.issparse(A) or A.format != "csr":
        return None
    try:
        value = resolve(dtype, np.dtype(A.dtype)).value
    except (TypeError, ValueError):
        return None  # the conversion proper says what is wrong
    if A.indices.dtype != np.int32 or A.data.dtype != value:
        return None
    return EarlyUpload.start(device, [A.indices, A.data])


__all__ = ["EarlyUpload", "of_given_csr"]
