"""COO: row-sorted triplets.

The forward product is a segmented reduction by row without atomics (``kernels_cl/coo.cl``;
the idea of the COO kernel of N. Bell and M. Garland, "Implementing sparse matrix-vector
multiplication on throughput-oriented processors", SC 2009): the entries are cut into equal,
contiguous *shares*, whatever the rows; rows inside a share are stored at once, the partial sums
of the (at most two) rows each share's boundaries cut go to a small carry buffer (two per share,
sorted by row), and the same staged kernel reduces those carries in shares of
``CARRY_ITEMS * work_group_size``, level after level (:func:`reduction_levels`: each level
about a thousand times smaller than the one before), until one work-group takes the rest and
stores every row it holds. Every y entry is written once, the same
on every run, so a row of millions of entries costs what as many entries in short rows cost. A
third small kernel writes ``beta * y`` on the empty rows (a bit mask of them is stored when
there are any). Two kernels make the shares (parameter ``staged``):

* ``staged=True`` (the default on devices running work-items in lockstep, SIMD width at least
  :data:`~clspmv.formats.layout.LOCKSTEP_SIMD`: GPU warps and wavefronts; the Layout carries no
  device type, and CPUs report their float vector width, at most 16): a share is a
  work-group's ``items * work_group_size`` entries; each work-item loads its ``items``
  consecutive entries into registers (16-byte loads where ``items`` is a multiple of 4), sums
  them by row, and a keyed scan over the work-items (local memory: one
  row and one sum per work-item) joins the rows that cross work-items. ``items`` (a power of
  two up to :data:`MAX_STAGED_ITEMS`) defaults to :func:`staged_items` (4 in float64, 8 in
  float32). An earlier version staged
  the whole share in local memory and walked it with a stride of ``items`` (bank conflicts),
  with one work-group combining all carries: 2.4-2.7x slower on the H200.
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
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from .base import INDEX_DTYPE, Format, Layout, Triplets, entry_rows, row_lengths, scalar
from .checks import check_int
from .conversion import check_flag
from .costs import slot_bytes
from .layout import LOCKSTEP_SIMD

if TYPE_CHECKING:
    from ..model.features import Features

MAX_CHUNK = 64

STAGED_VALUE_BYTES = 32
"""Bytes of values each work-item of the staged kernel takes by default (:func:`staged_items`):
4 entries in float64, 8 in float32 (``coo`` and hyb's COO part; the tail of long rows keeps
float64's 4), in registers, loaded 16 bytes at a time. On the H200 (float64,
``tools/param_sweep.py``), 4 beat 8 by 2-15 % and 16 by 20-45 % on R-MAT, power-law, web-graph
and arrow matrices of 12-39 M entries; work-groups of 256 and 128 were within 5 %. In float32,
8 entries (the same 32 bytes) beat 4 by 2-8 % on regular matrices of 12-30 M entries and were
within 2 % on graphs of 5-6 M (the tuning matrices of ``reports/2026-11-26-coo-items``), and on
the held-out anchors and irregular suites were 5-14 % faster on the regular ones and within 1 %
on the graphs (arrow 9 % slower)."""


def staged_items(itemsize: int) -> int:
    """Default entries per work-item of the staged kernel for values of ``itemsize`` bytes."""
    return max(1, STAGED_VALUE_BYTES // itemsize)


MAX_STAGED_ITEMS = 32
"""Most entries per work-item of the staged kernel (they live in registers)."""

CARRY_ITEMS = 8
"""Carries per work-item of the levels that reduce the carries (every device)."""

SERIAL_ITEMS = 512
"""Entries per work-item of the serial kernel (CPUs)."""

SERIAL_WORK_GROUP = 64
"""Work-group size of the serial kernel, whatever the layout's (if not larger): on the 2-core
CPU with PoCL 3.1, groups of 256 work-items of 256-1024 entries ran 2-3x slower than groups of
64."""


def chunk_size(nnz: int, layout: Layout) -> int:
    """Entries per work-item of the atomic transpose product: enough work-items to fill the
    device, at most MAX_CHUNK each."""
    target_items = layout.compute_units * layout.work_group_size * 4
    return int(min(MAX_CHUNK, max(1, -(-nnz // target_items))))


def check_items(items: int, staged: bool) -> int:
    """``items`` as an int; ValueError unless at least 1 and, staged, a power of two up to
    :data:`MAX_STAGED_ITEMS`."""
    items = check_int("items", items)
    if not staged:
        if items < 1:
            raise ValueError(f"items must be at least 1, got {items}")
        return items
    if items < 1 or items & (items - 1) or items > MAX_STAGED_ITEMS:
        raise ValueError(f"items must be a power of two between 1 and {MAX_STAGED_ITEMS} with "
                         f"staged=True (the entries of a work-item are held in registers), "
                         f"got {items}")
    return items


def reduction_levels(shares: int, carry_tile: int) -> list[int]:
    """The carries each level after the first reduces: ``2 * shares`` carries of the first
    level, then ``2 * ceil(n / carry_tile)`` of each level before, down to the level of one
    work-group (which stores every row). Empty when the first level ran as one staged group
    (``shares`` 0 or the caller's concern; see :meth:`CooPart.product`)."""
    levels = []
    n = 2 * shares
    while True:
        levels.append(n)
        groups = -(-n // carry_tile)
        if groups <= 1:
            return levels
        n = 2 * groups


def carry_levels(shares: int, staged: bool, work_group_size: int) -> list[int]:
    """The carries reduced by each launch after the first level's ``shares``
    (:func:`reduction_levels`): none when the first level is one staged work-group, which
    stores every row itself."""
    if shares == 0 or (shares == 1 and staged):
        return []
    return reduction_levels(shares, CARRY_ITEMS * work_group_size)


def default_items(simd_width: int, itemsize: int) -> int:
    """Entries per work-item by default on a device of ``simd_width`` (the staged kernel where
    it is lockstep, :func:`staged_items`; else the serial one, :data:`SERIAL_ITEMS`)."""
    return staged_items(itemsize) if simd_width >= LOCKSTEP_SIMD else SERIAL_ITEMS


def default_launches(nnz: int, simd_width: int, work_group_size: int, itemsize: int) -> int:
    """Kernels the product of ``nnz`` triplets of values of ``itemsize`` bytes enqueues with the
    default parameters on a device of ``simd_width`` (the first level and the levels of carries;
    0 for no triplets), for the time model (:mod:`clspmv.model.launches`)."""
    if nnz == 0:
        return 0
    staged = simd_width >= LOCKSTEP_SIMD
    items = default_items(simd_width, itemsize)
    share = items * work_group_size if staged else items
    return 1 + len(carry_levels(-(-nnz // share), staged, work_group_size))


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

    def params(self, nnz: int, layout: Layout, items: int | None, staged: bool | None,
               itemsize: int) -> dict[str, int]:
        """The parameters of ``nnz`` triplets of values of ``itemsize`` bytes (defaults: see
        the module docstring)."""
        staged = check_flag("staged", staged, layout.lockstep)
        if items is None:
            items = staged_items(itemsize) if staged else SERIAL_ITEMS
        p = self.prefix
        return {p + "nnz": nnz, p + "chunk": chunk_size(nnz, layout), p + "staged": int(staged),
                p + "items": check_items(items, staged)}

    def layout(self, fmt: Format) -> Layout:
        """The format's layout with the part's work-group size (``{prefix}wg``) where it has
        one of its own."""
        wg = fmt.params.get(self.prefix + "wg")
        return fmt.layout if wg is None else replace(fmt.layout, work_group_size=wg)

    def shares(self, fmt: Format) -> int:
        """Shares of the first level: work-groups of ``items * WG`` entries (staged) or
        work-items of ``items`` entries."""
        p = self.prefix
        share = fmt.params[p + "items"] * (self.layout(fmt).work_group_size
                                           if fmt.params[p + "staged"] else 1)
        return -(-fmt.params[p + "nnz"] // share)

    def carry_levels(self, fmt: Format) -> list[int]:
        """The carries reduced by each launch after the first (:func:`carry_levels`)."""
        return carry_levels(self.shares(fmt), bool(fmt.params[self.prefix + "staged"]),
                            self.layout(fmt).work_group_size)

    def carry_buffers(self, fmt: Format) -> tuple[int, int]:
        """Carries held by each of the two carry buffers (at least 1): each level writes the one
        the level before did not (two carries per share or group)."""
        levels = self.carry_levels(fmt)
        return max([1, *levels[0::2]]), max([1, *levels[1::2]])

    def upload(self, fmt: Format, device: Device) -> None:
        """Allocate the carries (:meth:`carry_buffers`: a row, and a sum in the sums' type, per
        carry)."""
        sizes = self.carry_buffers(fmt)
        for k, n in enumerate(sizes):
            fmt.scratch_buffer(f"{self.prefix}carry_row{k}", n * INDEX_DTYPE.itemsize)
            fmt.scratch_buffer(f"{self.prefix}carry_sum{k}", n * fmt.accumulate.itemsize)
            fmt.own_nbytes += n * (INDEX_DTYPE.itemsize + fmt.accumulate.itemsize)

    def serial_group(self, fmt: Format) -> int:
        """Work-group size of the serial kernel: :data:`SERIAL_WORK_GROUP`, or the part's if
        smaller."""
        return min(SERIAL_WORK_GROUP, self.layout(fmt).work_group_size)

    def kernels(self, fmt: Format) -> tuple[cl.Kernel, cl.Kernel]:
        """The first level's kernel and the carries' (built on the first call, then kept by
        ``fmt``; the same kernel when staged with ``items`` = :data:`CARRY_ITEMS`)."""
        p, wg = self.prefix, self.layout(fmt).work_group_size
        carries = fmt.lazy_kernel(p + "coo_carries", "coo.cl", "coo_spmv", ITEMS=CARRY_ITEMS,
                                  wg=wg)
        items = fmt.params[p + "items"]
        if not fmt.params[p + "staged"]:
            first = fmt.lazy_kernel(p + "coo_spmv_serial", "coo.cl", "coo_spmv_serial",
                                    ITEMS=CARRY_ITEMS, wg=self.serial_group(fmt))
        elif items == CARRY_ITEMS:
            first = carries
        else:
            first = fmt.lazy_kernel(p + "coo_spmv", "coo.cl", "coo_spmv", ITEMS=items, wg=wg)
        return first, carries

    def product(self, fmt: Format, queue, x, y, alpha, beta, row0: int = 0
                ) -> list[cl.Event]:
        """Enqueue y = alpha * (the triplets) x + beta * y on the rows that have entries
        (``row0``: see :meth:`Format.launch`); HYB passes beta = 1 to add to its ELL part."""
        p, b = self.prefix, fmt.buffers
        shares = self.shares(fmt)
        first, carries = self.kernels(fmt)
        wg, nnz = self.layout(fmt).work_group_size, scalar(fmt.params[p + "nnz"])
        entries = (b[p + "row"], b[p + "col"], b[p + "val"])
        out = (b[p + "carry_row0"], b[p + "carry_sum0"])
        if fmt.params[p + "staged"]:
            events = [fmt.run(queue, first, shares * wg, nnz, np.int32(0), out[1], *entries,
                              x, y, *out, alpha, beta, wg=wg, row0=row0)]
        else:
            events = [fmt.run(queue, first, shares, nnz, scalar(fmt.params[p + "items"]),
                              *entries, x, y, *out, alpha, beta, wg=self.serial_group(fmt),
                              row0=row0)]
        for level, n in enumerate(self.carry_levels(fmt)):
            src = (b[f"{p}carry_row{level % 2}"], b[f"{p}carry_sum{level % 2}"])
            dst = (b[f"{p}carry_row{1 - level % 2}"], b[f"{p}carry_sum{1 - level % 2}"])
            events.append(fmt.run(queue, carries, -(-n // (CARRY_ITEMS * wg)) * wg, scalar(n),
                                  np.int32(1), src[1], src[0], *entries[1:], x, y, *dst, alpha,
                                  beta, wg=wg, row0=row0))
        return [e for e in events if e is not None]

    def product_t(self, fmt: Format, queue, x, y, alpha, row0: int = 0) -> cl.Event | None:
        """Enqueue y += alpha * (the triplets)^T x (y scaled already), atomically."""
        p, b = self.prefix, fmt.buffers
        kern = fmt.lazy_kernel(p + "coo_t", "coo.cl", "coo_accumulate_t", atomics=True,
                               ITEMS=CARRY_ITEMS)  # the file's forward kernels use it
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
    trial_family = "csr"
    conversion_kind = "layout"

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        return f.entries * (slot_bytes(f) + 4)

    @classmethod
    def launches(cls, f: Features, layout: Layout) -> int:
        """The first level and the carries, plus the clearing of empty rows' y."""
        return max(1, default_launches(f.entries, f.simd_width, layout.work_group_size,
                                       f.itemsize) + (1 if f.empty_rows else 0))

    @classmethod
    def work_items(cls, f: Features, layout: Layout) -> float:
        """The shares of the entries: float64's whatever the value size (the calibration
        measures float64, and the staged kernel's 8 float32 entries per work-item were no
        faster than 4 on graphs: ``reports/2026-11-26-coo-items``, counted as 8, the model
        took coo there, 0.93-0.95x)."""
        return f.entries / default_items(f.simd_width, 8)

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, items: int | None = None,
                 staged: bool | None = None) -> Coo:
        arrays = cls.coo_part.arrays(entry_rows(csr), csr.indices, csr.data)
        empty = int((row_lengths(csr) == 0).sum())
        if empty:
            arrays["empty"] = empty_mask(csr)
        return cls(csr.shape, csr.dtype, layout, arrays, empty_rows=empty,
                   **cls.coo_part.params(csr.nnz, layout, items, staged, csr.dtype.itemsize))

    def upload(self, device: Device) -> None:
        super().upload(device)
        self.coo_part.upload(self, device)

    def prepare_kernels(self) -> None:
        self.coo_part.kernels(self)
        if self.params["empty_rows"]:
            self._empty = self.kernel(self.kernel_file, "coo_empty", ITEMS=CARRY_ITEMS)

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
