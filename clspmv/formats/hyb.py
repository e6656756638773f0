"""HYB: an ELL part of width K plus a COO part for the entries beyond K (``ellpack-r.txt``
section 3). K is the largest width that at least one third of the rows reach
(:func:`clspmv.row_stats.hyb_width`), so the ELL part holds at most three times the entries; on CPUs
three quarters in float64 (:func:`ell_share`). The
ELL part is column-major, or row-major where ``ell`` would be (CPUs, K of at least the
device's measured :attr:`~clspmv.formats.Layout.row_major_width`: on the 2-core Zen 4 the
column-major part had made ``hyb`` 2.4-3.3 times slower than the CSR kernels on the 27-point
stencil and 5x5-block matrices of the ``anchors`` suite, whose rows it holds whole; row-major,
2-6 times faster on such rows, ``reports/2026-11-26-cpu-2core-zen4-hyb``).

The product runs the ELL kernel (y = alpha * ELL part x + beta * y), then the COO part's
segmented reduction (:class:`~clspmv.formats.coo.CooPart`) with beta = 1, adding to what the
ELL part stored: no atomics. The transpose product adds both parts to y atomically."""

from __future__ import annotations

from fractions import Fraction
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from ..row_stats import THIRD, hyb_width
from .base import (
    INDEX_DTYPE,
    Format,
    Layout,
    Triplets,
    round_up,
    row_lengths,
    scalar,
)
from .checks import check_int
from .coo import CooPart, default_launches
from .costs import RowShape, padded_row_count, slot_bytes
from .ell import ELL_BEYOND_CACHE_LIKE, ell_arrays, ell_triplets, ell_where, row_major_layout

if TYPE_CHECKING:
    from ..model.features import Features


def ell_share(lockstep: bool, itemsize: int) -> Fraction:
    """The share of the rows that HYB's ELL width must reach (:func:`clspmv.row_stats.hyb_width`)
    for values of ``itemsize`` bytes: the paper's third where work-items run in ``lockstep``
    (:attr:`~clspmv.formats.layout.Layout.lockstep`: GPUs); elsewhere (CPUs) the bytes of an
    ELL slot over those of a COO entry, ``(itemsize + 4) / (itemsize + 8)`` (3/4 in float64):
    a column of the ELL part is read for every row, so it pays where the entries it takes from
    the COO part weigh as much. On the 2-core Zen 4 the third had made ``hyb`` 1.5-1.9 times
    slower than ``csr-scalar`` on power-law rows, each narrower width faster there
    (``reports/2026-11-26-cpu-2core-zen4-hyb``)."""
    if lockstep:
        return THIRD
    return Fraction(itemsize + INDEX_DTYPE.itemsize, itemsize + 2 * INDEX_DTYPE.itemsize)


