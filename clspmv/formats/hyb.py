"""HYB: an ELL part of width K plus a COO part for the entries beyond K (``ellpack-r.txt``
section 3). K is the largest width that at least one third of the rows reach
(:func:`clspmv.stats.hyb_width`), so the ELL part holds at most three times the entries.

The product runs the ELL kernel (y = alpha * ELL part x + beta * y), then the COO part's
segmented reduction (:class:`~clspmv.formats.coo.CooPart`) with beta = 1, adding to what the
ELL part stored: no atomics. The transpose product adds both parts to y atomically."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from ..stats import hyb_width
from .base import (
    Format,
    Layout,
    Triplets,
    round_up,
    row_lengths,
    scalar,
)
from .coo import CooPart
from .ell import ell_arrays, ell_triplets, ell_where


class Hyb(Format):
    """ELL (column-major, width K) for the first K entries of each row, COO for the rest."""

    name = "hyb"
    kernel_file = "ell.cl"
    coo_part = CooPart("coo_")
    forward_roundings = 2  # the ELL part's sum is stored in y, then the COO part adds to it

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, width: int | None = None,
                 items: int | None = None, staged: bool | None = None) -> Hyb:
        lengths = row_lengths(csr)
        k = hyb_width(lengths) if width is None else int(width)
        if k < 0:
            raise ValueError(f"width must be >= 0, got {k}")
        n_pad = round_up(csr.shape[0], layout.simd_width)
        where = ell_where(csr, n_pad, 1)  # slot p of row r at p * n_pad + r
        if lengths.size == 0 or lengths.max() <= k:  # everything fits the ELL part
            arrays = ell_arrays(csr, n_pad, k, 1, where=where)
            none = np.zeros(0, np.int64)
            arrays.update(cls.coo_part.arrays(none, none, np.zeros(0, csr.dtype)))
            coo_nnz = 0
        else:
            in_ell = where < k * n_pad  # position in row below k
            arrays = ell_arrays(csr, n_pad, k, 1, keep=in_ell, where=where)
            rest = ~in_ell
            arrays.update(cls.coo_part.arrays(where[rest] % n_pad, csr.indices[rest],
                                              csr.data[rest]))
            coo_nnz = int(rest.sum())
        return cls(csr.shape, csr.dtype, layout, arrays, n_pad=n_pad, width=k,
                   **cls.coo_part.params(coo_nnz, layout, items, staged))

    def upload(self, device: Device) -> None:
        super().upload(device)
        self.coo_part.upload(self, device)

    def prepare_kernels(self) -> None:
        self._ell = self.kernel(self.kernel_file, "ell_spmv", T=1)
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
        ell_t = self.lazy_kernel("ell_t", self.kernel_file, "ell_spmv_t", atomics=True, T=1)
        events = [self.scale_y_t(queue, y, beta),
                  self.run(queue, ell_t, self.shape[0], *self._ell_args(), x, y, alpha,
                           row0=row0),
                  self.coo_part.product_t(self, queue, x, y, alpha, row0)]
        return [e for e in events if e is not None]

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        rows, cols, vals = ell_triplets(arrays["col"], arrays["val"], self.params["n_pad"], 1)
        coo_rows, coo_cols, coo_vals = self.coo_part.triplets(self, arrays)
        return (np.concatenate([rows, coo_rows]), np.concatenate([cols, coo_cols]),
                np.concatenate([vals, coo_vals]))
