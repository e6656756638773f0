"""DeviceMatrix: a sparse matrix stored on an OpenCL device in one format, and its product.

Everything format-independent lives here once: input canonicalisation, argument checks,
alpha/beta, output allocation and host <-> device transfers.
"""

from __future__ import annotations

import threading

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .device import Device, select_device
from .errors import DeviceError, IndexOverflowError
from .formats import FORMAT_CLASSES, Format, Layout
from .formats.base import INDEX_DTYPE, INDEX_LIMIT

FORMATS: tuple[str, ...] = tuple(FORMAT_CLASSES)
"""Public names of the storage formats."""

VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _value_dtype(requested: object, source: np.dtype) -> np.dtype:
    if requested is None:
        if np.issubdtype(source, np.complexfloating):
            raise TypeError("complex matrices are not supported; pass dtype=float32 or float64")
        return source if source in VALUE_DTYPES else np.dtype(np.float64)
    dtype = np.dtype(requested)  # type: ignore[call-overload]
    if dtype not in VALUE_DTYPES:
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def canonical_csr(A: object, dtype: object = None) -> sp.csr_matrix:
    """A copy of ``A`` as CSR with sorted indices, duplicates summed, explicit zeros kept,
    32-bit indices and values of ``dtype`` (default: A's float type, else float64).

    Duplicates are summed before the values are rounded to ``dtype`` (in float64 for anything
    but COO input of a float type, which scipy sums in that type); values beyond the range of
    ``dtype`` become ±Inf, with numpy's "overflow encountered in cast" warning.

    ``A`` may be any scipy.sparse matrix or array, or a dense 2-D array (whose zeros are dropped).
    Raises :class:`IndexOverflowError` when the matrix does not fit 32-bit indices.
    """
    if sp.issparse(A):
        source = np.dtype(A.dtype)
        shape = A.shape
    else:
        dense = np.asarray(A)
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got an array of shape {dense.shape}")
        source, shape = dense.dtype, dense.shape
    value_dtype = _value_dtype(dtype, source)
    nnz = A.nnz if sp.issparse(A) else None
    if max(shape) > INDEX_LIMIT or (nnz is not None and nnz > INDEX_LIMIT):
        raise IndexOverflowError(
            f"a {shape[0]}x{shape[1]} matrix with {nnz} stored entries does not fit the 32-bit "
            f"indices of the kernels (limit {INDEX_LIMIT})"
        )
    if sp.issparse(A):
        csr = sp.csr_matrix(A, copy=True)  # COO input: scipy sums duplicates in A's dtype
        if not csr.has_canonical_format:
            # Duplicates are summed in float64, before rounding to dtype: rounding first would
            # lose what cancels (1 + 2**-30 and -1 would sum to 0 in float32).
            csr = csr.astype(np.float64, copy=False)
            csr.sum_duplicates()
        csr = csr.astype(value_dtype, copy=False)
    else:
        csr = sp.csr_matrix(dense.astype(value_dtype, copy=False))
    csr.sum_duplicates()  # sorts indices; keeps explicit zeros
    if csr.nnz > INDEX_LIMIT:
        raise IndexOverflowError(f"{csr.nnz} entries do not fit the 32-bit indices of the kernels")
    csr.indptr = csr.indptr.astype(INDEX_DTYPE, copy=False)
    csr.indices = csr.indices.astype(INDEX_DTYPE, copy=False)
    return csr


def _check_real(dtype: np.dtype, what: str) -> None:
    """TypeError unless ``dtype`` holds real numbers (bool, integers, floats)."""
    if dtype.kind == "c":
        raise TypeError(f"complex vectors are not supported ({what} has dtype {dtype})")
    if dtype.kind not in "biuf":
        raise TypeError(f"{what} has dtype {dtype}; expected real numbers")


