"""CSR layouts: one work-item per row, T work-items per row, and the half-warp aligned variant.

Every CSR format takes ``unroll`` (1, 2, 4 or 8; default 1): entries of a row per iteration of
the forward product's loop (the kernels' ``UNROLL``). It chooses the kernel only, as does
``threads_per_row`` of ``csr-vector``: :meth:`~clspmv.formats.base.Format.retuned` changes them
on the uploaded arrays.

``csr-aligned`` is the SpMV4GPU layout of the ELLPACK-R paper (``ellpack-r.txt``, section 3):
every row starts at a multiple of 16 and 16 work-items (a half warp) share it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Layout,
    Triplets,
    check_threads,
    check_unroll,
    row_lengths,
    scalar,
)
from .costs import RowShape, csr_bytes_read
from .long_rows import AUTO, LongRowSplit, split_long_rows
from .row_kernels import RowKernels

if TYPE_CHECKING:
    from ..model.features import Features

VECTOR_WIDTHS = (2, 4, 8, 16, 32)
ALIGNMENT = 16


def threads_for_mean_length(mean: float, choices: tuple[int, ...] = VECTOR_WIDTHS) -> int:
    """The smallest choice that is at least the mean row length (the largest if none is)."""
    return next((t for t in choices if t >= mean), choices[-1])


def csr_arrays(csr: sp.csr_matrix) -> dict[str, np.ndarray]:
    """The plain CSR arrays ``row_ptr``, ``col``, ``val`` in the kernels' index type."""
    return {
        "row_ptr": csr.indptr.astype(INDEX_DTYPE),
        "col": csr.indices.astype(INDEX_DTYPE),
        "val": csr.data,
    }


def mean_row_threads(csr: sp.csr_matrix) -> int:
    """Work-items per row for the ``csr_*`` kernels from the mean row length (csr-vector's
    default)."""
    mean = csr.nnz / csr.shape[0] if csr.shape[0] else 0.0
    return threads_for_mean_length(mean)


class CsrFamily(RowKernels):
    """The CSR family: arrays ``row_ptr``, ``col``, ``val`` and the ``csr_*`` kernels with T
    lanes per row; the base of every format storing the plain (or row-padded) CSR arrays."""

    kernel_file = "csr.cl"
    family = "csr"
    skip_padding = False
    kernel_options = ("unroll",)
    trial_family = "csr"
    conversion_kind = "copy"

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        return csr_bytes_read(f, f.slots_of(cls.name))

    def defines(self) -> dict[str, object]:
        defines = self.row_loop_defines()
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
    def _plain(cls, csr: sp.csr_matrix, layout: Layout, threads: int, unroll: int) -> CsrFamily:
        return cls(csr.shape, csr.dtype, layout, csr_arrays(csr), threads_per_row=threads,
                   unroll=check_unroll(unroll))


class CsrScalar(LongRowSplit, CsrFamily):
    """CSR with one work-item per row (rows beyond ``long_rows`` in a COO tail,
    :mod:`~clspmv.formats.long_rows`)."""

    name = "csr-scalar"
    gpu_work_group = 32
    """In the kernel-parameter sweep on the H200 (``reports/2026-11-22-h200-perf``, float64, six
    anchor matrices) one work-item per row ran 1.72x faster (geometric mean) in work-groups of 32
    than of 64 to 512, which were all alike."""

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, unroll: int = 1,
                 long_rows: int | str | None = AUTO) -> CsrScalar:
        main, tail = split_long_rows(csr, layout, long_rows)
        return cls._plain(main, layout, 1, unroll).attach_tail(tail)


class CsrVector(LongRowSplit, CsrFamily):
    """CSR with T work-items per row (T in 2..32, from the mean row length unless given; rows
    beyond ``long_rows`` in a COO tail)."""

    name = "csr-vector"
    thread_widths = VECTOR_WIDTHS
    kernel_options = ("unroll", "threads_per_row")

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        return threads_for_mean_length(f.mean_row, VECTOR_WIDTHS)

    @classmethod
    def from_csr(
        cls, csr: sp.csr_matrix, layout: Layout, threads_per_row: int | None = None,
        unroll: int = 1, long_rows: int | str | None = AUTO,
    ) -> CsrVector:
        main, tail = split_long_rows(csr, layout, long_rows)
        if threads_per_row is None:
            threads_per_row = mean_row_threads(main)
        threads_per_row = check_threads(threads_per_row, VECTOR_WIDTHS, layout)
        return cls._plain(main, layout, threads_per_row, unroll).attach_tail(tail)

    def check_params(self) -> None:
        super().check_params()
        check_threads(self.params["threads_per_row"], VECTOR_WIDTHS, self.layout)


class CsrAligned(LongRowSplit, CsrFamily):
    """SpMV4GPU: rows padded to multiples of 16 entries, a half warp (16 work-items) per row
    (rows beyond ``long_rows`` in a COO tail)."""

    name = "csr-aligned"
    skip_padding = True
    conversion_kind = "layout"
    padded = True

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        return shape.aligned_slots(ALIGNMENT)

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        return ALIGNMENT

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, unroll: int = 1,
                 long_rows: int | str | None = AUTO) -> CsrAligned:
        csr, tail = split_long_rows(csr, layout, long_rows)
        lengths = row_lengths(csr)
        runs = -(-lengths // ALIGNMENT)  # runs of ALIGNMENT slots per row
        row_ptr = np.zeros(csr.shape[0] + 1, np.int64)
        np.cumsum(runs * ALIGNMENT, out=row_ptr[1:])
        total = int(row_ptr[-1])
        # the entries fill each row's first slots in order: a mask of the filled slots, run by
        # run, places them with one sequential copy (no index per entry)
        run_first = np.repeat(row_ptr[:-1] // ALIGNMENT, runs)
        filled = np.repeat(lengths, runs) - ALIGNMENT * (np.arange(run_first.size) - run_first)
        mask = (np.arange(ALIGNMENT) < filled[:, None]).ravel()
        col = np.full(total, -1, INDEX_DTYPE)
        val = np.zeros(total, csr.dtype)
        col[mask] = csr.indices
        val[mask] = csr.data
        arrays = {"row_ptr": row_ptr.astype(INDEX_DTYPE), "col": col, "val": val}
        return cls(csr.shape, csr.dtype, layout, arrays,
                   threads_per_row=min(ALIGNMENT, layout.work_group_size),
                   unroll=check_unroll(unroll)).attach_tail(tail)

