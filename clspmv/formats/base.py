"""The small protocol every storage format implements, and the pieces they share.

A format converts a canonical CSR matrix into numpy arrays laid out for the device
(:meth:`Format.from_csr`, numpy only), owns the device buffers made from them
(:meth:`Format.upload`), enqueues its kernels (:meth:`Format.launch` for A x,
:meth:`Format.launch_t` for A^T x, :meth:`Format.launch_matmat` for A X) and can turn its arrays
back into triplets (:meth:`Format.to_coo`). Argument checks, alpha/beta, output allocation and host
transfers live once in :class:`clspmv.DeviceMatrix`.

:class:`RowKernels` is the common case: a format whose forward, transpose and
several-right-hand-sides kernels take the same matrix arguments (CSR, ELLPACK and SELL families).
"""

from __future__ import annotations

import threading
import warnings
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .. import build
from ..device import Device
from ..errors import BuildError, DeviceError, IndexOverflowError, UnsuitableFormatError

INDEX_DTYPE = np.dtype(np.int32)
INDEX_LIMIT = 2**31 - 1
"""Largest value the kernels' 32-bit index type holds."""

MAX_PADDING_RATIO = 10.0
"""A padded layout larger than this many times CSR's bytes (and than PADDING_FLOOR) is refused."""
PADDING_FLOOR = 16 << 20

UNROLL_FACTORS = (1, 2, 4, 8)
"""Values of the ``unroll`` parameter (the kernels' ``UNROLL``): entries of a row handled per
iteration of the forward product's inner loop, each into a partial sum of its own."""

DEFAULT_WORK_GROUP = 256
"""Work-group size of every format unless the caller, the format's ``gpu_work_group`` on a GPU,
or a smaller device maximum says otherwise."""

MATMAT_BLOCKS = (2, 4, 8, 16)
"""Column-block widths KB the several-right-hand-sides kernels are built for."""


def matmat_block(k: int, threads_per_row: int, work_group_size: int, itemsize: int,
                 local_memory: int) -> int:
    """KB for ``k`` columns: the smallest block holding all of them (at most the largest), halved
    while the lane reduction's ``KB * WG`` values would not fit the device's local memory."""
    kb = next((b for b in MATMAT_BLOCKS if b >= k), MATMAT_BLOCKS[-1])
    if threads_per_row > 1:
        while kb > MATMAT_BLOCKS[0] and kb * work_group_size * itemsize > local_memory:
            kb //= 2
    return kb


@dataclass(frozen=True)
class Strides:
    """Element strides of the n x k input X and the m x k output Y of a several-right-hand-sides
    product: element (i, j) of X is at ``i * x_row + j * x_col``."""

    k: int
    x_row: int
    x_col: int
    y_row: int
    y_col: int

    def args(self) -> tuple[np.int32, ...]:
        return tuple(np.int32(v) for v in (self.x_row, self.x_col, self.y_row, self.y_col))


_native_atomics_refused: set[tuple[Device, str]] = set()
_native_atomics_lock = threading.Lock()


def atomic_kernel(device: Device, file: str, name: str, dtype: np.dtype,
                  accumulate: np.dtype | None = None, **defines: object) -> cl.Kernel:
    """A kernel that adds to y with ``atomic_add_value`` (``common.h``): on a device with
    ``cl_ext_float_atomics`` built with ``-DNATIVE_ATOMICS`` and the ``-cl-std`` the extension
    needs (the native add is then used where the compiler defines its feature macro); if that
    build fails, built again without them, with a warning (the compare-and-swap loop). The
    atomic add is of the value type, also when ``accumulate`` (the type of the work-items' own
    sums, see :func:`clspmv.build.options_for`) is wider."""
    std = device.float_atomics_std
    key = (device, file)
    if std is not None and key not in _native_atomics_refused:
        try:
            return build.kernel(device, file, name, dtype, cl_std=std, accumulate=accumulate,
                                NATIVE_ATOMICS=1, **defines)
        except BuildError as err:
            with _native_atomics_lock:
                _native_atomics_refused.add(key)
            warnings.warn(f"{file} does not build with native float atomics on {device.name} "
                          f"({str(err).splitlines()[0]}); using compare-and-swap atomics",
                          RuntimeWarning, stacklevel=3)
    return build.kernel(device, file, name, dtype, accumulate=accumulate, **defines)


