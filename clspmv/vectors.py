"""Dense vector kernels on the device (``kernels_cl/vector.cl``): strided column copies for
:meth:`DeviceMatrix.matmat`'s fallback, the dot products and fused updates of the Krylov
solvers, and the row scatter and gather of :mod:`clspmv.distributed`. Reductions run on the
device into a small array of scalars; nothing is read back unless the caller asks for it.
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from . import build
from .device import Device
from .formats.base import INDEX_LIMIT

MAX_GROUPS = 1024
"""Most work-groups a reduction's first pass uses (each leaves one partial sum per dot)."""

Vector = cl_array.Array


def i32(value: int) -> np.int32:
    """An integer kernel argument."""
    if not -INDEX_LIMIT - 1 <= value <= INDEX_LIMIT:
        raise OverflowError(f"{value} does not fit the kernels' 32-bit indices")
    return np.int32(value)


def buffer(a: Vector) -> cl.Buffer:
    """The buffer of a device array that starts at its buffer's beginning."""
    if a.offset:
        raise ValueError("device arrays passed to clspmv kernels must not have an offset")
    return a.data


class DeviceVectors:
    """The kernels of ``vector.cl`` for one device and value type.

    Each instance builds its own kernel objects (from the shared program cache), so instances used
    by different threads never share kernel arguments. Kernels are enqueued on ``device.queue``.
    """

    def __init__(self, device: Device, dtype: np.dtype) -> None:
        self.device = device
        self.dtype = np.dtype(dtype)
        self.queue = device.queue
        self.work_group_size = min(256, device.max_work_group_size)
        self.max_groups = int(min(MAX_GROUPS, max(32, 8 * device.compute_units)))
        self._kernels: dict[tuple[str, int], cl.Kernel] = {}
        self._partial: Vector | None = None

    # -- plumbing ---------------------------------------------------------------------------
    def kernel(self, name: str, ndot: int = 1) -> cl.Kernel:
        """The kernel ``name`` of vector.cl (``ndot`` specialises ``dots``)."""
        key = (name, ndot)
        kern = self._kernels.get(key)
        if kern is None:
            defines = {"NDOT": ndot} if name == "dots" else {}
            kern = build.kernel(self.device, "vector.cl", name, self.dtype,
                                WG=self.work_group_size, **defines)
            self._kernels[key] = kern
        return kern

    def run(self, name: str, n: int, *args: object) -> cl.Event | None:
        """Enqueue the element-wise kernel ``name`` over ``n`` items: ``name(n, *args)``.
        Device arrays are passed as their buffers."""
        if n <= 0:
            return None
        wg = self.work_group_size
        total = -(-n // wg) * wg
        kern = self.kernel(name)
        return kern(self.queue, (total,), (wg,), i32(n), *map(_arg, args))

    def groups(self, n: int) -> int:
        """Work-groups of a reduction's first pass over ``n`` entries."""
        return int(max(1, min(self.max_groups, -(-n // self.work_group_size))))

    def partial(self, count: int) -> Vector:
        """Scratch for ``count`` partial sums (grown on demand, reused)."""
        if self._partial is None or self._partial.size < count:
            self._partial = cl_array.empty(self.queue, max(count, 3 * self.max_groups),
                                           self.dtype)
        return self._partial

    def scalars(self, count: int) -> Vector:
        """A new device array of ``count`` scalars, zero-filled."""
        return cl_array.zeros(self.queue, count, self.dtype)

    # -- operations ---------------------------------------------------------------------------
    def copy_strided(self, n: int, src: Vector, src_off: int, src_step: int, dst: Vector,
                     dst_off: int, dst_step: int) -> cl.Event | None:
        """dst[dst_off + i*dst_step] = src[src_off + i*src_step] for i < n (element units)."""
        return self.run("copy_strided", n, src, i32(src_off), i32(src_step), dst, i32(dst_off),
                        i32(dst_step))

    def scatter_add(self, rows: Vector, alpha: float, s: Vector, y: Vector) -> cl.Event | None:
        """y[rows[i]] += alpha * s[i] for every i < len(rows); ``rows`` (int32) must be distinct
        (no atomics) and within y."""
        return self.run("scatter_add", int(rows.size), rows, self.dtype.type(alpha), s, y)

    def take(self, index: Vector, src: Vector, dst: Vector) -> cl.Event | None:
        """dst[i] = src[index[i]] for every i < len(index) (``index`` int32, within src)."""
        return self.run("take", int(index.size), index, src, dst)

    def dots(self, n: int, pairs: list[tuple[Vector, Vector]], s: Vector, slot: int
             ) -> list[cl.Event]:
        """s[slot + j] = pairs[j][0] . pairs[j][1] for up to three pairs, on the device."""
        if not 1 <= len(pairs) <= 3:
            raise ValueError(f"dots takes 1 to 3 pairs, got {len(pairs)}")
        wg = self.work_group_size
        g = self.groups(n)
        partial = self.partial(3 * g)
        flat = [v for pair in pairs for v in pair]
        flat += [flat[0]] * (6 - len(flat))
        first = self.kernel("dots", len(pairs))(
            self.queue, (g * wg,), (wg,), i32(n), *map(_arg, flat), partial.data)
        return [first, self._sum_partials(g, len(pairs), partial, s, slot)]

    def basis_dots(self, n: int, m: int, V: Vector, ldv: int, w: Vector, s: Vector, slot: int
                   ) -> list[cl.Event]:
        """s[slot + j] = V_j . w for the first ``m`` rows of the basis ``V`` (row j at j*ldv)."""
        wg = self.work_group_size
        g = self.groups(n)
        partial = self.partial(m * g)
        first = self.kernel("basis_dots")(self.queue, (g * wg, m), (wg, 1), i32(n), V.data,
                                          i32(ldv), _arg(w), partial.data)
        return [first, self._sum_partials(g, m, partial, s, slot)]

    def _sum_partials(self, groups: int, m: int, partial: Vector, s: Vector, slot: int
                      ) -> cl.Event:
        wg = self.work_group_size
        return self.kernel("sum_partials")(self.queue, (wg, m), (wg, 1), np.int32(groups),
                                           partial.data, _arg(s), np.int32(slot))


def _arg(a: object) -> object:
    return buffer(a) if isinstance(a, cl_array.Array) else a
