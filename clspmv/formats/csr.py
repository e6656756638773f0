"""CSR layouts: one work-item per row, T work-items per row, and the half-warp aligned variant,
and :class:`CsrFamily`, the base of every CSR kernel.

Every CSR kernel reads the arrays of one :class:`~clspmv.formats.csr_store.CsrStore` (``row_ptr``,
``col``, ``val``, stored once per matrix) plus a little metadata of its own, built by its
``from_store`` from the row pointers alone: :meth:`CsrFamily.switched` moves an uploaded matrix to
another CSR kernel without converting or uploading the arrays again.

Every CSR format takes ``unroll`` (1, 2, 4 or 8; default 1): entries of a row per iteration of
the forward product's loop (the kernels' ``UNROLL``). It chooses the kernel only, as does
``threads_per_row`` of ``csr-vector``: :meth:`~clspmv.formats.base.Format.retuned` changes them
on the uploaded arrays. Rows beyond ``long_rows`` (:mod:`~clspmv.formats.long_rows`) are summed
by chunks over the same arrays (:mod:`~clspmv.formats.csr_chunks`).

``csr-aligned`` is the SpMV4GPU layout of the ELLPACK-R paper (``ellpack-r.txt``, section 3):
every row starts at a multiple of 16 and 16 work-items (a half warp) share it. Where every row's
length is a multiple of 16 these are the CSR arrays themselves, shared; else it stores its
padded arrays alone.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Format,
    Layout,
    Triplets,
    check_threads,
    check_unroll,
    scalar,
)
from .costs import RowShape, csr_bytes_read
from .csr_chunks import LongRowChunks
from .csr_store import CsrStore
from .long_rows import AUTO
from .row_kernels import RowKernels

if TYPE_CHECKING:
    from ..model.features import Features

VECTOR_WIDTHS = (2, 4, 8, 16, 32)
ALIGNMENT = 16


def threads_for_mean_length(mean: float, choices: tuple[int, ...] = VECTOR_WIDTHS) -> int:
    """The smallest choice that is at least the mean row length (the largest if none is)."""
    return next((t for t in choices if t >= mean), choices[-1])


def mean_row_threads(entries: int, rows: int) -> int:
    """Work-items per row for the ``csr_*`` kernels from the mean row length (csr-vector's
    default)."""
    return threads_for_mean_length(entries / rows if rows else 0.0)


class CsrFamily(RowKernels):
    """The CSR family: the arrays ``row_ptr``, ``col``, ``val`` of a
    :class:`~clspmv.formats.csr_store.CsrStore` and the ``csr_*`` kernels with T lanes per row;
    the base of every CSR kernel, each made from a store by its ``from_store`` (which takes the
    format's parameters)."""

    kernel_file = "csr.cl"
    family = "csr"
    skip_padding = False
    kernel_options = ("unroll",)
    trial_family = "csr"
    conversion_kind = "copy"
    stores_given_arrays = True

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        return csr_bytes_read(f, f.slots_of(cls.name))

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, **params: object) -> CsrFamily:
        return cls.from_store(CsrStore.of(csr), layout, **params)

    @classmethod
    def from_store(cls, store: CsrStore, layout: Layout, **params: object) -> CsrFamily:
        """This kernel on the CSR arrays of ``store`` (uploaded or not): its metadata only,
        from ``store.row_ptr``."""
        raise NotImplementedError(f"format {cls.name!r} has no from_store")

    @classmethod
    def parameter_names(cls) -> tuple[str, ...]:
        return tuple(inspect.signature(cls.from_store).parameters)[2:]

    @classmethod
    def on_store(cls, store: CsrStore, layout: Layout, arrays: dict[str, np.ndarray],
                 **params: int) -> CsrFamily:
        """A format of this class reading ``store``, with its own ``arrays``."""
        fmt = cls(store.shape, store.dtype, layout, arrays, **params)
        fmt.check_index_range({key: size for key, (_, size) in store.specs.items()})
        fmt.store = store
        return fmt

    def switched(self, target: type[Format], work_group_size: int | None = None,
                 **params: object) -> Format:
        """This matrix in the CSR kernel ``target`` with ``params`` (its own parameters, its
        defaults for the others) and ``work_group_size`` (None: ``target``'s default on the
        device), sharing this one's uploaded CSR arrays: only ``target``'s metadata is built
        and uploaded. Refusals: :func:`on_shared_store`."""
        if self.device is None or self.store is None:
            raise RuntimeError("switch an uploaded format")
        new = on_shared_store(target, self.store, target.layout_for(self.device, work_group_size),
                              self.name, **params)
        new.requested = dict(params)
        new.accumulate = self.accumulate
        new.owned_arrays = self.owned_arrays
        new.column_map = self.column_map
        new.upload(self.device)
        return new

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


