"""The common case of a format: one kernel family for A x, A^T x and A X taking the same matrix
arguments (the CSR, ELLPACK and SELL families)."""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar

import pyopencl as cl

from .base import Format
from .kernels import matmat_block, scalar


class RowKernels(Format):
    """A format with a kernel family ``{family}_spmv`` (A x), ``{family}_spmv_t`` (A^T x by atomic
    scatter) and ``{family}_matmat`` (A X, KB columns per pass) in :attr:`kernel_file`, all taking
    the matrix arguments of :meth:`matrix_args` first and specialised by :meth:`defines`."""

    family: ClassVar[str]
    has_matmat = True

    @abstractmethod
    def defines(self) -> dict[str, object]:
        """Build definitions shared by the family's kernels (T, ROW_LENGTHS, C, ...)."""

    @abstractmethod
    def matrix_args(self) -> tuple[int, tuple[object, ...]]:
        """(work-items to launch, the kernels' leading matrix arguments)."""

    def row_loop_defines(self) -> dict[str, object]:
        """T (work-items per row) and, above 1, UNROLL: the definitions of the row loops of the
        CSR and ELLPACK kernels, which the families' :meth:`defines` extend."""
        defines: dict[str, object] = {"T": self.params["threads_per_row"]}
        if self.params.get("unroll", 1) > 1:
            defines["UNROLL"] = self.params["unroll"]
        return defines

    def forward_defines(self) -> dict[str, object]:
        """Build definitions of the forward kernel: :meth:`defines`."""
        return self.defines()

    def forward_args(self) -> tuple[object, ...]:
        """Arguments of the forward kernel after alpha and beta: none."""
        return ()

    def forward_kernel(self, items: int) -> tuple[str, int, int | None]:
        """The forward kernel's name, its work-items for :meth:`matrix_args`' ``items`` and its
        work-group size (None: the layout's): ``{family}_spmv`` over those items."""
        return f"{self.family}_spmv", items, None

    def prepare_kernels(self) -> None:
        name, _, wg = self.forward_kernel(0)
        self._kernel = self.kernel(self.kernel_file, name, wg=wg, **self.forward_defines())

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        items, args = self.matrix_args()
        _, items, wg = self.forward_kernel(items)
        ev = self.run(queue, self._kernel, items, *args, x, y, alpha, beta,
                      *self.forward_args(), wg=wg, row0=row0)
        return [ev] if ev else []

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        kern = self.lazy_kernel("t", self.kernel_file, f"{self.family}_spmv_t", atomics=True,
                                **self.defines())
        items, args = self.matrix_args()
        events = [self.scale_y_t(queue, y, beta),
                  self.run(queue, kern, items, *args, x, y, alpha, row0=row0)]
        return [e for e in events if e is not None]

    def launch_matmat(self, queue, X, Y, strides, alpha, beta, row0=0) -> list[cl.Event]:
        assert self.device is not None
        defines = self.defines()
        kb = matmat_block(strides.k, int(defines.get("T", 1)), self.layout.work_group_size,
                          self.accumulate.itemsize, self.device.local_memory)
        kern = self.lazy_kernel(f"matmat{kb}", self.kernel_file, f"{self.family}_matmat",
                                KB=kb, **defines)
        items, args = self.matrix_args()
        x_row, x_col, y_row, y_col = strides.args()
        ev = self.run(queue, kern, items, *args, scalar(strides.k), X, x_row, x_col, Y, y_row,
                      y_col, alpha, beta, row0=row0)
        return [ev] if ev else []
