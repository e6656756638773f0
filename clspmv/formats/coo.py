"""COO: row-sorted triplets. The product is two kernels: y = beta*y, then each work-item sums a
chunk of consecutive entries and adds each row's run to y atomically (``kernels_cl/coo.cl``).
The transpose product is the same pair with each entry added to y[col] instead."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .base import INDEX_DTYPE, Format, Layout, Triplets, entry_rows, scalar

MAX_CHUNK = 64


def chunk_size(nnz: int, layout: Layout) -> int:
    """Entries per work-item: enough work-items to fill the device, at most MAX_CHUNK each."""
    target_items = layout.compute_units * layout.work_group_size * 4
    return int(min(MAX_CHUNK, max(1, -(-nnz // target_items))))


class CooPart:
    """The accumulate kernels, shared by ``coo`` and the COO part of ``hyb``."""

    def __init__(self, fmt: Format) -> None:
        self.accumulate = fmt.kernel("coo.cl", "coo_accumulate", atomics=True)

    def accumulate_into(self, fmt: Format, queue, prefix: str, nnz: int, x, y, alpha,
                        transpose: bool = False, wait_for=None, row0: int = 0
                        ) -> cl.Event | None:
        """Enqueue y += alpha * (COO part) x, or alpha * (COO part)^T x with ``transpose``, over
        the buffers ``{prefix}row/col/val`` (``row0``: see :meth:`Format.launch`)."""
        b = fmt.buffers
        chunk = fmt.params[prefix + "chunk"]
        kern = (fmt.lazy_kernel("coo_t", "coo.cl", "coo_accumulate_t", atomics=True)
                if transpose else self.accumulate)
        return fmt.run(queue, kern, -(-nnz // chunk), scalar(nnz), scalar(chunk),
                       b[prefix + "row"], b[prefix + "col"], b[prefix + "val"], x, y, alpha,
                       wait_for=wait_for, row0=row0)


def coo_arrays(rows: np.ndarray, cols: np.ndarray, vals: np.ndarray, prefix: str = ""
               ) -> dict[str, np.ndarray]:
    """The three COO arrays under ``prefix``."""
    return {prefix + "row": rows.astype(INDEX_DTYPE), prefix + "col": cols.astype(INDEX_DTYPE),
            prefix + "val": vals}


class Coo(Format):
    """Coordinate format sorted by row; works on every matrix."""

    name = "coo"
    kernel_file = "coo.cl"
    forward_atomics = True

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout) -> Coo:
        arrays = coo_arrays(entry_rows(csr), csr.indices, csr.data)
        return cls(csr.shape, csr.dtype, layout, arrays, chunk=chunk_size(csr.nnz, layout),
                   nnz=csr.nnz)

    def prepare_kernels(self) -> None:
        self._coo = CooPart(self)

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        return self._launch(queue, x, y, alpha, beta, False, row0)

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        return self._launch(queue, x, y, alpha, beta, True, row0)

    def _launch(self, queue, x, y, alpha, beta, transpose: bool, row0: int) -> list[cl.Event]:
        scale = (self.scale_y_t(queue, y, beta) if transpose
                 else self.scale_y(queue, y, self.shape[0], beta, row0))
        events = [scale,
                  self._coo.accumulate_into(self, queue, "", self.params["nnz"], x, y, alpha,
                                            transpose, row0=row0)]
        return [e for e in events if e is not None]

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        nnz = self.params["nnz"]
        return arrays["row"][:nnz], arrays["col"][:nnz], arrays["val"][:nnz]
