"""DeviceMatrix: a sparse matrix stored on an OpenCL device in one format, and its products.

Everything format-independent lives here once: input canonicalisation, argument checks,
alpha/beta, output allocation and host <-> device transfers, for the product (``matvec``), the
transpose product (``rmatvec``) and several right-hand sides (``matmat``, ``rmatmat``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from .device import Device, select_device
from .errors import DeviceError, IndexOverflowError, UnsuitableFormatError
from .formats import FORMAT_CLASSES, Format, convert
from .formats.base import INDEX_DTYPE, INDEX_LIMIT, Strides
from .precision import Precision, resolve
from .vectors import DeviceVectors

FORMATS: tuple[str, ...] = tuple(FORMAT_CLASSES)
"""Public names of the storage formats."""

TRANSPOSE_METHODS = ("auto", "atomic", "transpose")
"""How a product with the transpose of the stored arrays runs: ``"atomic"``, the format's own
transpose kernel (atomic scatter into y; DIA's gathers without atomics); ``"transpose"``, the
normal kernel of a transposed copy built once on first use; ``"auto"``, the copy if it exists,
else the atomic kernel where the device can run it, else the copy."""

FALLBACK_TRANSPOSE_FORMAT = "csr-vector"
"""Format of the transposed copy when the matrix's own format refuses the transpose."""

Array = np.ndarray | cl_array.Array


def canonical_csr(A: object, dtype: object = None) -> sp.csr_matrix:
    """A copy of ``A`` as CSR with sorted indices, duplicates summed, explicit zeros kept,
    32-bit indices and values of ``dtype`` (default: A's float type, else float64; ``"mixed"``
    stores float32 values).

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
    value_dtype = resolve(dtype, source).value
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


def _check_real(dtype: np.dtype, what: str, ndim: int = 1) -> None:
    """TypeError unless ``dtype`` holds real numbers (bool, integers, floats)."""
    if dtype.kind == "c":
        kind = "matrices" if ndim == 2 else "vectors"
        raise TypeError(f"complex {kind} are not supported ({what} has dtype {dtype})")
    if dtype.kind not in "biuf":
        raise TypeError(f"{what} has dtype {dtype}; expected real numbers")


class DeviceMatrix:
    """A sparse matrix uploaded once to an OpenCL device in one storage format.

    Build one with :meth:`from_scipy`; multiply with :meth:`matvec` or ``M @ x``, by the transpose
    with :meth:`rmatvec`, several right-hand sides at once with :meth:`matmat`. Products are
    ``y = alpha * op(A) @ x + beta * y`` with BLAS semantics: when ``beta == 0`` the old ``y`` is
    never read. One DeviceMatrix may be used from several threads: its products are serialised by
    a lock.

    A ``scipy.sparse`` CSC matrix is stored as it is: its arrays are the CSR arrays of A^T, so
    ``matvec`` runs the format's transpose kernel and ``rmatvec`` its normal one
    (:attr:`transposed_storage` is True).
    """

    def __init__(self, fmt: Format, device: Device, transposed_storage: bool = False,
                 diagonal: np.ndarray | None = None) -> None:
        """Wrap an uploaded format (use :meth:`from_scipy`); its value type and the type its
        kernels sum in (:attr:`Format.accumulate`) are the matrix's :attr:`precision`."""
        self._fmt = fmt
        self._device = device
        self._transposed_storage = transposed_storage
        self._diagonal = diagonal
        self._copy: Format | None = None
        self._vectors: DeviceVectors | None = None
        self._lock = threading.Lock()
        self.last_events: list[cl.Event] = []
        """The kernel events of the latest product (for profiling)."""
        self.selection = None
        """The :class:`clspmv.model.Selection` that chose the format (``format="auto"``), else
        None."""

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scipy(
        cls,
        A: object,
        format: str = "auto",
        device: Device | str | None = None,
        dtype: object = None,
        work_group_size: int | None = None,
        expected_products: int | None = None,
        **params: object,
    ) -> DeviceMatrix:
        """Convert ``A`` (scipy.sparse or dense 2-D array) to ``format`` and upload it.

        ``device`` is a :class:`Device`, a :func:`select_device` spec, or None for the default.
        ``dtype`` is float32, float64 (default: A's float type, else float64) or ``"mixed"``:
        values, x and y in float32 (:attr:`dtype` is float32) and every sum in float64
        (:attr:`precision` is ``"mixed"``); see :attr:`precision` for what that buys. ``params`` are
        the format's own parameters: ``threads_per_row`` (csr-vector, ellr-t), ``sigma`` (sell),
        ``width`` (hyb), ``block_entries`` (csr-adaptive), ``unroll`` (1, 2, 4 or 8: the inner
        loop of the CSR and ELLPACK formats), ``row_major`` (ell, ellr, ellr-t: rows stored one
        after the other instead of column-major). A CSC matrix (``csc_matrix`` or ``csc_array``)
        is not converted: its arrays are stored as the CSR arrays of its transpose.

        ``format="auto"`` (the default) takes the format with the least predicted kernel time
        on the device (:func:`clspmv.model.select`; the device is calibrated on first use unless
        ``CLSPMV_CALIBRATE=0``), or with ``expected_products=n`` the least predicted conversion
        plus n products; :attr:`selection` says what was predicted and why.

        Raises ValueError for an unknown format, TypeError for another ``dtype``,
        :class:`UnsuitableFormatError` when the format would pad absurdly, :class:`DeviceError`
        for float64 or ``"mixed"`` on a device without fp64 or data the device cannot hold,
        :class:`IndexOverflowError` beyond 32-bit indices.
        """
        if format not in FORMAT_CLASSES and format != "auto":
            raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)} "
                             "or 'auto'")
        if format == "auto" and params:
            raise ValueError(f"format parameters ({', '.join(params)}) belong to a named format; "
                             "name one (format=...) or leave them out with format='auto'")
        dev = select_device(device)
        transposed = sp.issparse(A) and A.format == "csc"
        # The transpose of a CSC matrix is a CSR matrix sharing its arrays: no conversion.
        csr = canonical_csr(A.T if transposed else A, dtype)
        precision = resolve(dtype, csr.dtype)
        dev.require(precision)
        selection = None
        if format == "auto":
            from .model.select import select  # the model imports this module

            selection = select(csr, dev, precision, expected_products)
            format = selection.format
        layout = FORMAT_CLASSES[format].layout_for(dev, work_group_size)
        fmt = convert(csr, format, layout, precision, **params)
        diagonal = csr.diagonal()  # A's diagonal is its transpose's
        del csr
        M = cls.upload(fmt, dev, transposed_storage=transposed, diagonal=diagonal)
        M.selection = selection
        return M

    @classmethod
    def upload(cls, fmt: Format, device: Device, transposed_storage: bool = False,
               diagonal: np.ndarray | None = None) -> DeviceMatrix:
        """Upload a converted matrix (:func:`clspmv.formats.convert`) to ``device`` and wrap it:
        the second half of :meth:`from_scipy`. ``transposed_storage``: ``fmt`` holds A^T (a CSC
        input); ``diagonal``: A's diagonal for :meth:`diagonal` (None: read from ``fmt``)."""
        fmt.upload(device)
        return cls(fmt, device, transposed_storage=transposed_storage, diagonal=diagonal)

    # -- facts ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        m, n = self._fmt.shape
        return (n, m) if self._transposed_storage else (m, n)

    @property
    def dtype(self) -> np.dtype:
        """Value type on the device (float32 or float64): the type of the stored values, of x
        and y (float32 also for ``dtype="mixed"``)."""
        return self._fmt.dtype

    @property
    def precision(self) -> str:
        """``"float32"``, ``"float64"`` or ``"mixed"``: float32 values, x and y (:attr:`dtype`)
        with every sum in float64 (:attr:`accumulate_dtype`).

        In ``"mixed"`` each product of two float32 values is exact in float64 and the row's sum
        is float64, rounded once to float32: the forward products (:meth:`matvec`,
        :meth:`matmat`, and :meth:`rmatvec` with ``method="transpose"``) are then within about
        one float32 rounding of the float64 product of the stored values, where float32's error
        grows with the row length and with cancellation. Where a kernel adds to y atomically the
        add is float32: ``coo`` (and the COO part of ``hyb``) round each work-item's run of up
        to 64 entries of a row to float32 before adding it, and the atomic transpose products
        (``method="atomic"``, and ``"auto"`` before a transposed copy exists) add each entry's
        product to y in float32, so y accumulates in float32 there. The solvers
        (:mod:`clspmv.solvers`) take a mixed matrix: their vectors and dot products are float32,
        the products summed in float64. The bytes moved are float32's."""
        return self._precision.name

    @property
    def accumulate_dtype(self) -> np.dtype:
        """The type the kernels sum in: float64 for ``"mixed"``, else :attr:`dtype`."""
        return self._fmt.accumulate

    @property
    def _precision(self) -> Precision:
        return Precision(self._fmt.dtype, self._fmt.accumulate)

    @property
    def format(self) -> str:
        """Storage format name (one of :data:`FORMATS`)."""
        return self._fmt.name

    @property
    def device(self) -> Device:
        """The device holding the matrix."""
        return self._device

    @property
    def transposed_storage(self) -> bool:
        """True when the device holds the arrays of A^T (the matrix came in as CSC)."""
        return self._transposed_storage

    @property
    def nbytes(self) -> int:
        """Bytes of device memory the matrix occupies, its transposed copy included once built."""
        return self._fmt.nbytes + (self._copy.nbytes if self._copy is not None else 0)

    @property
    def params(self) -> dict[str, int]:
        """Layout parameters chosen for this matrix (threads per row, widths, sigma, ...)."""
        return dict(self._fmt.params)

    @property
    def work_group_size(self) -> int:
        """Work-items per work-group the kernels launch with (the caller's choice, else the
        format's preferred size on this device, else 256 or the device's maximum)."""
        return self._fmt.layout.work_group_size

    def retuned(self, work_group_size: int | None = None, **options: int) -> DeviceMatrix:
        """The same stored matrix launched with another work-group size and/or other kernel
        options (``unroll``; ``threads_per_row`` of ``csr-vector``), sharing the device buffers:
        nothing is converted or copied. The transposed copy is not shared.

        Raises ValueError for a format that cannot be retuned, a parameter that would change the
        stored arrays (e.g. ``row_major``: convert again with :meth:`from_scipy`) or a value the
        format refuses.
        """
        fmt = self._fmt.retuned(work_group_size, **options)
        return DeviceMatrix(fmt, self._device, transposed_storage=self._transposed_storage,
                            diagonal=self._diagonal)

    def diagonal(self) -> np.ndarray:
        """The main diagonal (``min(m, n)`` values), computed at conversion time (a copy)."""
        if self._diagonal is None:
            with self._lock:
                rows, cols, vals = self._fmt.to_coo(self._fmt.download())
            diag = np.zeros(min(self.shape), self.dtype)
            on = rows == cols
            np.add.at(diag, rows[on], vals[on])
            self._diagonal = diag
        return self._diagonal.copy()

    def __repr__(self) -> str:
        m, n = self.shape
        chosen = " (auto)" if self.selection is not None else ""
        return (f"<DeviceMatrix {m}x{n} {self.precision} format={self.format!r}{chosen} "
                f"device={self.device.name!r} {self.nbytes} bytes>")

    # -- products -------------------------------------------------------------------------
    def matvec(self, x: Array, y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
               method: str = "auto") -> Array:
        """``y = alpha * A @ x + beta * y``.

        With a numpy ``x`` the result is a numpy array; a numpy ``y`` is updated in place and
        returned. With a ``pyopencl.array.Array`` ``x`` (same context) the result stays on the
        device: a given ``y`` array is updated in place, else a new one is returned. ``method``
        matters only for CSC input, whose product is a transpose product (see
        :data:`TRANSPOSE_METHODS`).
        """
        return self._apply(False, method, x, y, alpha, beta, columns=False)

    def rmatvec(self, x: Array, y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
                method: str = "auto") -> Array:
        """``y = alpha * A.T @ x + beta * y``, without forming A^T unless ``method`` asks for it.

        ``method`` is ``"atomic"`` (the format's transpose kernel: one work-item, or T, per stored
        row adding into y atomically), ``"transpose"`` (the normal kernel of a copy of A^T built
        on first use and kept: see :meth:`prepare_transpose`) or ``"auto"`` (the copy if it
        exists, else atomic where the device can, else the copy). Inputs and outputs as in
        :meth:`matvec`, with the shapes transposed. Raises :class:`DeviceError` for
        ``"atomic"`` in float64 on a device without 64-bit integer atomics.
        """
        return self._apply(True, method, x, y, alpha, beta, columns=False)

    def matmat(self, X: Array, Y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
               method: str = "auto") -> Array:
        """``Y = alpha * A @ X + beta * Y`` for ``X`` of shape (n, k), row- or column-major.

        The result has X's memory order. ``csr-*``, ``ell``, ``ellr``, ``ellr-t``, ``sell`` and
        ``pjds`` read each matrix entry once per block of up to 16 columns; ``coo``, ``hyb`` and
        ``dia`` (and transpose products) run one product per column. numpy or pyopencl arrays as in
        :meth:`matvec`.
        """
        return self._apply(False, method, X, Y, alpha, beta, columns=True)

    def rmatmat(self, X: Array, Y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
                method: str = "auto") -> Array:
        """``Y = alpha * A.T @ X + beta * Y`` for ``X`` of shape (m, k) (see :meth:`matmat` and
        :meth:`rmatvec`)."""
        return self._apply(True, method, X, Y, alpha, beta, columns=True)

    def __matmul__(self, x: Array) -> Array:
        x_ndim = len(x.shape) if isinstance(x, cl_array.Array) else np.ndim(x)
        return self.matmat(x) if x_ndim == 2 else self.matvec(x)

    def _apply(self, transposed: bool, method: str, x: object, y: object, alpha: float,
               beta: float, columns: bool) -> Array:
        """The one generic product: checks, transfers, alpha/beta, then the launch."""
        if method not in TRANSPOSE_METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, TRANSPOSE_METHODS))}, "
                             f"got {method!r}")
        m, n = self.shape[::-1] if transposed else self.shape
        if method == "atomic" and self._needs_transpose_kernel(transposed):
            self._check_atomics()
        names = ("X", "Y") if columns else ("x", "y")
        on_device = isinstance(x, cl_array.Array)
        in_shape, out_shape = self._shapes(x, m, n, columns, names[0])
        alpha_v, beta_v = self._scalar(alpha, "alpha"), self._scalar(beta, "beta")
        if on_device:
            x_dev = self._device_input(x, in_shape, names[0])
            y_dev = self._device_output(y, out_shape, names[1], x_dev)
            if x_dev is not None and x_dev is x and x.base_data == y_dev.base_data:
                # x and y in one buffer: the kernels would read x while writing y
                x_dev = x.copy(queue=self._device.queue)
        else:
            x_host = self._host_input(x, in_shape, names[0])
            y_host = self._host_output(y, out_shape, names[1])
        if 0 in out_shape:
            if on_device:
                return y_dev
            return y_host if y_host is not None else np.zeros(out_shape, self.dtype)
        queue = self._device.queue
        with self._lock:
            if not on_device:
                x_dev = cl_array.to_device(queue, x_host) if x_host.size else None
                if y_host is not None and beta_v != 0:
                    y_dev = cl_array.to_device(queue, _contiguous(y_host))
                else:
                    order = "F" if x_host.ndim == 2 and _is_fortran(x_host) else "C"
                    y_dev = cl_array.empty(queue, out_shape, self.dtype, order=order)
            launch = self._launcher(transposed, method, columns)
            self.last_events = launch(queue, x_dev, y_dev, alpha_v, beta_v)
            if on_device:
                return y_dev
            result = y_dev.get(queue)
        if y_host is None:
            return result
        y_host[...] = result
        return y_host

    # -- which kernel runs a product --------------------------------------------------------
    def _needs_transpose_kernel(self, transposed: bool) -> bool:
        """True when the product is a transpose product of the stored arrays."""
        return transposed != self._transposed_storage

    def _atomics_ok(self) -> bool:
        return not (self._fmt.transpose_atomics and self.dtype == np.float64
                    and not self._device.int64_atomics)

    def _check_atomics(self) -> None:
        if not self._atomics_ok():
            raise DeviceError(
                f"{self._device.name} has no 64-bit integer atomics (cl_khr_int64_base_atomics), "
                f"which the float64 transpose kernel of format {self.format!r} needs; use "
                "method='transpose' (or 'auto'), or dtype=float32"
            )

    def _launcher(self, transposed: bool, method: str, columns: bool) -> Callable[..., list]:
        """launch(queue, x, y, alpha, beta) -> events on device arrays, for this product."""
        fmt, use_t = self._fmt, False
        if self._needs_transpose_kernel(transposed):
            if method == "transpose" or (method == "auto" and (
                    self._copy is not None or not self._atomics_ok())):
                fmt = self._transposed_copy()
            else:
                use_t = True
        if columns:
            return lambda q, X, Y, a, b: self._launch_columns(fmt, use_t, q, X, Y, a, b)
        kernel = fmt.launch_t if use_t else fmt.launch
        return lambda q, x, y, a, b: kernel(q, x.data if x is not None else None, y.data, a, b)

    def _launch_columns(self, fmt: Format, use_t: bool, queue: cl.CommandQueue,
                        X: cl_array.Array | None, Y: cl_array.Array, alpha: np.generic,
                        beta: np.generic) -> list[cl.Event]:
        """Y = alpha op(A) X + beta Y: the block kernel where the format has one, else one
        product per column through contiguous work vectors."""
        k = Y.shape[1]
        launch = fmt.launch_t if use_t else fmt.launch
        if k == 1:  # one column is a contiguous vector in either order
            return launch(queue, X.data if X is not None else None, Y.data, alpha, beta)
        if not use_t and fmt.has_matmat:
            x_buf = X.data if X is not None else Y.data  # without columns A has no entries
            x_row, x_col = _element_strides(X) if X is not None else (0, 0)
            strides = Strides(k, x_row, x_col, *_element_strides(Y))
            return fmt.launch_matmat(queue, x_buf, Y.data, strides, alpha, beta)
        if self._vectors is None:
            self._vectors = DeviceVectors(self._device, self.dtype)
        vec = self._vectors
        n_in, m_out = (X.shape[0] if X is not None else 0), Y.shape[0]
        x_col = cl_array.empty(queue, n_in, self.dtype) if n_in else None
        y_col = cl_array.empty(queue, m_out, self.dtype)
        (x_row, x_step), (y_row, y_step) = (_element_strides(X) if X is not None else (0, 0),
                                            _element_strides(Y))
        events: list[cl.Event | None] = []
        for j in range(k):
            if x_col is not None:
                events.append(vec.copy_strided(n_in, X, j * x_step, x_row, x_col, 0, 1))
            if beta != 0:
                events.append(vec.copy_strided(m_out, Y, j * y_step, y_row, y_col, 0, 1))
            events += launch(queue, x_col.data if x_col is not None else None, y_col.data,
                             alpha, beta)
            events.append(vec.copy_strided(m_out, y_col, 0, 1, Y, j * y_step, y_row))
        return [e for e in events if e is not None]

    # -- the transposed copy ----------------------------------------------------------------
    def prepare_transpose(self) -> int:
        """Build the transposed copy that ``method="transpose"`` uses (once; later calls return at
        once) and return its device bytes, which :attr:`nbytes` then includes.

        The stored arrays are read back, transposed on the host (vectorised, through scipy) and
        uploaded in the same format with its default parameters, or in ``csr-vector`` where that
        format refuses A^T; nothing stays on the host. The one-time cost is a download, a
        transposition and an upload of the matrix: many times one product.
        """
        with self._lock:
            return self._transposed_copy().nbytes

    @property
    def transpose_copy(self) -> tuple[str, dict[str, int]] | None:
        """(format, layout parameters) of the transposed copy that ``method="transpose"`` uses,
        once built (:meth:`prepare_transpose`); None before."""
        copy = self._copy
        return None if copy is None else (copy.name, dict(copy.params))

    def release_transpose(self) -> None:
        """Drop the transposed copy (its device memory is freed when no product uses it)."""
        with self._lock:
            self._copy = None

    def _transposed_copy(self) -> Format:
        """The stored arrays' transpose in a format of its own (built on first use; call with the
        lock held)."""
        if self._copy is None:
            rows, cols, vals = self._fmt.to_coo(self._fmt.download())
            m, n = self._fmt.shape
            csr_t = canonical_csr(sp.coo_matrix((vals, (cols, rows)), shape=(n, m)), self.dtype)
            layout = self._fmt.layout
            precision = self._precision
            try:
                copy = convert(csr_t, self.format, layout, precision)
            except UnsuitableFormatError:
                copy = convert(csr_t, FALLBACK_TRANSPOSE_FORMAT, layout, precision)
            del csr_t
            copy.upload(self._device)
            self._copy = copy
        return self._copy

    # -- argument checks --------------------------------------------------------------------
    def _shapes(self, x: object, m: int, n: int, columns: bool, what: str
                ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Expected (input, output) shapes; for several right-hand sides k comes from x."""
        if not columns:
            return (n,), (m,)
        shape = tuple(x.shape) if isinstance(x, cl_array.Array) else np.shape(x)
        if len(shape) != 2:
            raise ValueError(f"{what} has shape {shape}, expected ({n}, k)")
        k = int(shape[1])
        if max(n, m) * k > INDEX_LIMIT:
            raise IndexOverflowError(
                f"{what} with {k} columns has more than {INDEX_LIMIT} elements, beyond the "
                "32-bit indices of the kernels; multiply fewer columns at a time"
            )
        return (n, k), (m, k)

    def _scalar(self, value: object, what: str) -> np.generic:
        arr = np.asarray(value)
        if arr.ndim != 0 or arr.dtype.kind not in "biuf":
            raise TypeError(f"{what} must be a real number, got {value!r}")
        return self.dtype.type(arr)

    def _host_input(self, x: object, shape: tuple[int, ...], what: str) -> np.ndarray:
        arr = np.asarray(x)
        if arr.shape != shape:
            raise ValueError(f"{what} has shape {arr.shape}, expected {shape}")
        _check_real(arr.dtype, what, arr.ndim)
        # a copy in the matrix's dtype when x is another type, strided, reversed or Fortran-ordered
        if arr.ndim == 2 and _is_fortran(arr):
            return np.asfortranarray(arr, dtype=self.dtype)
        return np.ascontiguousarray(arr, dtype=self.dtype)

    def _host_output(self, y: object, shape: tuple[int, ...], what: str) -> np.ndarray | None:
        if y is None:
            return None if 0 not in shape else np.zeros(shape, self.dtype)
        if not isinstance(y, np.ndarray):
            raise TypeError(f"{what} must be a numpy array when the input is one, got "
                            f"{type(y).__name__}")
        self._check_output(y, shape, what)
        if not y.flags.writeable:
            raise ValueError(f"{what} is read-only; it is updated in place")
        return y

    def _check_output(self, y: np.ndarray | cl_array.Array, shape: tuple[int, ...], what: str
                      ) -> None:
        if y.shape != shape:
            raise ValueError(f"{what} has shape {y.shape}, expected {shape}")
        if y.dtype != self.dtype:
            raise TypeError(
                f"{what} has dtype {y.dtype}, expected {self.dtype} (it is updated in place)"
            )

    def _device_input(self, x: cl_array.Array, shape: tuple[int, ...], what: str
                      ) -> cl_array.Array | None:
        if x.shape != shape:
            raise ValueError(f"{what} has shape {x.shape}, expected {shape}")
        if x.context != self._device.context:
            raise ValueError(f"{what} lives in another OpenCL context than the matrix's device "
                             f"{self._device.name}; copy it there first")
        _check_real(x.dtype, what, x.ndim)
        if not x.flags.forc:
            raise ValueError(
                f"{what} is a non-contiguous pyopencl array (strides {x.strides}); pass a "
                "contiguous one (pyopencl cannot copy strided arrays) or a numpy array"
            )
        if x.size == 0:
            return None
        queue = self._device.queue
        if x.offset:
            if x.ndim == 2:
                raise ValueError(f"{what} must be a C- or F-contiguous array without offset")
            x = x.copy(queue=queue)
        if x.dtype != self.dtype:
            if _is_fortran(x):  # pyopencl's astype gives column-major data row-major strides
                return x.T.astype(self.dtype, queue=queue).T
            return x.astype(self.dtype, queue=queue)
        return x

    def _device_output(self, y: object, shape: tuple[int, ...], what: str,
                       x: cl_array.Array | None) -> cl_array.Array:
        queue = self._device.queue
        if y is None:
            order = "F" if x is not None and len(shape) == 2 and _is_fortran(x) else "C"
            return cl_array.empty(queue, shape, self.dtype, order=order)
        if not isinstance(y, cl_array.Array):
            raise TypeError(f"{what} must be a pyopencl array when the input is one, got "
                            f"{type(y).__name__}")
        self._check_output(y, shape, what)
        if y.context != self._device.context:
            raise ValueError(f"{what} lives in another OpenCL context than the matrix's device")
        if y.offset or not y.flags.forc:
            raise ValueError(f"{what} must be a contiguous array without offset (it is updated "
                             "in place)")
        return y

    # -- conversions ----------------------------------------------------------------------
    def to_scipy(self) -> sp.csr_matrix:
        """The stored matrix read back from the device as float CSR (sorted indices), also for
        CSC input."""
        with self._lock:
            rows, cols, vals = self._fmt.to_coo(self._fmt.download())
        if self._transposed_storage:
            rows, cols = cols, rows
        out = sp.csr_matrix((vals, (rows, cols)), shape=self.shape, dtype=self.dtype)
        out.sort_indices()
        return out

    def aslinearoperator(self) -> LinearOperator:
        """A scipy LinearOperator whose products (``matvec``, ``rmatvec``, ``matmat``,
        ``rmatmat``) run on the device."""
        return LinearOperator(
            self.shape,
            matvec=lambda v: self.matvec(np.ravel(v)),
            rmatvec=lambda v: self.rmatvec(np.ravel(v)),
            matmat=lambda V: self.matmat(np.asarray(V)),
            rmatmat=lambda V: self.rmatmat(np.asarray(V)),
            dtype=self.dtype,
        )


def _is_fortran(a: np.ndarray | cl_array.Array) -> bool:
    """Column-major and not also row-major (a single column counts as row-major)."""
    return bool(a.flags.f_contiguous and not a.flags.c_contiguous)


def _contiguous(a: np.ndarray) -> np.ndarray:
    """``a`` itself when C- or F-contiguous, else a C-ordered copy."""
    return a if a.flags.c_contiguous or a.flags.f_contiguous else np.ascontiguousarray(a)


def _element_strides(a: cl_array.Array) -> tuple[int, ...]:
    """Strides in elements (a 1-D array counts as one column)."""
    strides = tuple(s // a.dtype.itemsize for s in a.strides)
    return strides if len(strides) == 2 else (1, a.shape[0])