class Hyb(Format):
    """ELL (width K, column-major or row-major) for the first K entries of each row, COO for
    the rest."""

    name = "hyb"
    stream_float32 = True
    kernel_file = "ell.cl"
    coo_part = CooPart("coo_")
    forward_roundings = 2  # the ELL part's sum is stored in y, then the COO part adds to it
    trial_family = "ell"
    beyond_cache_like = ELL_BEYOND_CACHE_LIKE
    conversion_kind = "layout"
    padded = True

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """The ELL part's rows (padded to C) times its width, plus the COO part's entries."""
        return round_up(shape.rows, shape.simd_width) * shape.hyb_width + shape.hyb_beyond

    @classmethod
    def _coo_entries(cls, f: Features) -> int:
        return f.slots_of(cls.name) - padded_row_count(f) * f.hyb_width

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        return f.slots_of(cls.name) * slot_bytes(f) + cls._coo_entries(f) * 4

    @classmethod
    def launches(cls, f: Features, layout: Layout) -> int:
        """The ELL part's kernel, then the COO part's."""
        return 1 + default_launches(cls._coo_entries(f), f.simd_width, layout.work_group_size,
                                    f.itemsize)

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, width: int | None = None,
                 items: int | None = None, staged: bool | None = None,
                 row_major: bool | None = None) -> Hyb:
        """``row_major``: the ELL part's layout, True or False, or None for ``ell``'s rule
        (:func:`~clspmv.formats.ell.row_major_layout`)."""
        lengths = row_lengths(csr)
        k = (hyb_width(lengths, ell_share(layout.lockstep, csr.dtype.itemsize)) if width is None
             else check_int("width", width))
        if k < 0:
            raise ValueError(f"width must be >= 0, got {k}")
        row_major = row_major_layout(row_major, layout, k, csr)
        n_pad = round_up(csr.shape[0], layout.simd_width)
        where = ell_where(csr, n_pad, 1)  # slot p of row r at p * n_pad + r
        # the ELL part's index of the slots below k (r * k + p row-major)
        at = ell_where(csr, n_pad, 1, k) if row_major else where
        if lengths.size == 0 or lengths.max() <= k:  # everything fits the ELL part
            arrays = ell_arrays(csr, n_pad, k, 1, where=at, row_major=row_major)
            none = np.zeros(0, np.int64)
            arrays.update(cls.coo_part.arrays(none, none, np.zeros(0, csr.dtype)))
            coo_nnz = 0
        else:
            in_ell = where < k * n_pad  # position in row below k
            arrays = ell_arrays(csr, n_pad, k, 1, keep=in_ell, where=at, row_major=row_major)
            rest = ~in_ell
            arrays.update(cls.coo_part.arrays(where[rest] % n_pad, csr.indices[rest],
                                              csr.data[rest]))
            coo_nnz = int(rest.sum())
        return cls(csr.shape, csr.dtype, layout, arrays, n_pad=n_pad, width=k,
                   row_major=int(row_major),
                   **cls.coo_part.params(coo_nnz, layout, items, staged,
                                         csr.dtype.itemsize))

    def upload(self, device: Device) -> None:
        super().upload(device)
        self.coo_part.upload(self, device)

    def _ell_defines(self) -> dict[str, object]:
        """The ELL part's build options: one work-item per row, its layout."""
        return {"T": 1, **({"ROW_MAJOR": 1} if self.params.get("row_major") else {})}

    def prepare_kernels(self) -> None:
        self._ell = self.kernel(self.kernel_file, "ell_spmv", **self._ell_defines())
        self.coo_part.kernels(self)

    def _ell_args(self) -> tuple[object, ...]:
        p, b = self.params, self.buffers
        return (scalar(self.shape[0]), scalar(p["n_pad"]), scalar(p["width"]), b["col"],
                b["col"], b["val"])

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        ell = self.run(queue, self._ell, self.shape[0], *self._ell_args(), x, y, alpha, beta,
                       row0=row0)
        # the COO part adds to what the ELL part stored: beta = 1
        coo = self.coo_part.product(self, queue, x, y, alpha, self.dtype.type(1), row0)
        return [e for e in (ell, *coo) if e is not None]

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        ell_t = self.lazy_kernel("ell_t", self.kernel_file, "ell_spmv_t", atomics=True,
                                 **self._ell_defines())
        events = [self.scale_y_t(queue, y, beta),
                  self.run(queue, ell_t, self.shape[0], *self._ell_args(), x, y, alpha,
                           row0=row0),
                  self.coo_part.product_t(self, queue, x, y, alpha, row0)]
        return [e for e in events if e is not None]

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        p = self.params
        rows, cols, vals = ell_triplets(arrays["col"], arrays["val"], p["n_pad"], 1,
                                        p["width"] if p.get("row_major") else None)
        coo_rows, coo_cols, coo_vals = self.coo_part.triplets(self, arrays)
        return (np.concatenate([rows, coo_rows]), np.concatenate([cols, coo_cols]),
                np.concatenate([vals, coo_vals]))
