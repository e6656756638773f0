"""CSR layouts: one work-item per row, T work-items per row, and the half-warp aligned variant.

``csr-aligned`` is the SpMV4GPU layout of the ELLPACK-R paper (``ellpack-r.txt``, section 3):
every row starts at a multiple of 16 and 16 work-items (a half warp) share it.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Layout,
    RowKernels,
    Triplets,
    entry_rows,
    position_in_row,
    row_lengths,
    scalar,
)

VECTOR_WIDTHS = (2, 4, 8, 16, 32)
ALIGNMENT = 16


def threads_for_mean_length(mean: float, choices: tuple[int, ...] = VECTOR_WIDTHS) -> int:
    """The smallest choice that is at least the mean row length (the largest if none is)."""
    return next((t for t in choices if t >= mean), choices[-1])


def csr_arrays(csr: sp.csr_matrix) -> dict[str, np.ndarray]:
    """The device arrays of plain CSR: ``row_ptr``, ``col`` (int32) and ``val``."""
    return {
        "row_ptr": csr.indptr.astype(INDEX_DTYPE),
        "col": csr.indices.astype(INDEX_DTYPE),
        "val": csr.data,
    }


class _CsrKernel(RowKernels):
    """CSR arrays ``row_ptr``, ``col``, ``val`` and the ``csr_*`` kernels with T lanes per row."""

    kernel_file = "csr.cl"
    family = "csr"
    skip_padding = False

    def defines(self) -> dict[str, object]:
        defines: dict[str, object] = {"T": self.params["threads_per_row"]}
        if self.skip_padding:
            defines["SKIP_PADDING"] = 1
        return defines

    def matrix_args(self) -> tuple[int, tuple[object, ...]]:
        b = self.buffers
        n = self.shape[0]
        return n * self.params["threads_per_row"], (scalar(n), b["row_ptr"], b["col"], b["val"])

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        lengths = np.diff(arrays["row_ptr"])
        rows = np.repeat(np.arange(self.shape[0]), lengths)
        keep = arrays["col"] >= 0
        return rows[keep], arrays["col"][keep], arrays["val"][keep]

    @classmethod
    def _plain(cls, csr: sp.csr_matrix, layout: Layout, threads: int) -> _CsrKernel:
        return cls(csr.shape, csr.dtype, layout, csr_arrays(csr), threads_per_row=threads)


class CsrScalar(_CsrKernel):
    """CSR with one work-item per row."""

    name = "csr-scalar"

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout) -> CsrScalar:
        return cls._plain(csr, layout, 1)


class CsrVector(_CsrKernel):
    """CSR with T work-items per row (T in 2..32, from the mean row length unless given)."""

    name = "csr-vector"

    @classmethod
    def from_csr(
        cls, csr: sp.csr_matrix, layout: Layout, threads_per_row: int | None = None
    ) -> CsrVector:
        if threads_per_row is None:
            mean = csr.nnz / csr.shape[0] if csr.shape[0] else 0.0
            threads_per_row = threads_for_mean_length(mean)
        if threads_per_row not in VECTOR_WIDTHS or threads_per_row > layout.work_group_size:
            raise ValueError(
                f"threads_per_row must be one of {VECTOR_WIDTHS} and at most the work-group "
                f"size {layout.work_group_size}, got {threads_per_row}"
            )
        return cls._plain(csr, layout, threads_per_row)


class CsrAligned(_CsrKernel):
    """SpMV4GPU: rows padded to multiples of 16 entries, a half warp (16 work-items) per row."""

    name = "csr-aligned"
    skip_padding = True

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout) -> CsrAligned:
        padded = -(-row_lengths(csr) // ALIGNMENT) * ALIGNMENT
        row_ptr = np.zeros(csr.shape[0] + 1, np.int64)
        np.cumsum(padded, out=row_ptr[1:])
        total = int(row_ptr[-1])
        col = np.full(total, -1, INDEX_DTYPE)
        val = np.zeros(total, csr.dtype)
        where = row_ptr[entry_rows(csr)] + position_in_row(csr)
        col[where] = csr.indices
        val[where] = csr.data
        arrays = {"row_ptr": row_ptr.astype(INDEX_DTYPE), "col": col, "val": val}
        return cls(csr.shape, csr.dtype, layout, arrays,
                   threads_per_row=min(ALIGNMENT, layout.work_group_size))