def atomic_add_kind(device: Device, dtype: np.dtype) -> str:
    """``"native"`` when the atomic kernels for ``dtype`` on ``device`` use the float atomic add
    of ``cl_ext_float_atomics``, else ``"compare-and-swap"`` (asks the compiler, through the same
    build options as the kernels)."""
    wg = min(256, device.max_work_group_size)
    kern = atomic_kernel(device, "util.cl", "atomic_add_kind", np.dtype(dtype), WG=wg)
    out = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, 4)
    kern(device.queue, (wg,), (wg,), out)
    flag = np.zeros(1, np.int32)
    cl.enqueue_copy(device.queue, flag, out)
    return "native" if flag[0] else "compare-and-swap"


@dataclass(frozen=True)
class Layout:
    """Device facts that shape a layout: SIMD width for padding, work-group size for launches,
    local memory (bytes per work-group) for the formats that stage entries there."""

    simd_width: int
    work_group_size: int
    compute_units: int
    local_memory: int

    @classmethod
    def for_device(cls, device: Device, work_group_size: int | None = None) -> Layout:
        """The layout clspmv uses on ``device``: work-groups of ``work_group_size``, else of
        :data:`DEFAULT_WORK_GROUP` or the device's maximum if smaller."""
        wg = work_group_size or min(DEFAULT_WORK_GROUP, device.max_work_group_size)
        if wg < 1 or wg & (wg - 1) or wg > device.max_work_group_size:
            raise ValueError(
                f"work_group_size must be a power of two <= {device.max_work_group_size}, got {wg}"
            )
        return cls(device.simd_width, wg, device.compute_units, device.local_memory)


Triplets = tuple[np.ndarray, np.ndarray, np.ndarray]


