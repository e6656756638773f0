"""COO: row-sorted triplets.

The forward product is a segmented reduction by row without atomics (``kernels_cl/coo.cl``;
the idea of the COO kernel of N. Bell and M. Garland, "Implementing sparse matrix-vector
multiplication on throughput-oriented processors", SC 2009): the entries are cut into equal,
contiguous *shares*, whatever the rows; rows inside a share are stored at once, the partial sums
of the (at most two) rows each share's boundaries cut go to a small carry buffer, and a
one-work-group kernel sums those and stores their rows. Every y entry is written once, the same
on every run, so a row of millions of entries costs what as many entries in short rows cost. A
third small kernel writes ``beta * y`` on the empty rows (a bit mask of them is stored when
there are any). Two kernels make the shares (parameter ``staged``):

* ``staged=True`` (the default where the SIMD width is at least :data:`WIDE_SIMD`: GPU warps
  and wavefronts; the Layout carries no device type, and CPUs report their float vector width,
  at most 16): a share is a work-group's ``items * work_group_size`` entries, loaded coalesced
  into local memory and summed there by a keyed scan over the work-items. ``items`` (a power of
  two) defaults to :data:`GPU_ITEMS`, fewer where the pairs (32-bit row, float64 sum) would not
  fit the local memory.
* ``staged=False`` (CPUs): a share is one work-item's ``items`` entries (default
  :data:`SERIAL_ITEMS`), walked in a plain sequential loop, in work-groups of
  :data:`SERIAL_WORK_GROUP`. On the 2-core CPU with PoCL 3.1 the staged kernel ran 6-8x
  slower than ``csr-scalar`` on a random matrix of 2 M entries (its local memory and
  barriers), the serial one 1.1-1.5x.

The transpose product is y = beta * y, then each work-item adds ``chunk`` consecutive entries to
y[col] atomically.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from .base import INDEX_DTYPE, Format, Layout, Triplets, entry_rows, row_lengths, scalar

MAX_CHUNK = 64

GPU_ITEMS = 8
"""Entries per work-item of the staged kernel: 2048 entries per group of 256, whose pairs take
24 KiB of local memory with float64 sums."""

SERIAL_ITEMS = 512
"""Entries per work-item of the serial kernel (CPUs)."""

SERIAL_WORK_GROUP = 64
"""Work-group size of the serial kernel, whatever the layout's (if not larger): on the 2-core
CPU with PoCL 3.1, groups of 256 work-items of 256-1024 entries ran 2-3x slower than groups of
64."""

WIDE_SIMD = 32
"""Smallest SIMD width for which ``staged`` defaults to True."""

PAIR_BYTES = INDEX_DTYPE.itemsize + 8
"""Local memory per staged entry: its row and its product in the widest sum type."""


def chunk_size(nnz: int, layout: Layout) -> int:
    """Entries per work-item of the atomic transpose product: enough work-items to fill the
    device, at most MAX_CHUNK each."""
    target_items = layout.compute_units * layout.work_group_size * 4
    return int(min(MAX_CHUNK, max(1, -(-nnz // target_items))))


def max_items(layout: Layout) -> int:
    """The most entries per work-item whose pairs, and the scan's, fit the local memory (at
    least 1): ``(items + 1) * work_group_size * PAIR_BYTES`` bytes."""
    fit = layout.local_memory // (layout.work_group_size * PAIR_BYTES) - 1
    items = 1
    while items * 2 <= fit:
        items *= 2
    return items


def check_items(items: int, layout: Layout, staged: bool) -> int:
    """``items`` as an int; ValueError unless at least 1 and, staged, a power of two within
    :func:`max_items`."""
    items = int(items)
    if not staged:
        if items < 1:
            raise ValueError(f"items must be at least 1, got {items}")
        return items
    limit = max_items(layout)
    if items < 1 or items & (items - 1) or items > limit:
        raise ValueError(f"items must be a power of two between 1 and {limit} with staged=True "
                         f"(the pairs of a work-group of {layout.work_group_size} must fit the "
                         f"{layout.local_memory} bytes of local memory), got {items}")
    return items


class CooPart:
    """Row-sorted triplets under a name prefix and their kernels, shared by ``coo`` and the COO
    part of ``hyb``: the arrays (:meth:`arrays`), the parameters (``{prefix}nnz``, ``chunk``,
    ``staged``, ``items``, and ``{prefix}wg`` where the part runs work-groups of a size other
    than the format's), the carry buffers (:meth:`upload`) and the launches. It holds only the
    prefix (the format holds the buffers and kernels), so one instance serves every matrix."""

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def arrays(self, rows: np.ndarray, cols: np.ndarray, vals: np.ndarray
               ) -> dict[str, np.ndarray]:
        """The three arrays of the triplets (rows sorted)."""
        p = self.prefix
        return {p + "row": rows.astype(INDEX_DTYPE), p + "col": cols.astype(INDEX_DTYPE),
                p + "val": vals}

    def params(self, nnz: int, layout: Layout, items: int | None, staged: bool | None
               ) -> dict[str, int]:
        """The parameters of ``nnz`` triplets (defaults: see the module docstring)."""
        staged = layout.simd_width >= WIDE_SIMD if staged is None else bool(staged)
        if items is None:
            items = min(GPU_ITEMS, max_items(layout)) if staged else SERIAL_ITEMS
        p = self.prefix
        return {p + "nnz": nnz, p + "chunk": chunk_size(nnz, layout), p + "staged": int(staged),
                p + "items": check_items(items, layout, staged)}

    def layout(self, fmt: Format) -> Layout:
        """The format's layout with the part's work-group size (``{prefix}wg``) where it has
        one of its own."""
        wg = fmt.params.get(self.prefix + "wg")
        return fmt.layout if wg is None else replace(fmt.layout, work_group_size=wg)

    def shares(self, fmt: Format) -> int:
        """Shares of the forward product: work-groups of ``items * WG`` entries (staged) or
        work-items of ``items`` entries."""
        p = self.prefix
        share = fmt.params[p + "items"] * (self.layout(fmt).work_group_size
                                           if fmt.params[p + "staged"] else 1)
        return -(-fmt.params[p + "nnz"] // share)

    def upload(self, fmt: Format, device: Device) -> None:
        """Allocate the carries (two per share: row, and sum in the sums' type)."""
        n = max(1, 2 * self.shares(fmt))
        flags = cl.mem_flags.READ_WRITE
        fmt.buffers[self.prefix + "carry_row"] = cl.Buffer(device.context, flags,
                                                           n * INDEX_DTYPE.itemsize)
        fmt.buffers[self.prefix + "carry_sum"] = cl.Buffer(device.context, flags,
                                                           n * fmt.accumulate.itemsize)
        fmt.nbytes += n * (INDEX_DTYPE.itemsize + fmt.accumulate.itemsize)

    def tile_items(self, fmt: Format) -> int:
        """``ITEMS`` of the kernels' build: ``items`` when staged, else the combining kernel's
        (:data:`GPU_ITEMS` within :func:`max_items`; the serial kernel takes ``items`` as an
        argument)."""
        p = self.prefix
        if fmt.params[p + "staged"]:
            return fmt.params[p + "items"]
        return min(GPU_ITEMS, max_items(self.layout(fmt)))

    def serial_group(self, fmt: Format) -> int:
        """Work-group size of the serial kernel: :data:`SERIAL_WORK_GROUP`, or the layout's if
        smaller."""
        return min(SERIAL_WORK_GROUP, self.layout(fmt).work_group_size)

    def kernels(self, fmt: Format) -> tuple[cl.Kernel, cl.Kernel]:
        """The forward kernels (built on the first call, then kept by ``fmt``)."""
        p, items, wg = self.prefix, self.tile_items(fmt), self.layout(fmt).work_group_size
        if fmt.params[p + "staged"]:
            spmv = fmt.lazy_kernel(p + "coo_spmv", "coo.cl", "coo_spmv", ITEMS=items, wg=wg)
        else:
            spmv = fmt.lazy_kernel(p + "coo_spmv_serial", "coo.cl", "coo_spmv_serial",
                                   ITEMS=items, wg=self.serial_group(fmt))
        return (spmv,
                fmt.lazy_kernel(p + "coo_combine", "coo.cl", "coo_combine", ITEMS=items, wg=wg))

    def product(self, fmt: Format, queue, x, y, alpha, beta, row0: int = 0
                ) -> list[cl.Event]:
        """Enqueue y = alpha * (the triplets) x + beta * y on the rows that have entries
        (``row0``: see :meth:`Format.launch`); HYB passes beta = 1 to add to its ELL part."""
        p, b = self.prefix, fmt.buffers
        shares = self.shares(fmt)
        spmv, combine = self.kernels(fmt)
        wg, nnz = self.layout(fmt).work_group_size, scalar(fmt.params[p + "nnz"])
        args = (b[p + "row"], b[p + "col"], b[p + "val"], x, y, b[p + "carry_row"],
                b[p + "carry_sum"], alpha, beta)
        if fmt.params[p + "staged"]:
            events = [fmt.run(queue, spmv, shares * wg, nnz, *args, wg=wg, row0=row0)]
        else:
            events = [fmt.run(queue, spmv, shares, nnz, scalar(fmt.params[p + "items"]), *args,
                              wg=self.serial_group(fmt), row0=row0)]
        if shares:
            events.append(fmt.run(queue, combine, wg, scalar(2 * shares), b[p + "carry_row"],
                                  b[p + "carry_sum"], y, alpha, beta, wg=wg, row0=row0))
        return [e for e in events if e is not None]

    def product_t(self, fmt: Format, queue, x, y, alpha, row0: int = 0) -> cl.Event | None:
        """Enqueue y += alpha * (the triplets)^T x (y scaled already), atomically."""
        p, b = self.prefix, fmt.buffers
        kern = fmt.lazy_kernel(p + "coo_t", "coo.cl", "coo_accumulate_t", atomics=True,
                               ITEMS=self.tile_items(fmt))  # the file's forward kernels use it
        return fmt.run(queue, kern, -(-fmt.params[p + "nnz"] // fmt.params[p + "chunk"]),
                       scalar(fmt.params[p + "nnz"]), scalar(fmt.params[p + "chunk"]),
                       b[p + "row"], b[p + "col"], b[p + "val"], x, y, alpha, row0=row0)

    def triplets(self, fmt: Format, arrays: dict[str, np.ndarray]) -> Triplets:
        """The stored triplets."""
        p = self.prefix
        nnz = fmt.params[p + "nnz"]
        return arrays[p + "row"][:nnz], arrays[p + "col"][:nnz], arrays[p + "val"][:nnz]


def empty_mask(csr: sp.csr_matrix) -> np.ndarray:
    """Bit i of word i // 32 set where row i has no entries."""
    empty = row_lengths(csr) == 0
    bits = np.packbits(np.pad(empty, (0, -empty.size % 32)), bitorder="little")
    return bits.view(np.uint32) if bits.size else np.zeros(0, np.uint32)


class Coo(Format):
    """Coordinate format sorted by row; works on every matrix."""

    name = "coo"
    kernel_file = "coo.cl"
    coo_part = CooPart()

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, items: int | None = None,
                 staged: bool | None = None) -> Coo:
        arrays = cls.coo_part.arrays(entry_rows(csr), csr.indices, csr.data)
        empty = int((row_lengths(csr) == 0).sum())
        if empty:
            arrays["empty"] = empty_mask(csr)
        return cls(csr.shape, csr.dtype, layout, arrays, empty_rows=empty,
                   **cls.coo_part.params(csr.nnz, layout, items, staged))

    def upload(self, device: Device) -> None:
        super().upload(device)
        self.coo_part.upload(self, device)

    def prepare_kernels(self) -> None:
        self.coo_part.kernels(self)
        if self.params["empty_rows"]:
            self._empty = self.kernel(self.kernel_file, "coo_empty",
                                      ITEMS=self.coo_part.tile_items(self))

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        events = self.coo_part.product(self, queue, x, y, alpha, beta, row0)
        if self.params["empty_rows"]:
            m = self.shape[0]
            events.append(self.run(queue, self._empty, m, scalar(m), self.buffers["empty"], y,
                                   beta, row0=row0))
        return events

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        events = [self.scale_y_t(queue, y, beta),
                  self.coo_part.product_t(self, queue, x, y, alpha, row0)]
        return [e for e in events if e is not None]

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        return self.coo_part.triplets(self, arrays)
