"""The small protocol every storage format implements, and the pieces they share.

A format converts a canonical CSR matrix into numpy arrays laid out for the device
(:meth:`Format.from_csr`), owns the device buffers made from them (:meth:`Format.upload`), enqueues
its kernels (:meth:`Format.launch` for A x, :meth:`Format.launch_t` for A^T x,
:meth:`Format.launch_matmat` for A X) and turns its arrays back into triplets
(:meth:`Format.to_coo`). Argument checks, alpha/beta, output allocation and host transfers live
once in :class:`clspmv.DeviceMatrix`.

**Formats as blocks of a larger matrix.** Every launch takes ``row0``: the block's rows are rows
``[row0, row0 + m)`` of the vector indexed by rows, which may be longer (y of :meth:`launch` and
:meth:`launch_matmat`, written there only, with alpha and beta applied to those rows only; x of
:meth:`launch_t`, read there only). A format given a column map (:meth:`Format.set_column_map`,
or ``convert(..., column_map=...)``) stores compact column numbers ``0..k-1`` and its column ``c``
is entry ``column_map[c]`` of the full-length vector indexed by columns (x of :meth:`launch`, y of
:meth:`launch_t`, which then writes and scales only those entries). The kernels get both through
one mechanism (``BLOCK_ARGS``, ``BLOCK_ROWS`` and ``COL`` in ``kernels_cl/common.h``):
:meth:`Format.run` passes ``row0`` and the map's buffer first to every kernel, and
:meth:`Format.kernel` builds every kernel with ``-DCOLMAP`` when the format has a map.

:class:`~clspmv.formats.row_kernels.RowKernels` is the common case: a format whose forward,
transpose and several-right-hand-sides kernels take the same matrix arguments (CSR, ELLPACK and
SELL families). The pieces the formats share live in modules of their own and are re-exported
here: :mod:`~clspmv.formats.kernels` (index type, several-right-hand-sides blocks, atomic
kernels), :mod:`~clspmv.formats.layout` (:class:`Layout`), :mod:`~clspmv.formats.conversion`
(numpy helpers of ``from_csr``, the padding rule).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .. import build
from ..device import Device
from ..errors import IndexOverflowError
from ..replay import record
from .conversion import (
    MAX_PADDING_RATIO,
    PADDING_FLOOR,
    UNROLL_FACTORS,
    check_column_map,
    check_padding,
    check_threads,
    check_unroll,
    csr_bytes,
    entry_index,
    entry_rows,
    position_in_row,
    round_up,
    row_lengths,
)
from .costs import FormatCosts
from .csr_store import CsrStore, check_sizes, device_buffers, read_back
from .kernel_choice import KernelChoice
from .kernels import (
    INDEX_DTYPE,
    INDEX_LIMIT,
    MATMAT_BLOCKS,
    Strides,
    atomic_add_kind,
    atomic_kernel,
    matmat_block,
    scalar,
)
from .layout import DEFAULT_WORK_GROUP, Layout

__all__ = [
    "DEFAULT_WORK_GROUP", "INDEX_DTYPE", "INDEX_LIMIT", "MATMAT_BLOCKS", "MAX_PADDING_RATIO",
    "PADDING_FLOOR", "UNROLL_FACTORS", "Format", "Layout", "Strides", "Triplets",
    "atomic_add_kind", "atomic_kernel", "check_column_map", "check_padding", "check_threads",
    "check_unroll", "csr_bytes", "entry_index", "entry_rows", "matmat_block", "position_in_row",
    "round_up", "row_lengths", "scalar",
]


Triplets = tuple[np.ndarray, np.ndarray, np.ndarray]


class Format(FormatCosts, KernelChoice, ABC):
    """A sparse matrix in one storage format: host arrays, then device buffers, then launches;
    what it costs the time model says through the hooks of
    :class:`~clspmv.formats.costs.FormatCosts`."""

    name: ClassVar[str]
    """Public name, one of ``clspmv.FORMATS``."""
    kernel_file: ClassVar[str]
    """The ``kernels_cl/`` file holding this format's kernels."""
    zeros_absent: ClassVar[bool] = False
    """True for a format that cannot tell a stored zero from a gap (DIA): explicit zeros are then
    treated as absent (skipped by the kernels, dropped by :meth:`to_coo`)."""
    stores_given_arrays: ClassVar[bool] = False
    """True for a format that stores a canonical CSR's ``indices`` and ``data`` as they are (the
    CSR kernels): :mod:`clspmv.early_upload` may then start copying them before the conversion."""
    thread_widths: ClassVar[tuple[int, ...]] = ()
    """The values of the ``threads_per_row`` parameter (work-items per row) where the format
    takes one (``csr-vector``, ``ellr-t``; at most the work-group size), else empty."""
    stream_float32: ClassVar[bool] = False
    """Whether its float32 kernels without atomics stream the matrix with the cache hint."""

    def __init__(self, shape: tuple[int, int], dtype: np.dtype, layout: Layout,
                 arrays: dict[str, np.ndarray], **params: int) -> None:
        self.shape = shape
        self.params = params
        """Layout parameters chosen for this matrix (threads per row, widths, sigma, ...)."""
        self.dtype = np.dtype(dtype)
        self.accumulate = self.dtype
        """Type of the kernels' sums (``ACC_T``): the value type unless
        :func:`clspmv.formats.convert` says otherwise (float64 for ``dtype="mixed"``)."""
        self.layout = layout
        self.owned_arrays = False
        """True when the host arrays are clspmv's own (``convert(..., owned=True)``)."""
        self.requested: dict[str, object] = {}
        """The parameters given to :func:`~clspmv.formats.convert` and :meth:`retuned`."""
        self.host: dict[str, np.ndarray] | None = arrays
        self.buffers: dict[str, cl.Buffer] = {}
        self._scratch: dict[str, int] = {}
        self.device: Device | None = None
        self._lazy_kernels: dict[str, cl.Kernel] = {}
        self.own_nbytes = int(sum(a.nbytes for a in arrays.values()))
        """Device bytes of the format's own arrays and buffers (its :attr:`store` aside)."""
        self._own_specs = {key: (a.dtype, a.size) for key, a in arrays.items()}
        self.store: CsrStore | None = None
        """The CSR arrays this format shares with other CSR kernels of the matrix
        (:mod:`~clspmv.formats.csr_store`), or None for a format holding only its own."""
        self.column_map: np.ndarray | None = None
        """Global column of each stored (compact) column, or None: see :meth:`set_column_map`."""
        self.check_index_range({key: a.size for key, a in arrays.items()})

    def check_index_range(self, sizes: dict[str, int]) -> None:
        """IndexOverflowError for an array (of ``sizes``, elements by name) beyond the kernels'
        32-bit indices."""
        for key, size in sizes.items():
            if size > INDEX_LIMIT - self.layout.simd_width * 32:
                raise IndexOverflowError(f"{self.name}: array {key!r} has {size} elements, "
                                         "beyond the 32-bit index type of the kernels")

    def add_arrays(self, arrays: dict[str, np.ndarray]) -> None:
        """Store ``arrays`` with the format's own (after ``__init__``, before the upload)."""
        assert self.host is not None
        self.check_index_range({key: a.size for key, a in arrays.items()})
        self.host.update(arrays)
        self._own_specs.update({key: (a.dtype, a.size) for key, a in arrays.items()})
        self.own_nbytes += int(sum(a.nbytes for a in arrays.values()))

    @property
    def _specs(self) -> dict[str, tuple[np.dtype, int]]:
        """(dtype, size) of every array the format reads: its :attr:`store`'s and its own."""
        return {**(self.store.specs if self.store is not None else {}), **self._own_specs}

    @property
    def nbytes(self) -> int:
        """Device bytes of the format: its own arrays and its :attr:`store` (count several
        formats of one matrix with :func:`~clspmv.formats.csr_store.total_nbytes`, which counts
        a shared store once)."""
        return self.own_nbytes + (self.store.nbytes if self.store is not None else 0)

    gpu_work_group: ClassVar[int | None] = None
    """Work-group size on GPUs when the caller names none (None: :data:`DEFAULT_WORK_GROUP`).
    Set from the kernel-parameter sweep (``clspmv bench --sweep``) on the H200."""

    @classmethod
    def default_work_group(cls, device_type: str | None) -> int:
        """The work-group size this format takes by default on a device of ``device_type``
        (``"gpu"``, ``"cpu"``, ...): :attr:`gpu_work_group` on GPUs where set, else
        :data:`DEFAULT_WORK_GROUP`."""
        if device_type == "gpu" and cls.gpu_work_group is not None:
            return cls.gpu_work_group
        return DEFAULT_WORK_GROUP

    @classmethod
    def preferred_work_group_size(cls, device: Device) -> int | None:
        """The work-group size this format launches with on ``device`` when the caller names none:
        :meth:`default_work_group` where the device allows it, else None (the device's maximum,
        :meth:`Layout.for_device`)."""
        wg = cls.default_work_group(device.type)
        return wg if wg <= device.max_work_group_size else None

    @classmethod
    def layout_for(cls, device: Device, work_group_size: int | None = None) -> Layout:
        """The layout this format uses on ``device``: ``work_group_size`` if given, else the
        format's preferred size, else the device default."""
        return Layout.for_device(device, work_group_size or cls.preferred_work_group_size(device))

    def set_column_map(self, column_map: np.ndarray) -> None:
        """Make this format a block with compact columns: its column ``c`` is entry
        ``column_map[c]`` of the vectors indexed by columns (x of the forward product, y of the
        transpose product). ``column_map`` holds ``shape[1]`` distinct non-negative indices (the
        caller checks them against the full vector's length); it is uploaded with the arrays and
        every kernel is built with ``-DCOLMAP``. Call before :meth:`upload`."""
        if self.host is None:
            raise RuntimeError("set the column map before the upload")
        self.column_map = check_column_map(column_map, self.shape[1])
        if self.store is not None:  # shared with the kernels switched to later
            self.store.add("colmap", self.column_map)
            return
        self.host["colmap"] = self.column_map
        self._own_specs["colmap"] = (INDEX_DTYPE, self.column_map.size)
        self.own_nbytes += self.column_map.nbytes

    # -- conversion (numpy only) ------------------------------------------------------------
    @classmethod
    @abstractmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, **params: object) -> Format:
        """Lay out a canonical CSR matrix (sorted, summed, int32 indices) for the device."""

    @abstractmethod
    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        """Row indices, column indices and values of the stored entries (any order)."""

    # -- device ---------------------------------------------------------------------------
    def compile(self, device: Device) -> None:
        """Build (or fetch from the program cache) the kernels for ``device``, summing in
        :attr:`accumulate`; :meth:`upload` does it too, so callers only need this to keep the
        compilation out of a timed upload."""
        self.device = device
        self.prepare_kernels()

    def upload(self, device: Device) -> None:
        """Put the host arrays into device buffers (once: copies, or the arrays themselves where
        :attr:`owned_arrays` and the device uses host memory in place,
        :func:`clspmv.host_buffers.matrix_buffer`) and build the kernels, summing in
        :attr:`accumulate` (set by :func:`clspmv.formats.convert`: float64 sums of float32
        values are ``dtype="mixed"``, which needs the device's fp64)."""
        if self.host is None:
            raise RuntimeError("format already uploaded")
        arrays = dict(self.host)
        if self.store is not None and self.store.host is not None:
            arrays.update(self.store.host)
        check_sizes(device, arrays, self.name, self.nbytes)
        self.compile(device)
        if self.store is not None:
            self.store.upload(device, self.owned_arrays, self.name)
        own = device_buffers(device, self.host, self.owned_arrays, self.name, self.nbytes)
        self.buffers = {**(self.store.buffers if self.store is not None else {}), **own}
        self.host = None

    def scratch_buffer(self, key: str, nbytes: int) -> None:
        """A device buffer of ``nbytes`` under ``key`` for what a product writes and reads
        again (partial sums, carries): each :meth:`retuned` copy gets its own, so that two of
        them run from two threads do not mix their values."""
        assert self.device is not None
        self.buffers[key] = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, nbytes)
        self._scratch[key] = nbytes

    def download(self) -> dict[str, np.ndarray]:
        """Read the device buffers back into numpy arrays."""
        assert self.device is not None
        own = read_back(self.device, self._own_specs, self.buffers)
        return {**self.store.download(), **own} if self.store is not None else own

    @abstractmethod
    def prepare_kernels(self) -> None:
        """Build (or fetch from the program cache) the kernel objects this format launches."""

    def kernel(self, file: str, name: str, atomics: bool = False, wg: int | None = None,
               **defines: object) -> cl.Kernel:
        """A kernel of this format's value type and work-group size (``wg``, default the
        layout's: kernels launched by :meth:`run` with the same ``wg``).

        ``atomics=True`` marks kernels that add to y atomically: on a device with
        ``cl_ext_float_atomics`` they are built with ``-DNATIVE_ATOMICS`` and the ``-cl-std`` the
        extension needs, so that ``atomic_add_value`` in ``common.h`` uses the native float add
        (where the compiler defines the feature macro); if that build fails the kernels fall back,
        with a warning, to the compare-and-swap loop every OpenCL 1.2 device can run.
        """
        assert self.device is not None
        wg = wg or self.layout.work_group_size
        if self.column_map is not None:
            defines["COLMAP"] = 1
        if atomics:
            return atomic_kernel(self.device, file, name, self.dtype, self.accumulate, WG=wg,
                                 **defines)
        return build.kernel(self.device, file, name, self.dtype, accumulate=self.accumulate,
                            stream_float32=self.stream_float32, WG=wg, **defines)

    def lazy_kernel(self, key: str, file: str, name: str, atomics: bool = False,
                    **defines: object) -> cl.Kernel:
        """:meth:`kernel`, built on first use and kept under ``key`` (transpose and
        several-right-hand-sides kernels cost nothing until they are needed)."""
        kern = self._lazy_kernels.get(key)
        if kern is None:
            kern = self._lazy_kernels[key] = self.kernel(file, name, atomics=atomics, **defines)
        return kern

    def scale_y_t(self, queue: cl.CommandQueue, y: cl.Buffer, beta: np.generic
                  ) -> cl.Event | None:
        """Enqueue y = beta * y over the entries a transpose product adds into: the ``shape[1]``
        first, or those of the column map); nothing for beta == 1."""
        if beta == 1:
            return None
        kern = self.lazy_kernel("scale_y_t", "util.cl", "scale_y_t", atomics=True)
        n = self.shape[1]
        return self.run(queue, kern, n, scalar(n), y, beta)

    def block_args(self, row0: int) -> tuple[np.int32, cl.Buffer]:
        """The arguments every kernel takes first (``BLOCK_ARGS`` in ``common.h``): the row
        offset and the column map's buffer (any buffer of the format when it has no map)."""
        cmap = self.buffers.get("colmap")
        if cmap is None:
            cmap = next(iter(self.buffers.values()))
        return scalar(row0), cmap

    def run(
        self,
        queue: cl.CommandQueue,
        kern: cl.Kernel,
        work_items: int,
        *args: object,
        wait_for: list[cl.Event] | None = None,
        wg: int | None = None,
        row0: int = 0,
    ) -> cl.Event | None:
        """Enqueue ``kern`` over ``work_items`` (rounded up to whole work-groups of ``wg``,
        default the layout's work-group size) with :meth:`block_args` of ``row0`` before
        ``args``: every kernel launch of every format goes through here (and is recorded for
        :mod:`clspmv.replay` where a product is being recorded)."""
        if work_items <= 0:
            return None
        wg = wg or self.layout.work_group_size
        total = -(-work_items // wg) * wg
        if total > INDEX_LIMIT:
            raise IndexOverflowError(
                f"{self.name}: {total} work-items exceed the 32-bit index range of the kernels"
            )
        full = (*self.block_args(row0), *args)
        record(kern, (total,), (wg,), full, wait_for)
        return kern(queue, (total,), (wg,), *full, wait_for=wait_for)

    @abstractmethod
    def launch(
        self,
        queue: cl.CommandQueue,
        x: cl.Buffer | None,
        y: cl.Buffer,
        alpha: np.generic,
        beta: np.generic,
        row0: int = 0,
    ) -> list[cl.Event]:
        """Enqueue y[row0 : row0 + m] = alpha * A x + beta * y[row0 : row0 + m]; returns the
        events of the kernels enqueued."""

    forward_atomics: ClassVar[bool] = False
    """Whether :meth:`launch` adds partial sums to y atomically (no format does now)."""

    forward_roundings: ClassVar[int] = 1
    """Roundings of a row's sum, or part of it, to the value type in :meth:`launch`: 1, but 2 in
    ``hyb`` (its ELL part stores y, the COO part adds to it); each costs ``dtype="mixed"`` up
    to half an ulp of the row's magnitude."""

    transpose_atomics: ClassVar[bool] = True
    """Whether :meth:`launch_t` adds to y atomically (float64 then needs 64-bit integer atomics)."""

    @abstractmethod
    def launch_t(
        self,
        queue: cl.CommandQueue,
        x: cl.Buffer | None,
        y: cl.Buffer,
        alpha: np.generic,
        beta: np.generic,
        row0: int = 0,
    ) -> list[cl.Event]:
        """Enqueue y = alpha * A^T x[row0 : row0 + m] + beta * y (y: shape[1] entries, or those
        of the column map) without forming A^T; returns the events of the kernels enqueued."""

    has_matmat: ClassVar[bool] = False
    """Whether :meth:`launch_matmat` exists (else DeviceMatrix.matmat does k products)."""

    def launch_matmat(self, queue: cl.CommandQueue, X: cl.Buffer, Y: cl.Buffer,
                      strides: Strides, alpha: np.generic, beta: np.generic, row0: int = 0
                      ) -> list[cl.Event]:
        """Enqueue Y = alpha * A X + beta * Y for X of ``strides.k`` columns, on rows
        ``row0 .. row0 + m - 1`` of Y."""
        raise NotImplementedError(f"format {self.name!r} has no several-right-hand-sides kernel")

    def __getstate__(self) -> None:  # buffers cannot be pickled
        raise TypeError(f"{type(self).__name__} holds device buffers and cannot be pickled")
