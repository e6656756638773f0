"""The small protocol every storage format implements, and the pieces they share.

A format converts a canonical CSR matrix into numpy arrays laid out for the device
(:meth:`Format.from_csr`, numpy only), owns the device buffers made from them
(:meth:`Format.upload`), enqueues its kernels (:meth:`Format.launch`) and can turn its arrays back
into triplets (:meth:`Format.to_coo`). Argument checks, alpha/beta, output allocation and host
transfers live once in :class:`clspmv.DeviceMatrix`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .. import build
from ..device import Device
from ..errors import DeviceError, IndexOverflowError, UnsuitableFormatError

INDEX_DTYPE = np.dtype(np.int32)
INDEX_LIMIT = 2**31 - 1
"""Largest value the kernels' 32-bit index type holds."""

MAX_PADDING_RATIO = 10.0
"""A padded layout larger than this many times CSR's bytes (and than PADDING_FLOOR) is refused."""
PADDING_FLOOR = 16 << 20


@dataclass(frozen=True)
class Layout:
    """Device facts that shape a layout: SIMD width for padding, work-group size for launches."""

    simd_width: int
    work_group_size: int
    compute_units: int

    @classmethod
    def for_device(cls, device: Device, work_group_size: int | None = None) -> Layout:
        """The layout clspmv uses on ``device``: work-groups of 256, or the device's maximum."""
        wg = work_group_size or min(256, device.max_work_group_size)
        if wg < 1 or wg & (wg - 1) or wg > device.max_work_group_size:
            raise ValueError(
                f"work_group_size must be a power of two <= {device.max_work_group_size}, got {wg}"
            )
        return cls(device.simd_width, wg, device.compute_units)


Triplets = tuple[np.ndarray, np.ndarray, np.ndarray]


class Format(ABC):
    """A sparse matrix in one storage format: host arrays, then device buffers, then launches."""

    name: ClassVar[str]
    """Public name, one of ``clspmv.FORMATS``."""
    kernel_file: ClassVar[str]
    """The ``kernels_cl/`` file holding this format's kernels."""

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
        self.layout = layout
        self.host: dict[str, np.ndarray] | None = arrays
        self.buffers: dict[str, cl.Buffer] = {}
        self.device: Device | None = None
        self.nbytes = int(sum(a.nbytes for a in arrays.values()))
        self._specs = {key: (a.dtype, a.size) for key, a in arrays.items()}
        for key, a in arrays.items():
            if a.size > INDEX_LIMIT - layout.simd_width * 32:
                raise IndexOverflowError(
                    f"{self.name}: array {key!r} has {a.size} elements, beyond the 32-bit index "
                    "type of the kernels"
                )

    # -- conversion (numpy only) ------------------------------------------------------------
    @classmethod
    @abstractmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, **params: object) -> Format:
        """Lay out a canonical CSR matrix (sorted, summed, int32 indices) for the device."""

    @abstractmethod
    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        """Row indices, column indices and values of the stored entries (any order)."""

    # -- device ---------------------------------------------------------------------------
    def upload(self, device: Device) -> None:
        """Copy the host arrays into device buffers (once) and build the kernels."""
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
        self.device = device
        self.prepare_kernels()
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

    def kernel(self, file: str, name: str, **defines: object) -> cl.Kernel:
        """A kernel of this format's value type and work-group size."""
        assert self.device is not None
        return build.kernel(
            self.device, file, name, self.dtype, WG=self.layout.work_group_size, **defines
        )

    def run(
        self,
        queue: cl.CommandQueue,
        kern: cl.Kernel,
        work_items: int,
        *args: object,
        wait_for: list[cl.Event] | None = None,
    ) -> cl.Event | None:
        """Enqueue ``kern`` over ``work_items`` (rounded up to whole work-groups)."""
        if work_items <= 0:
            return None
        wg = self.layout.work_group_size
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

    def __getstate__(self) -> None:  # buffers cannot be pickled
        raise TypeError(f"{type(self).__name__} holds device buffers and cannot be pickled")


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


def scalar(value: int) -> np.int32:
    """An index-type kernel argument."""
    return np.int32(value)