class DeviceMatrix:
    """A sparse matrix uploaded once to an OpenCL device in one storage format.

    Build one with :meth:`from_scipy`; multiply with :meth:`matvec` or ``M @ x``. The product is
    ``y = alpha * A @ x + beta * y`` with BLAS semantics: when ``beta == 0`` the old ``y`` is never
    read. One DeviceMatrix may be used from several threads: its products are serialised by a lock.
    """

    def __init__(self, fmt: Format, device: Device) -> None:
        self._fmt = fmt
        self._device = device
        self._lock = threading.Lock()
        self.last_events: list[cl.Event] = []
        """The kernel events of the latest product (for profiling)."""

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scipy(
        cls,
        A: object,
        format: str = "csr-vector",
        device: Device | str | None = None,
        dtype: object = None,
        work_group_size: int | None = None,
        **params: object,
    ) -> DeviceMatrix:
        """Convert ``A`` (scipy.sparse or dense 2-D array) to ``format`` and upload it.

        ``device`` is a :class:`Device`, a :func:`select_device` spec, or None for the default.
        ``dtype`` is float32 or float64 (default: A's float type, else float64). ``params`` are
        the format's own parameters: ``threads_per_row`` (csr-vector, ellr-t), ``sigma`` (sell),
        ``width`` (hyb).

        Raises ValueError for an unknown format, :class:`UnsuitableFormatError` when the format
        would pad absurdly, :class:`DeviceError` for float64 on a device without fp64 or data the
        device cannot hold, :class:`IndexOverflowError` beyond 32-bit indices.
        """
        if format not in FORMAT_CLASSES:
            raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
        dev = select_device(device)
        csr = canonical_csr(A, dtype)
        if not dev.supports(csr.dtype):
            raise DeviceError(f"{dev.name} has no float64 support (cl_khr_fp64); use dtype=float32")
        layout = Layout.for_device(dev, work_group_size)
        fmt = FORMAT_CLASSES[format].from_csr(csr, layout, **params)
        del csr
        fmt.upload(dev)
        return cls(fmt, dev)

    # -- facts ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        return self._fmt.shape

    @property
    def dtype(self) -> np.dtype:
        """Value type on the device (float32 or float64)."""
        return self._fmt.dtype

    @property
    def format(self) -> str:
        """Storage format name (one of :data:`FORMATS`)."""
        return self._fmt.name

    @property
    def device(self) -> Device:
        """The device holding the matrix."""
        return self._device

    @property
    def nbytes(self) -> int:
        """Bytes of device memory the matrix occupies."""
        return self._fmt.nbytes

    @property
    def params(self) -> dict[str, int]:
        """Layout parameters chosen for this matrix (threads per row, widths, sigma, ...)."""
        return dict(self._fmt.params)

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"<DeviceMatrix {m}x{n} {self.dtype} format={self.format!r} "
                f"device={self.device.name!r} {self.nbytes} bytes>")

    # -- product --------------------------------------------------------------------------
    def matvec(
        self,
        x: np.ndarray | cl_array.Array,
        y: np.ndarray | cl_array.Array | None = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> np.ndarray | cl_array.Array:
        """``y = alpha * A @ x + beta * y``.

        With a numpy ``x`` the result is a numpy array; a numpy ``y`` is updated in place and
        returned. With a ``pyopencl.array.Array`` ``x`` (same context) the result stays on the
        device: a given ``y`` array is updated in place, else a new one is returned.
        """
        m, n = self.shape
        on_device = isinstance(x, cl_array.Array)
        alpha_v, beta_v = self._scalar(alpha, "alpha"), self._scalar(beta, "beta")
        if on_device:
            y_dev = self._device_output(y, m)
            x_dev = self._device_vector(x, n, "x")
            if x_dev is not None and x_dev is x and x.base_data == y_dev.base_data:
                # x and y in one buffer: the kernels would read x while writing y
                x_dev = x.copy(queue=self._device.queue)
        else:
            x_host = self._host_vector(x, n)
            y_host = self._host_output(y, m)
        if m == 0:
            return y_dev if on_device else y_host
        queue = self._device.queue
        with self._lock:
            if not on_device:
                x_dev = cl_array.to_device(queue, x_host) if n else None
                if y_host is not None and beta_v != 0:
                    y_dev = cl_array.to_device(queue, np.ascontiguousarray(y_host))
                else:
                    y_dev = cl_array.empty(queue, m, self.dtype)
            x_buf = x_dev.data if x_dev is not None and n else None
            self.last_events = self._fmt.launch(queue, x_buf, y_dev.data, alpha_v, beta_v)
            if on_device:
                return y_dev
            result = y_dev.get(queue)
        if y_host is None:
            return result
        y_host[...] = result
        return y_host

    def __matmul__(self, x: np.ndarray | cl_array.Array) -> np.ndarray | cl_array.Array:
        return self.matvec(x)

    def _scalar(self, value: object, what: str) -> np.generic:
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what} must be a real number, got {value!r}")
        return self.dtype.type(arr)

    def _host_vector(self, x: object, n: int) -> np.ndarray:
        arr = np.asarray(x)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(f"x has shape {arr.shape}, expected ({n},)")
        _check_real(arr.dtype, "x")
        # a copy in the matrix's dtype when x is another type, strided, reversed or Fortran-ordered
        return np.ascontiguousarray(arr, dtype=self.dtype)

    def _host_output(self, y: object, m: int) -> np.ndarray | None:
        if y is None:
            return None if m else np.zeros(0, self.dtype)
        if not isinstance(y, np.ndarray):
            raise TypeError(f"y must be a numpy array when x is one, got {type(y).__name__}")
        if y.shape != (m,):
            raise ValueError(f"y has shape {y.shape}, expected ({m},)")
        if y.dtype != self.dtype:
            raise TypeError(
                f"y has dtype {y.dtype}, expected {self.dtype} (it is updated in place)"
            )
        if not y.flags.writeable:
            raise ValueError("y is read-only; it is updated in place")
        return y

    def _device_vector(self, x: cl_array.Array, n: int, what: str) -> cl_array.Array | None:
        if x.shape != (n,):
            raise ValueError(f"{what} has shape {x.shape}, expected ({n},)")
        if x.context != self._device.context:
            raise ValueError(f"{what} lives in another OpenCL context than the matrix's device "
                             f"{self._device.name}; copy it there first")
        _check_real(x.dtype, what)
        if not x.flags.forc:
            raise ValueError(
                f"{what} is a non-contiguous pyopencl array (strides {x.strides}); pass a "
                "contiguous one (pyopencl cannot copy strided arrays) or a numpy array"
            )
        if n == 0:
            return None
        if x.dtype != self.dtype:
            return x.astype(self.dtype, queue=self._device.queue)
        if x.offset:
            return x.copy(queue=self._device.queue)
        return x

    def _device_output(self, y: object, m: int) -> cl_array.Array:
        queue = self._device.queue
        if y is None:
            return cl_array.empty(queue, m, self.dtype)
        if not isinstance(y, cl_array.Array):
            raise TypeError(f"y must be a pyopencl array when x is one, got {type(y).__name__}")
        if y.shape != (m,):
            raise ValueError(f"y has shape {y.shape}, expected ({m},)")
        if y.dtype != self.dtype:
            raise TypeError(
                f"y has dtype {y.dtype}, expected {self.dtype} (it is updated in place)"
            )
        if y.context != self._device.context:
            raise ValueError("y lives in another OpenCL context than the matrix's device")
        if y.offset or not y.flags.forc:
            raise ValueError("y must be a contiguous array without offset (it is updated in place)")
        return y

    # -- conversions ----------------------------------------------------------------------
    def to_scipy(self) -> sp.csr_matrix:
        """The stored matrix read back from the device as float CSR (sorted indices)."""
        with self._lock:
            rows, cols, vals = self._fmt.to_coo(self._fmt.download())
        out = sp.csr_matrix((vals, (rows, cols)), shape=self.shape, dtype=self.dtype)
        out.sort_indices()
        return out

    def aslinearoperator(self) -> LinearOperator:
        """A scipy LinearOperator whose products run on the device."""
        return LinearOperator(self.shape, matvec=lambda v: self.matvec(np.ravel(v)),
                              dtype=self.dtype)
