"""The CSR arrays of one matrix, stored once and shared by every CSR kernel made on them.

The CSR kernels (``csr-scalar``, ``csr-vector``, ``csr-adaptive``, ``csr-blocks``, ``csr-merge``,
and ``csr-aligned`` where no row needs padding) read the same three arrays ``row_ptr``, ``col``
and ``val``; each adds a little metadata of its own (row blocks, merge-path shares, the chunks of
long rows). A :class:`CsrStore` holds the three arrays (and a column map, where the matrix is a
block with compact columns): numpy arrays until the first upload, then device buffers that every
format made on the store uses (:meth:`clspmv.formats.base.Format.upload` uploads the store once,
then only the format's own arrays). Switching kernels on an uploaded matrix
(:meth:`clspmv.formats.csr.CsrFamily.switched`) builds the new kernel's metadata from
:attr:`CsrStore.row_ptr`, which stays on the host, and uploads that alone. The buffers live as
long as any format holding the store.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from ..early_upload import EarlyUpload
from ..errors import DeviceError
from ..host_buffers import matrix_buffer
from .kernels import INDEX_DTYPE

if TYPE_CHECKING:
    from .base import Format


def check_sizes(device: Device, arrays: dict[str, np.ndarray], what: str, total: int) -> None:
    """DeviceError naming the array unless every one of ``arrays`` fits one allocation of
    ``device`` and their ``total`` bytes its global memory (``what``: the format's name)."""
    for key, a in arrays.items():
        if a.nbytes > device.max_allocation:
            raise DeviceError(
                f"format {what!r} needs a buffer of {a.nbytes} bytes for {key!r}, above "
                f"the {device.max_allocation} bytes {device.name} allows in one allocation"
            )
    if total > device.global_memory:
        raise DeviceError(f"format {what!r} needs {total} bytes, more than the "
                          f"{device.global_memory} bytes of global memory of {device.name}")


def device_buffers(device: Device, arrays: dict[str, np.ndarray], in_place: bool, what: str,
                   total: int, early: EarlyUpload | None = None) -> dict[str, cl.Buffer]:
    """Read-only buffers of ``arrays`` (:func:`clspmv.host_buffers.matrix_buffer`), or those
    ``early`` copied already; DeviceError naming the array where the driver refuses one (those
    made before it are released)."""
    buffers: dict[str, cl.Buffer] = {}
    for key, a in arrays.items():
        try:
            copied = early.take(a) if early is not None else None
            buffers[key] = copied if copied is not None else matrix_buffer(device, a, in_place)
        except cl.Error as err:  # MemoryError, or LogicError for a size the driver refuses
            buffers.clear()
            raise DeviceError(
                f"the OpenCL driver of {device.name} refused a buffer of {a.nbytes} bytes "
                f"for {key!r} of format {what!r} ({total} bytes in all): {err}; "
                "free device memory or choose a format that needs less"
            ) from err
    return buffers


def read_back(device: Device, specs: dict[str, tuple[np.dtype, int]],
              buffers: dict[str, cl.Buffer]) -> dict[str, np.ndarray]:
    """The arrays of ``specs`` (key -> dtype and size) read back from their ``buffers`` on
    ``device``."""
    out = {}
    for key, (dtype, size) in specs.items():
        a = np.empty(size, dtype)
        if size:
            cl.enqueue_copy(device.queue, a, buffers[key])
        out[key] = a
    return out


class CsrStore:
    """``row_ptr``, ``col``, ``val`` (and a column map) of one matrix, uploaded once.

    ``plain``: the canonical CSR arrays of the matrix, which every CSR kernel can share; False
    for ``csr-aligned``'s padded rows, which only that format reads."""

    def __init__(self, shape: tuple[int, int], row_ptr: np.ndarray, col: np.ndarray,
                 val: np.ndarray, plain: bool = True) -> None:
        self.shape = shape
        self.row_ptr = row_ptr
        """The row pointers, kept on the host after the upload: a kernel's metadata is built
        from them alone."""
        self.plain = plain
        self.host: dict[str, np.ndarray] | None = {"row_ptr": row_ptr, "col": col, "val": val}
        self.specs = {key: (a.dtype, a.size) for key, a in self.host.items()}
        self.nbytes = int(sum(a.nbytes for a in self.host.values()))
        self.buffers: dict[str, cl.Buffer] = {}
        self.device: Device | None = None
        self.early: EarlyUpload | None = None
        """Copies of some of the arrays started before the conversion
        (:mod:`clspmv.early_upload`), which :meth:`upload` takes instead of copying again."""

    @classmethod
    def of(cls, csr: sp.csr_matrix) -> CsrStore:
        """A plain store of a canonical CSR matrix's arrays, indices in the kernels' type (the
        arrays themselves where they have it already: the upload copies them unless the
        caller gave them away, ``convert(..., owned=True)``)."""
        return cls(csr.shape, csr.indptr.astype(INDEX_DTYPE, copy=False),
                   csr.indices.astype(INDEX_DTYPE, copy=False), csr.data)

    @property
    def dtype(self) -> np.dtype:
        """The values' type."""
        return self.specs["val"][0]

    @property
    def nnz(self) -> int:
        """Stored slots (entries, and padding in a store that is not :attr:`plain`)."""
        return int(self.row_ptr[-1]) if self.row_ptr.size else 0

    def lengths(self) -> np.ndarray:
        """The rows' stored lengths."""
        return np.diff(self.row_ptr)

    def add(self, key: str, a: np.ndarray) -> None:
        """Store one more array with the CSR ones (the column map), before the upload."""
        if self.host is None:
            raise RuntimeError("add arrays to a CSR store before its upload")
        self.host[key] = a
        self.specs[key] = (a.dtype, a.size)
        self.nbytes += a.nbytes

    def upload(self, device: Device, in_place: bool, what: str) -> None:
        """Make the buffers on ``device`` (nothing if done already; ValueError for another
        device): copies, or the arrays themselves where ``in_place`` allows
        (:func:`clspmv.host_buffers.matrix_buffer`). ``what``: the format, for the errors."""
        if self.device is not None:
            if self.device is not device:
                raise ValueError(f"the CSR arrays are on {self.device.name}, not {device.name}: "
                                 "convert the matrix again for another device")
            return
        assert self.host is not None
        early, self.early = self.early, None
        try:
            self.buffers = device_buffers(device, self.host, in_place, what, self.nbytes, early)
        finally:
            if early is not None:
                early.close()
        self.device, self.host = device, None

    def download(self) -> dict[str, np.ndarray]:
        """The arrays read back from the device."""
        assert self.device is not None
        return read_back(self.device, self.specs, self.buffers)


def total_nbytes(formats: Iterable[Format]) -> int:
    """Device bytes of ``formats`` of one matrix together: each one's own arrays, and each
    :class:`CsrStore` they share once."""
    own, stores = 0, {}
    for fmt in formats:
        own += fmt.own_nbytes
        if fmt.store is not None:
            stores[id(fmt.store)] = fmt.store.nbytes
    return own + sum(stores.values())


__all__ = ["CsrStore", "check_sizes", "device_buffers", "total_nbytes"]