class Format(ABC):
    """A sparse matrix in one storage format: host arrays, then device buffers, then launches."""

    name: ClassVar[str]
    """Public name, one of ``clspmv.FORMATS``."""
    kernel_file: ClassVar[str]
    """The ``kernels_cl/`` file holding this format's kernels."""
    zeros_absent: ClassVar[bool] = False
    """True for a format that cannot tell a stored zero from a gap (DIA): explicit zeros are then
    treated as absent (skipped by the kernels, dropped by :meth:`to_coo`)."""
    pads: ClassVar[bool] = False
    """True for a format that pads to the longest row or to whole diagonals (ELLPACK family,
    DIA): it refuses a matrix (:class:`UnsuitableFormatError`, :func:`check_padding`) whose padded
    layout would exceed :data:`MAX_PADDING_RATIO` times CSR's bytes (and :data:`PADDING_FLOOR`)."""

    def __init__(
        self,
        shape: tuple[int, int],
        dtype: np.dtype,
        layout: Layout,
        arrays: dict[str, np.ndarray],
        **params: int,
    ) -> None:
        self.shape = shape
        self.params = params
        """Layout parameters chosen for this matrix (threads per row, widths, sigma, ...)."""
        self.dtype = np.dtype(dtype)
        self.accumulate = self.dtype
        """Type of the kernels' sums (``ACC_T``): the value type unless
        :func:`clspmv.formats.convert` says otherwise (float64 for ``dtype="mixed"``)."""
        self.layout = layout
        self.host: dict[str, np.ndarray] | None = arrays
        self.buffers: dict[str, cl.Buffer] = {}
        self.device: Device | None = None
        self._lazy_kernels: dict[str, cl.Kernel] = {}
        self.nbytes = int(sum(a.nbytes for a in arrays.values()))
        self._specs = {key: (a.dtype, a.size) for key, a in arrays.items()}
        for key, a in arrays.items():
            if a.size > INDEX_LIMIT - layout.simd_width * 32:
                raise IndexOverflowError(
                    f"{self.name}: array {key!r} has {a.size} elements, beyond the 32-bit index "
                    "type of the kernels"
                )

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
        """Copy the host arrays into device buffers (once) and build the kernels, summing in
        :attr:`accumulate` (set by :func:`clspmv.formats.convert`: float64 sums of float32
        values are ``dtype="mixed"``, which needs the device's fp64)."""
        if self.host is None:
            raise RuntimeError("format already uploaded")
        for key, a in self.host.items():
            if a.nbytes > device.max_allocation:
                raise DeviceError(
                    f"format {self.name!r} needs a buffer of {a.nbytes} bytes for {key!r}, above "
                    f"the {device.max_allocation} bytes {device.name} allows in one allocation"
                )
        if self.nbytes > device.global_memory:
            raise DeviceError(
                f"format {self.name!r} needs {self.nbytes} bytes, more than the "
                f"{device.global_memory} bytes of global memory of {device.name}"
            )
        self.compile(device)
        flags = cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR
        for key, a in self.host.items():
            # OpenCL has no empty buffers: an empty array gets one element nobody reads.
            data = a if a.size else np.zeros(1, a.dtype)
            try:
                self.buffers[key] = cl.Buffer(device.context, flags, hostbuf=data)
            except cl.Error as err:  # MemoryError, or LogicError for a size the driver refuses
                self.buffers.clear()  # release what was uploaded already
                raise DeviceError(
                    f"the OpenCL driver of {device.name} refused a buffer of {data.nbytes} bytes "
                    f"for {key!r} of format {self.name!r} ({self.nbytes} bytes in all): {err}; "
                    "free device memory or choose a format that needs less"
                ) from err
        self.host = None

    def download(self) -> dict[str, np.ndarray]:
        """Read the device buffers back into numpy arrays."""
        assert self.device is not None
        out = {}
        for key, (dtype, size) in self._specs.items():
            a = np.empty(size, dtype)
            if size:
                cl.enqueue_copy(self.device.queue, a, self.buffers[key])
            out[key] = a
        return out

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
        if atomics:
            return atomic_kernel(self.device, file, name, self.dtype, self.accumulate, WG=wg,
                                 **defines)
        return build.kernel(self.device, file, name, self.dtype, accumulate=self.accumulate,
                            WG=wg, **defines)

    def lazy_kernel(self, key: str, file: str, name: str, atomics: bool = False,
                    **defines: object) -> cl.Kernel:
        """:meth:`kernel`, built on first use and kept under ``key`` (transpose and
        several-right-hand-sides kernels cost nothing until they are needed)."""
        kern = self._lazy_kernels.get(key)
        if kern is None:
            kern = self._lazy_kernels[key] = self.kernel(file, name, atomics=atomics, **defines)
        return kern

    def scale_y(self, queue: cl.CommandQueue, y: cl.Buffer, n: int, beta: np.generic
                ) -> cl.Event | None:
        """Enqueue y = beta * y over ``n`` entries (zeros when beta == 0, y never read)."""
        kern = self.lazy_kernel("scale_y", "util.cl", "scale_y", atomics=True)
        return self.run(queue, kern, n, scalar(n), y, beta)

    def run(
        self,
        queue: cl.CommandQueue,
        kern: cl.Kernel,
        work_items: int,
        *args: object,
        wait_for: list[cl.Event] | None = None,
        wg: int | None = None,
    ) -> cl.Event | None:
        """Enqueue ``kern`` over ``work_items`` (rounded up to whole work-groups of ``wg``,
        default the layout's work-group size)."""
        if work_items <= 0:
            return None
        wg = wg or self.layout.work_group_size
        total = -(-work_items // wg) * wg
        if total > INDEX_LIMIT:
            raise IndexOverflowError(
                f"{self.name}: {total} work-items exceed the 32-bit index range of the kernels"
            )
        return kern(queue, (total,), (wg,), *args, wait_for=wait_for)

    @abstractmethod
    def launch(
        self,
        queue: cl.CommandQueue,
        x: cl.Buffer | None,
        y: cl.Buffer,
        alpha: np.generic,
        beta: np.generic,
    ) -> list[cl.Event]:
        """Enqueue y = alpha * A x + beta * y; returns the events of the kernels enqueued."""

    forward_atomics: ClassVar[bool] = False
    """Whether :meth:`launch` adds partial sums to y atomically (in the value type, also for
    ``dtype="mixed"``): COO and HYB's COO part."""

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
    ) -> list[cl.Event]:
        """Enqueue y = alpha * A^T x + beta * y (x has shape[0] entries, y shape[1]) without
        forming A^T; returns the events of the kernels enqueued."""

    has_matmat: ClassVar[bool] = False
    """Whether :meth:`launch_matmat` exists (else DeviceMatrix.matmat does k products)."""

    def launch_matmat(self, queue: cl.CommandQueue, X: cl.Buffer, Y: cl.Buffer,
                      strides: Strides, alpha: np.generic, beta: np.generic) -> list[cl.Event]:
        """Enqueue Y = alpha * A X + beta * Y for X of ``strides.k`` columns."""
        raise NotImplementedError(f"format {self.name!r} has no several-right-hand-sides kernel")

    kernel_options: ClassVar[tuple[str, ...]] = ()
    """Parameters that choose kernels only, not the stored arrays: :meth:`retuned` changes them
    (and the work-group size) on the uploaded matrix. Empty: the format cannot be retuned."""

    def check_params(self) -> None:
        """Raise ValueError when :attr:`params` do not suit :attr:`layout` (called after
        :meth:`retuned` changed them): here, more work-items per row than per work-group, or an
        ``unroll`` not in :data:`UNROLL_FACTORS`."""
        check_unroll(self.params.get("unroll", 1))
        threads = self.params.get("threads_per_row", 1)
        if threads > self.layout.work_group_size:
            raise ValueError(f"format {self.name!r} shares each row among {threads} work-items: "
                             f"the work-group size must be at least {threads}, got "
                             f"{self.layout.work_group_size}")

    def retuned(self, work_group_size: int | None = None, **options: int) -> Format:
        """This matrix launched with another work-group size and/or other
        :attr:`kernel_options`, sharing the device buffers (nothing is converted or copied).

        Raises ValueError for a format without kernel options, a parameter that would change
        the stored arrays, or values the format refuses.
        """
        if self.device is None:
            raise RuntimeError("retune an uploaded format")
        if not self.kernel_options:
            raise ValueError(f"format {self.name!r} has no kernel options to retune; convert "
                             "again with DeviceMatrix.from_scipy(..., work_group_size=...)")
        fixed = sorted(set(options) - set(self.kernel_options))
        if fixed:
            raise ValueError(
                f"format {self.name!r} cannot retune {', '.join(fixed)} (it changes the stored "
                f"arrays, or is not a parameter of the format): convert again with "
                f"DeviceMatrix.from_scipy; retunable: "
                f"{', '.join(('work_group_size', *self.kernel_options))}")
        new = object.__new__(type(self))  # copy.copy would pickle: buffers refuse that
        new.__dict__.update(self.__dict__)
        new.layout = Layout.for_device(self.device, work_group_size
                                       or self.layout.work_group_size)
        new.params = {**self.params, **options}
        new._lazy_kernels = {}
        new.check_params()
        new.prepare_kernels()
        return new

    def __getstate__(self) -> None:  # buffers cannot be pickled
        raise TypeError(f"{type(self).__name__} holds device buffers and cannot be pickled")


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

    def prepare_kernels(self) -> None:
        self._kernel = self.kernel(self.kernel_file, f"{self.family}_spmv", **self.defines())

    def launch(self, queue, x, y, alpha, beta) -> list[cl.Event]:
        items, args = self.matrix_args()
        ev = self.run(queue, self._kernel, items, *args, x, y, alpha, beta)
        return [ev] if ev else []

    def launch_t(self, queue, x, y, alpha, beta) -> list[cl.Event]:
        kern = self.lazy_kernel("t", self.kernel_file, f"{self.family}_spmv_t", atomics=True,
                                **self.defines())
        items, args = self.matrix_args()
        events = [self.scale_y(queue, y, self.shape[1], beta),
                  self.run(queue, kern, items, *args, x, y, alpha)]
        return [e for e in events if e is not None]

    def launch_matmat(self, queue, X, Y, strides, alpha, beta) -> list[cl.Event]:
        assert self.device is not None
        defines = self.defines()
        kb = matmat_block(strides.k, int(defines.get("T", 1)), self.layout.work_group_size,
                          self.accumulate.itemsize, self.device.local_memory)
        kern = self.lazy_kernel(f"matmat{kb}", self.kernel_file, f"{self.family}_matmat",
                                KB=kb, **defines)
        items, args = self.matrix_args()
        x_row, x_col, y_row, y_col = strides.args()
        ev = self.run(queue, kern, items, *args, scalar(strides.k), X, x_row, x_col, Y, y_row,
                      y_col, alpha, beta)
        return [ev] if ev else []