def on_shared_store(target: type[Format], store: CsrStore, layout: Layout, source: str,
                    **params: object) -> CsrFamily:
    """The CSR kernel ``target`` on the arrays of ``store`` (stored for ``source``, a format's
    name), with ``params``: its metadata only. ValueError for a ``target`` outside the CSR
    family, a store that is not the plain CSR arrays (a padded ``csr-aligned``'s), or a
    ``target`` needing other arrays (``csr-aligned`` where rows need padding); TypeError for a
    parameter ``target`` lacks."""
    name = getattr(target, "name", target)
    if not (isinstance(target, type) and issubclass(target, CsrFamily)):
        raise ValueError(f"format {name!r} does not read the CSR arrays that {source!r} stores "
                         "(only the CSR kernels share them): convert the matrix again with "
                         f"DeviceMatrix.from_scipy(..., format={name!r})")
    if not store.plain:
        raise ValueError(f"this {source!r} matrix stores its rows padded to multiples of "
                         f"{ALIGNMENT}, not the CSR arrays the other kernels read: convert the "
                         f"matrix again with DeviceMatrix.from_scipy(..., format={name!r})")
    names = target.parameter_names()
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise TypeError(f"format {name!r} got an unexpected keyword argument "
                        f"{', '.join(map(repr, unknown))}; its parameters: "
                        f"{', '.join(names) or 'none'}")
    return target.from_store(store, layout, **params)


class CsrRows(LongRowChunks, CsrFamily):
    """The CSR kernels of ``csr.cl`` (T lanes per row), long rows left to chunks."""

    def forward_defines(self) -> dict[str, object]:
        return {**super().forward_defines(), **self.long_row_defines()}

    def forward_args(self) -> tuple[object, ...]:
        return self.long_row_args()

    def prepare_kernels(self) -> None:
        super().prepare_kernels()
        self.prepare_long_rows()

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        return [*super().launch(queue, x, y, alpha, beta, row0),
                *self.long_row_product(queue, x, y, alpha, beta, row0)]

    @classmethod
    def _plain(cls, store: CsrStore, layout: Layout, threads: int, unroll: int,
               long_rows: object) -> CsrRows:
        fmt = cls.on_store(store, layout, {}, threads_per_row=threads,
                           unroll=check_unroll(unroll))
        fmt.attach_long_rows(store, long_rows)
        return fmt


class CsrScalar(CsrRows):
    """CSR with one work-item per row (rows beyond ``long_rows`` summed in chunks,
    :mod:`~clspmv.formats.csr_chunks`)."""

    name = "csr-scalar"
    probed_in = ("reference", "quick cpu", "quick gpu")  # a row per work-item: the plainest
    gpu_work_group = 32
    """In the kernel-parameter sweep on the H200 (``reports/2026-11-22-h200-perf``, float64, six
    anchor matrices) one work-item per row ran 1.72x faster (geometric mean) in work-groups of 32
    than of 64 to 512, which were all alike."""

    @classmethod
    def from_store(cls, store: CsrStore, layout: Layout, unroll: int = 1,
                   long_rows: int | str | None = AUTO) -> CsrScalar:
        return cls._plain(store, layout, 1, unroll, long_rows)


