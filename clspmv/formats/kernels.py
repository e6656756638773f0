"""What the kernels take, and how kernels that add to y atomically are built: the 32-bit index
type, the column blocks of the several-right-hand-sides kernels and their strides, the native /
compare-and-swap atomic add of ``kernels_cl/common.h``."""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np
import pyopencl as cl

from .. import build
from ..device import Device
from ..errors import BuildError, ClspmvWarning

INDEX_DTYPE = np.dtype(np.int32)
INDEX_LIMIT = 2**31 - 1
"""Largest value the kernels' 32-bit index type holds."""

MATMAT_BLOCKS = (2, 4, 8, 16)
"""Column-block widths KB the several-right-hand-sides kernels are built for."""


def matmat_block(k: int, threads_per_row: int, work_group_size: int, itemsize: int,
                 local_memory: int) -> int:
    """KB for ``k`` columns: the smallest block holding all of them (at most the largest), halved
    while the lane reduction's ``KB * WG`` values would not fit the device's local memory."""
    kb = next((b for b in MATMAT_BLOCKS if b >= k), MATMAT_BLOCKS[-1])
    if threads_per_row > 1:
        while kb > MATMAT_BLOCKS[0] and kb * work_group_size * itemsize > local_memory:
            kb //= 2
    return kb


@dataclass(frozen=True)
class Strides:
    """Element strides of the n x k input X and the m x k output Y of a several-right-hand-sides
    product: element (i, j) of X is at ``i * x_row + j * x_col``."""

    k: int
    x_row: int
    x_col: int
    y_row: int
    y_col: int

    def args(self) -> tuple[np.int32, ...]:
        return tuple(np.int32(v) for v in (self.x_row, self.x_col, self.y_row, self.y_col))


_native_atomics_refused: set[tuple[Device, str]] = set()
_native_atomics_lock = threading.Lock()


def atomic_kernel(device: Device, file: str, name: str, dtype: np.dtype,
                  accumulate: np.dtype | None = None, **defines: object) -> cl.Kernel:
    """A kernel that adds to y with ``atomic_add_value`` (``common.h``): on a device with
    ``cl_ext_float_atomics`` built with ``-DNATIVE_ATOMICS`` and the ``-cl-std`` the extension
    needs (the native add is then used where the compiler defines its feature macro); if that
    build fails, built again without them, with a warning (the compare-and-swap loop). The
    atomic add is of the value type, also when ``accumulate`` (the type of the work-items' own
    sums, see :func:`clspmv.build.options_for`) is wider."""
    std = device.float_atomics_std
    key = (device, file)
    if std is not None and key not in _native_atomics_refused:
        try:
            return build.kernel(device, file, name, dtype, cl_std=std, accumulate=accumulate,
                                NATIVE_ATOMICS=1, **defines)
        except BuildError as err:
            with _native_atomics_lock:
                _native_atomics_refused.add(key)
            warnings.warn(f"{file} does not build with native float atomics on {device.name} "
                          f"({str(err).splitlines()[0]}); using compare-and-swap atomics",
                          ClspmvWarning, stacklevel=3)
    return build.kernel(device, file, name, dtype, accumulate=accumulate, **defines)


def atomic_add_kind(device: Device, dtype: np.dtype) -> str:
    """``"native"`` when the atomic kernels for ``dtype`` on ``device`` use the float atomic add
    of ``cl_ext_float_atomics``, else ``"compare-and-swap"`` (asks the compiler, through the same
    build options as the kernels)."""
    wg = min(256, device.max_work_group_size)
    kern = atomic_kernel(device, "util.cl", "atomic_add_kind", np.dtype(dtype), WG=wg)
    out = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, 4)
    kern(device.queue, (wg,), (wg,), out)
    flag = np.zeros(1, np.int32)
    cl.enqueue_copy(device.queue, flag, out)
    return "native" if flag[0] else "compare-and-swap"


def scalar(value: int) -> np.int32:
    """An index-type kernel argument."""
    return np.int32(value)
