"""DIA: one padded array per occupied diagonal (``spmv-model-autoselect.txt``).

A value stored on a diagonal cannot be told apart from a gap in that diagonal, so DIA treats
explicit zeros as absent: the kernel skips zero values (an explicit zero times an infinite x gives
no NaN here, unlike CSR), and :meth:`DeviceMatrix.to_scipy` returns no explicit zeros.

``group_runs`` (default: on where the layout runs work-items in lockstep, i.e. GPUs) is the
kernels' ``GROUP_RUNS``: each work-group loops over the run of diagonals that crosses its rows
only (found by binary search in the ascending offsets) instead of over all of them; a matrix
whose diagonals wrap around (offsets d and d - n) then reads half as many.

As a block with a column map the diagonals are those of the compact numbering (column ``c`` of
the block, entry ``column_map[c]`` of x): the kernels handle it like every format, but a map that
scatters the columns leaves few full diagonals, so such a block pads more (and is refused sooner).
"""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Format,
    Layout,
    Triplets,
    check_flag,
    check_padding,
    entry_diagonals,
    occupied_diagonals,
    round_up,
    scalar,
)


class Dia(Format):
    """Diagonal storage; refused (UnsuitableFormatError) when diagonals would be mostly padding."""

    name = "dia"
    kernel_file = "dia.cl"
    transpose_atomics = False  # the transpose kernel gathers along the diagonals
    zeros_absent = True
    pads = True

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, group_runs: bool | None = None
                 ) -> Dia:
        """``group_runs``: True or False, or None for on where ``layout`` is lockstep."""
        group_runs = (layout.lockstep if group_runs is None
                      else check_flag("group_runs", group_runs))
        m, n = csr.shape
        offsets = occupied_diagonals(csr)  # ascending: the kernels rely on it
        n_pad = round_up(m, layout.simd_width)
        check_padding(cls.name, offsets.size * n_pad * csr.dtype.itemsize + offsets.size * 4, csr)
        # entry (r, c) on diagonal d = c - r + (m - 1) goes to rank(d) * n_pad + r, that is to
        # start[d] + c with start[d] = rank(d) * n_pad - (d - (m - 1))
        start = np.zeros(max(m + n - 1, 0), np.int64)
        start[offsets + (m - 1)] = np.arange(offsets.size, dtype=np.int64) * n_pad
        start -= np.arange(1 - m, n, dtype=np.int64)
        val = np.zeros(offsets.size * n_pad, csr.dtype)
        for first, stop, diagonal in entry_diagonals(csr):
            where = start[diagonal]
            where += csr.indices[first:stop]
            val[where] = csr.data[first:stop]
        arrays = {"offsets": offsets.astype(INDEX_DTYPE), "val": val}
        return cls(csr.shape, csr.dtype, layout, arrays, n_pad=n_pad, n_diags=int(offsets.size),
                   group_runs=int(group_runs))

    def defines(self) -> dict[str, object]:
        return {"GROUP_RUNS": 1} if self.params.get("group_runs") else {}

    def prepare_kernels(self) -> None:
        self._kernel = self.kernel(self.kernel_file, "dia_spmv", **self.defines())

    def _args(self) -> tuple[object, ...]:
        p, b = self.params, self.buffers
        m, n = self.shape
        return (scalar(m), scalar(n), scalar(p["n_pad"]), scalar(p["n_diags"]), b["offsets"],
                b["val"])

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        ev = self.run(queue, self._kernel, self.shape[0], *self._args(), x, y, alpha, beta,
                      row0=row0)
        return [ev] if ev else []

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        kern = self.lazy_kernel("t", self.kernel_file, "dia_spmv_t", **self.defines())
        ev = self.run(queue, kern, self.shape[1], *self._args(), x, y, alpha, beta, row0=row0)
        return [ev] if ev else []

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        n_pad = self.params["n_pad"]
        where = np.flatnonzero(arrays["val"])
        rows = where % n_pad
        cols = rows + arrays["offsets"][where // n_pad].astype(np.int64)
        return rows, cols, arrays["val"][where]