# -- shared helpers for conversions ---------------------------------------------------------
def row_lengths(csr: sp.csr_matrix) -> np.ndarray:
    """Entries per row as int64."""
    return np.diff(csr.indptr).astype(np.int64)


def round_up(n: int, multiple: int) -> int:
    """``n`` rounded up to a multiple of ``multiple``."""
    return -(-n // multiple) * multiple


def entry_rows(csr: sp.csr_matrix) -> np.ndarray:
    """The row index of every stored entry (int64)."""
    return np.repeat(np.arange(csr.shape[0], dtype=np.int64), row_lengths(csr))


def position_in_row(csr: sp.csr_matrix) -> np.ndarray:
    """For every stored entry, its position within its row (0, 1, 2, ...)."""
    return np.arange(csr.nnz, dtype=np.int64) - np.repeat(
        csr.indptr[:-1].astype(np.int64), row_lengths(csr)
    )


def csr_bytes(csr: sp.csr_matrix) -> int:
    """Device bytes of the plain CSR layout: the yardstick padded layouts are measured against."""
    return csr.nnz * (csr.data.itemsize + INDEX_DTYPE.itemsize) + (csr.shape[0] + 1) * 4


def check_padding(name: str, padded_bytes: int, csr: sp.csr_matrix) -> None:
    """Refuse a layout whose padding would be absurd, before anything is allocated."""
    reference = csr_bytes(csr)
    if padded_bytes > max(MAX_PADDING_RATIO * reference, PADDING_FLOOR):
        raise UnsuitableFormatError(
            f"format {name!r} would need {padded_bytes} bytes for this {csr.shape[0]}x"
            f"{csr.shape[1]} matrix with {csr.nnz} entries, against {reference} bytes in CSR "
            f"(more than {MAX_PADDING_RATIO:g}x); use 'csr-vector', 'sell' or 'hyb' instead"
        )


def check_unroll(unroll: object) -> int:
    """``unroll`` as an int, or ValueError unless it is one of :data:`UNROLL_FACTORS`."""
    if isinstance(unroll, bool) or not isinstance(unroll, (int, np.integer)) \
            or int(unroll) not in UNROLL_FACTORS:
        raise ValueError(f"unroll must be one of {UNROLL_FACTORS}, got {unroll!r}")
    return int(unroll)


def check_threads(threads: object, choices: tuple[int, ...], layout: Layout) -> int:
    """ValueError unless ``threads`` (work-items per row) is one of ``choices`` and at most the
    layout's work-group size."""
    if threads not in choices or threads > layout.work_group_size:  # type: ignore[operator]
        raise ValueError(
            f"threads_per_row must be one of {choices} and at most the work-group "
            f"size {layout.work_group_size}, got {threads}"
        )
    return int(threads)  # type: ignore[call-overload]


def scalar(value: int) -> np.int32:
    """An index-type kernel argument."""
    return np.int32(value)