class CsrVector(CsrRows):
    """CSR with T work-items per row (T in 2..32, from the mean length of the rows that are not
    long unless given; rows beyond ``long_rows`` summed in chunks)."""

    name = "csr-vector"
    probed_in = ("quick gpu",)  # the usual fastest CSR kernel on GPUs
    thread_widths = VECTOR_WIDTHS
    kernel_options = ("unroll", "threads_per_row")

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        return threads_for_mean_length(f.mean_row, VECTOR_WIDTHS)

    @classmethod
    def from_store(
        cls, store: CsrStore, layout: Layout, threads_per_row: int | None = None,
        unroll: int = 1, long_rows: int | str | None = AUTO,
    ) -> CsrVector:
        fmt = cls._plain(store, layout, 1, unroll, long_rows)
        if threads_per_row is None:  # from the entries of the rows that are not long
            threads_per_row = min(mean_row_threads(store.nnz - fmt.tail_nnz, store.shape[0]),
                                  layout.work_group_size)
        fmt.params["threads_per_row"] = check_threads(threads_per_row, VECTOR_WIDTHS, layout)
        return fmt

    def check_params(self) -> None:
        super().check_params()
        check_threads(self.params["threads_per_row"], VECTOR_WIDTHS, self.layout)


class CsrAligned(CsrRows):
    """SpMV4GPU: rows padded to multiples of 16 entries, a half warp (16 work-items) per row
    (rows beyond ``long_rows`` rounded up to a multiple of 16 summed in chunks). Shares the CSR
    arrays where no row needs padding; else stores its padded arrays alone."""

    name = "csr-aligned"
    stores_given_arrays = False  # its rows are padded unless every length is a multiple of 16
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
    def from_store(cls, store: CsrStore, layout: Layout, unroll: int = 1,
                   long_rows: int | str | None = AUTO) -> CsrAligned:
        lengths = store.lengths()
        padded = store
        if np.any(lengths % ALIGNMENT):
            if store.host is None or not store.plain:
                raise ValueError(
                    f"csr-aligned pads rows to multiples of {ALIGNMENT} entries and this "
                    "matrix's rows need padding, which the shared CSR arrays lack: convert the "
                    "matrix again with DeviceMatrix.from_scipy(..., format='csr-aligned')")
            padded = padded_store(store, lengths)
        threads = min(ALIGNMENT, layout.work_group_size)
        fmt = cls.on_store(padded, layout, {}, threads_per_row=threads,
                           unroll=check_unroll(unroll))
        fmt.attach_long_rows(padded, long_rows, lengths, ALIGNMENT)
        return fmt


def padded_store(store: CsrStore, lengths: np.ndarray) -> CsrStore:
    """csr-aligned's own store: the rows of ``store`` (not uploaded) padded to multiples of
    :data:`ALIGNMENT` slots (column -1, value 0)."""
    assert store.host is not None
    runs = -(-lengths // ALIGNMENT)  # runs of ALIGNMENT slots per row
    row_ptr = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(runs * ALIGNMENT, out=row_ptr[1:])
    total = int(row_ptr[-1])
    # the entries fill each row's first slots in order: a mask of the filled slots, run by
    # run, places them with one sequential copy (no index per entry)
    run_first = np.repeat(row_ptr[:-1] // ALIGNMENT, runs)
    filled = np.repeat(lengths, runs) - ALIGNMENT * (np.arange(run_first.size) - run_first)
    mask = (np.arange(ALIGNMENT) < filled[:, None]).ravel()
    col = np.full(total, -1, INDEX_DTYPE)
    val = np.zeros(total, store.dtype)
    col[mask] = store.host["col"]
    val[mask] = store.host["val"]
    return CsrStore(store.shape, row_ptr.astype(INDEX_DTYPE), col, val, plain=False)
