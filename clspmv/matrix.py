"""DeviceMatrix: a sparse matrix stored on an OpenCL device in one format, and its products.

Everything format-independent lives here once: which kernel runs a product, alpha/beta, output
allocation and the block products (rows of a longer vector, column maps), for the product
(``matvec``), the transpose product (``rmatvec``) and several right-hand sides (``matmat``,
``rmatmat``). The argument checks and vector transfers are :mod:`clspmv.arguments`, the input
canonicalisation :mod:`clspmv.canonical`, the column-by-column products and the transposed copy
:mod:`clspmv.dispatch`.

Above 400 lines for a reason: this is the one public class of the package, and most of its length
is the documentation of its public methods and properties (construction, facts, four products
with their block forms, the transposed copy, conversions, the scipy names that need its state);
every piece with a job of its own has moved to the modules named above, the scipy operators,
the transposed view and the pickled state to :mod:`clspmv.sparse_api`, the numpy buffers of CPU
devices to :mod:`clspmv.host_buffers`.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Callable

import numpy as np
import pyopencl as cl
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from . import host_buffers
from .arguments import Array, Operands, product_shapes, row_block, scalar_arg
from .canonical import canonical_csr
from .device import Device, select_device
from .dispatch import (
    FALLBACK_TRANSPOSE_FORMAT,
    global_columns,
    launch_columns,
    transposed_copy,
)
from .early_upload import of_given_csr
from .errors import DeviceError
from .format_choice import CHOSEN, check_format, check_parameters, choose
from .formats import FORMAT_CLASSES, FORMATS, Format, convert, format_class
from .formats.base import Triplets
from .formats.conversion import check_int
from .formats.csr_store import total_nbytes
from .formats.layout import check_work_group_size
from .matrix_state import host_state, rebuild, restore
from .model import Selection
from .model.order_probe import ensure_ell_order
from .precision import Precision, resolve
from .replay import ProductReplay, Recording, replay_of
from .sparse_api import ScipyOperators, TransposedMatrix, diagonal_offset
from .vectors import DeviceVectors

TRANSPOSE_METHODS = ("auto", "atomic", "transpose")
"""How a product with the transpose of the stored arrays runs: ``"atomic"``, the format's own
transpose kernel (atomic scatter into y; DIA's gathers without atomics); ``"transpose"``, the
normal kernel of a transposed copy built once on first use; ``"auto"``, the copy if it exists,
else the atomic kernel where the device can run it, else the copy."""

__all__ = ["FALLBACK_TRANSPOSE_FORMAT", "FORMATS", "TRANSPOSE_METHODS", "DeviceMatrix",
           "canonical_csr"]


class DeviceMatrix(ScipyOperators):
    """A sparse matrix uploaded once to an OpenCL device in one storage format.

    Build one with :meth:`from_scipy`; multiply with :meth:`matvec` or ``M @ x``, by the transpose
    with :meth:`rmatvec`, several right-hand sides at once with :meth:`matmat`. Products are
    ``y = alpha * op(A) @ x + beta * y`` with BLAS semantics: when ``beta == 0`` the old ``y`` is
    never read. One DeviceMatrix may be used from several threads: its products are serialised by
    a lock.

    A ``scipy.sparse`` CSC matrix is stored as it is: its arrays are the CSR arrays of A^T, so
    ``matvec`` runs the format's transpose kernel and ``rmatvec`` its normal one
    (:attr:`transposed_storage` is True).

    It speaks scipy.sparse's array names where the meaning is the same
    (:mod:`clspmv.sparse_api`): ``nnz``, ``size``, ``shape``, ``ndim``, ``dtype``, ``T`` and
    ``transpose()`` (a transposed view), ``dot``, ``x @ M``, ``sum(axis)`` (products with ones
    on the device), ``diagonal(k)``, ``trace(offset)``, ``count_nonzero(axis)``, ``conj()``,
    ``toarray``, ``todense``, ``tocsr`` (= :meth:`to_scipy`, a ``csr_array``), ``astype``,
    ``copy``, pickling. What a device matrix does not do (``len(M)``, ``np.asarray(M)``,
    indexing, element-wise arithmetic, scipy's other methods) raises an error that says what to
    use instead (:class:`~clspmv.unsupported.UnsupportedOperationError` for scipy's names).
    :attr:`format` names the storage format, not scipy's ``"csr"``.
    """

    def __init__(self, fmt: Format, device: Device, transposed_storage: bool = False,
                 diagonal: np.ndarray | None = None, n_cols: int | None = None,
                 nnz: int | None = None) -> None:
        """Wrap an uploaded format (use :meth:`from_scipy`); its value type and the type its
        kernels sum in (:attr:`Format.accumulate`) are the matrix's :attr:`precision`.
        ``n_cols``: the column count of a format with a column map (see :meth:`from_scipy`);
        ``nnz``: the stored entries of A (None: counted from the device arrays when asked)."""
        self._nnz = nnz
        self._n_cols = global_columns(fmt, transposed_storage, n_cols)
        self._fmt = fmt
        self._device = device
        self._transposed_storage = transposed_storage
        self._diagonal = diagonal
        self._copy: Format | None = None
        self._vectors: DeviceVectors | None = None
        self._lock = threading.Lock()
        self._outputs = host_buffers.OutputPool()  # memory of new numpy outputs, reused
        # M @ x replayed (clspmv.replay): None until the first such product is recorded, False
        # where its launches cannot be replayed
        self._replay: ProductReplay | None | bool = None
        self.last_events: list[cl.Event] = []
        """The kernel events of the latest product (for profiling: needs a queue with profiling,
        see :attr:`Device.profiling`)."""
        self.last_transfers: dict[str, str] = {}
        """How x and y of the latest product reached the kernels: ``"in place"`` (a numpy array
        used where it lies, on a CPU device), ``"copied"`` or ``"device"`` (pyopencl arrays);
        see :mod:`clspmv.host_buffers`."""
        self.selection: Selection | None = None
        """Why this format: the :class:`clspmv.model.Selection` of ``format="auto"`` or
        ``"csr"`` (what was predicted for each candidate, its ``why``, the trial's times;
        :meth:`~clspmv.model.Selection.table` gives one row per candidate), else None."""
        self._chosen_as: str | None = None  # "auto" or "csr" with a selection

    # -- construction ---------------------------------------------------------------------
    @classmethod
    def from_scipy(
        cls,
        A: object,
        format: str = "auto",
        device: Device | str | None = None,
        dtype: object = None,
        work_group_size: int | None = None,
        column_map: object = None,
        n_cols: int | None = None,
        expected_products: int | None = None,
        trial: bool | None = None,
        **params: object,
    ) -> DeviceMatrix:
        """Convert ``A`` (scipy.sparse or dense 2-D array) to ``format`` and upload it.

        ``device`` is a :class:`Device`, a :func:`select_device` spec, or None for the default.
        ``dtype`` is float32, float64 (default: A's float type, else float64) or ``"mixed"``:
        values, x and y in float32 (:attr:`dtype` is float32) and every sum in float64
        (:attr:`precision` is ``"mixed"``); see :attr:`precision` for what that buys. ``params`` are
        the format's own parameters: ``threads_per_row`` (csr-vector, ellr-t), ``sigma`` (sell),
        ``width`` (hyb), ``items``, ``staged`` (coo, hyb: entries per work-item of the
        segmented reduction, and its kernel), ``block_entries`` (csr-adaptive), ``unroll`` (1,
        2, 4 or 8: the inner loop of the CSR and ELLPACK formats), ``row_major`` (ell, ellr,
        ellr-t: rows stored one after the other instead of column-major; by default on CPUs
        for ell and ellr rows as wide as the device's measured order says, :mod:`clspmv.ell_order`),
        ``diagonal_runs`` (dia: each 32 rows loop over the diagonals crossing them, branch-free;
        by default on GPUs), ``row_chunks`` (dia: a work-item per run of rows, each diagonal a
        loop over 64 of them; by default on CPUs), ``split_rows`` (csr-adaptive: tiles of
        ``block_entries`` entries whatever the rows; off by default), ``block_size`` (bsr: the
        side of its dense square blocks, a divisor of both dimensions up to 8; by default the
        one storing the fewest bytes), ``row_items`` (bsr: a work-item per row; by default on
        GPUs), ``spread`` (sell, pjds:
        the sorted slices dealt over the work-groups; by default on CPUs where sorting put most
        of the work in the work-groups one thread takes first).
        A CSC matrix (``csc_matrix`` or ``csc_array``) is not converted: its arrays are stored
        as the CSR arrays of its transpose.

        ``format="auto"`` (the default) takes the format with the least predicted kernel time
        on the device (:func:`clspmv.model.select`; the device is calibrated on first use unless
        ``CLSPMV_CALIBRATE=0``), or with ``expected_products=n`` the least predicted conversion
        plus n products; :attr:`selection` says what was predicted and why (``print(M.selection)``
        shows it; :meth:`~clspmv.model.Selection.table` gives one row per format). Where the ``n``
        products pay for it (a trial's predicted cost at most 5 % of theirs), or with
        ``trial=True``, the few likeliest formats are converted and timed on the device first
        and the fastest measured is kept (:mod:`clspmv.model.trial`; ``trial=False``: never;
        no trial with ``column_map`` or ``work_group_size``, which the trial's layouts lack).
        ``format="csr"`` makes the same choice among the CSR kernels only
        (:func:`~clspmv.format_choice.csr_kernels`: the formats that store CSR's arrays), and
        :attr:`format` names the one taken. With ``"auto"`` or ``"csr"`` the format parameters
        are the chosen format's defaults.

        ``column_map`` (integers, one per column of ``A``, all distinct) makes the matrix a block
        with compact columns, such as the non-local part of a distributed matrix: column ``j``
        of ``A`` is column ``column_map[j]`` of the m x ``n_cols`` matrix this returns (``n_cols``
        default: one past the largest entry). Only ``A``'s columns are stored; the kernels read
        ``x[column_map[j]]`` from a full-length x, and a transpose product adds into (and
        applies beta to) the entries ``y[column_map[j]]`` only, leaving the others as they are
        (zero in a new y). :meth:`matvec`'s ``row_offset`` places the rows in a longer y.

        Raises ValueError for an unknown format or parameter value or for a format parameter
        with ``"auto"`` or ``"csr"``, TypeError for another ``dtype``, a parameter the format
        lacks (the message lists those it has) or of the wrong type, and for an ``A`` that is
        not real numbers (complex whatever ``dtype``, objects, strings, dates) or has masked
        entries; ValueError for an ``A`` that is not 2-D, a scipy matrix with corrupt index
        arrays, or (default ``dtype`` only) values float64 would round
        (:func:`clspmv.canonical.canonical_csr`); :class:`UnsuitableFormatError` when the format
        would pad absurdly, :class:`DeviceError` for float64 or ``"mixed"`` on a device without
        fp64 or data the device cannot hold, :class:`IndexOverflowError` beyond 32-bit indices.
        """
        check_format(format)
        check_parameters(format, params, _OWN_ARGUMENTS)
        if trial is not None and not isinstance(trial, (bool, np.bool_)):
            raise TypeError(f"trial must be True, False or None, got {trial!r}")
        if expected_products is not None:
            check_int("expected_products", expected_products)
        dev = select_device(device)
        if work_group_size is not None:  # 0 is not "the default"
            check_work_group_size(work_group_size, dev.max_work_group_size)
        transposed = sp.issparse(A) and A.format == "csc"
        if column_map is not None and transposed:
            raise ValueError("column_map needs a CSR (or COO, dense) matrix: convert the CSC "
                             "matrix with A.tocsr() first")
        # The transpose of a CSC matrix is a CSR matrix sharing its arrays: no conversion. The
        # arrays are copied on the host only for a device that uses them in place: another
        # copies them in the upload, and keeps none of them on the host (the CSR kernels keep
        # row pointers of their own, canonical_csr's).
        private = dev.shares_host_pointer
        source = A.T if transposed else A
        # a CSR kernel's copy of A's indices and values starts now, beside the checks and the
        # kernel's metadata (clspmv.early_upload); unused where A turns out not canonical. Not
        # where a trial may time kernels on the queue meanwhile ("csr" with expected products)
        csr_chosen = format == "csr" and not trial and expected_products is None
        early = (of_given_csr(source, dtype, dev)
                 if csr_chosen or FORMAT_CLASSES.get(format, Format).stores_given_arrays
                 else None)
        try:
            csr = canonical_csr(source, dtype, copy=private)
            del source
            precision = resolve(dtype, csr.dtype)
            dev.require(precision)
            selection, chosen_as = None, format if format in CHOSEN else None
            if chosen_as is not None:
                plain = column_map is None and work_group_size is None
                selection = choose(chosen_as, csr, dev, precision, expected_products,
                                   trial if plain else False, owned=private)
                format, params = selection.format, selection.params
            nnz = csr.nnz
            if selection is not None and selection.converted is not None:
                # the trial's winner, already on the device (the selection lets go of it)
                M = cls(selection.converted, dev, transposed_storage=transposed, n_cols=n_cols,
                        nnz=nnz)
                selection = dataclasses.replace(selection, converted=None)
            else:
                ensure_ell_order(dev, format, params)
                layout = FORMAT_CLASSES[format].layout_for(dev, work_group_size)
                fmt = convert(csr, format, layout, precision, column_map=column_map,
                              owned=private, **params)
                del csr
                if fmt.store is not None:
                    fmt.store.early = early
                M = cls.upload(fmt, dev, transposed_storage=transposed, n_cols=n_cols, nnz=nnz)
        finally:
            if early is not None:
                early.close()
        M.selection = selection
        M._chosen_as = chosen_as
        return M

    @classmethod
    def upload(cls, fmt: Format, device: Device, transposed_storage: bool = False,
               diagonal: np.ndarray | None = None, n_cols: int | None = None,
               nnz: int | None = None) -> DeviceMatrix:
        """Upload a converted matrix (:func:`clspmv.formats.convert`) to ``device`` and wrap it:
        the second half of :meth:`from_scipy`. ``transposed_storage``: ``fmt`` holds A^T (a CSC
        input); ``diagonal``: A's diagonal for :meth:`diagonal` (None: read from ``fmt``);
        ``n_cols``: see :meth:`from_scipy`'s ``column_map``; ``nnz``: see :attr:`nnz`."""
        fmt.upload(device)
        return cls(fmt, device, transposed_storage=transposed_storage, diagonal=diagonal,
                   n_cols=n_cols, nnz=nnz)

    # -- facts ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns)."""
        m, n = self._fmt.shape
        if self._n_cols is not None:
            return m, self._n_cols
        return (n, m) if self._transposed_storage else (m, n)

    @property
    def nnz(self) -> int:
        """Stored entries of A, as scipy counts them after ``sum_duplicates()``: duplicates
        summed into one, explicit zeros counted, padding of the storage format not (read from
        the canonical CSR at conversion; a dense input's zeros are not stored)."""
        if self._nnz is None:
            self._nnz = int(self._triplets()[0].size)
        return self._nnz

    @property
    def T(self) -> TransposedMatrix:  # noqa: N802 (scipy's name)
        """A transposed view, sharing this matrix's device arrays (nothing is copied): its
        products run :meth:`rmatvec` / :meth:`rmatmat`, its ``.T`` is this matrix."""
        return TransposedMatrix(self)

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
        """Storage format name (one of :data:`FORMATS`): the kernel actually taken, also when
        ``format="auto"`` or ``"csr"`` chose it (:attr:`selection` says why)."""
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
        return total_nbytes([self._fmt] + ([self._copy] if self._copy is not None else []))

    @property
    def params(self) -> dict[str, int]:
        """Layout parameters chosen for this matrix (threads per row, widths, sigma, ...)."""
        return dict(self._fmt.params)

    @property
    def work_group_size(self) -> int:
        """Work-items per work-group the kernels launch with (the caller's choice, else the
        format's preferred size on this device, else 256 or the device's maximum)."""
        return self._fmt.layout.work_group_size

    def retuned(self, work_group_size: int | None = None, format: str | None = None,
                **options: object) -> DeviceMatrix:
        """The same stored matrix launched with another work-group size and/or other kernel
        options (``unroll``; ``threads_per_row`` of ``csr-vector``), sharing the device buffers:
        nothing is converted or copied. The transposed copy is not shared.

        ``format`` switches between the CSR kernels (``csr-scalar``, ``csr-vector``,
        ``csr-adaptive``, ``csr-blocks``, ``csr-merge``, and ``csr-aligned`` where no row needs
        padding): the matrix's CSR arrays are shared, only the new kernel's metadata (row
        blocks, merge-path shares, the chunks of long rows) is built and uploaded; ``options``
        are then the new format's parameters (its defaults for the others), and
        ``work_group_size`` None is its default on the device.

        Raises ValueError for a format that cannot be retuned, a parameter that would change the
        stored arrays (e.g. ``row_major``: convert again with :meth:`from_scipy`) or a value the
        format refuses, and for a ``format`` outside the CSR family or one whose layout needs
        other arrays (the message says to convert again); TypeError for a parameter the format
        lacks.
        """
        if format is None:
            fmt = self._fmt.retuned(work_group_size, **options)  # type: ignore[arg-type]
        else:
            if work_group_size is not None:
                check_work_group_size(work_group_size, self._device.max_work_group_size)
            fmt = self._fmt.switched(format_class(format), work_group_size, **options)
        return DeviceMatrix(fmt, self._device, transposed_storage=self._transposed_storage,
                            diagonal=self._diagonal, n_cols=self._n_cols, nnz=self._nnz)

    def diagonal(self, k: int = 0) -> np.ndarray:
        """The ``k``-th diagonal (entries ``[i, i + k]``), as scipy's: the main one (``k=0``)
        is read back from the device on the first call and kept (a copy is returned; not at
        the conversion, whose time it would add to), any other is read back each time
        (:meth:`to_scipy`); empty where the diagonal lies outside the matrix."""
        k = diagonal_offset(k)
        if k != 0:
            return self.to_scipy().diagonal(k)
        if self._diagonal is None:
            self._diagonal = self._main_diagonal()
        return self._diagonal.copy()

    def _main_diagonal(self) -> np.ndarray:
        """The main diagonal read back: scipy's of the CSR arrays where the format stores them
        plain (A^T's for CSC input, the same), else summed from the stored entries."""
        store = self._fmt.store
        if store is not None and store.plain and self._fmt.column_map is None:
            with self._lock:
                arrays = store.download()
            csr = sp.csr_matrix((arrays["val"], arrays["col"], arrays["row_ptr"]),
                                shape=store.shape, copy=False)
            return csr.diagonal()
        rows, cols, vals = self._triplets()
        diag = np.zeros(min(self.shape), self.dtype)
        on = rows == cols
        np.add.at(diag, rows[on], vals[on])
        return diag

    def __repr__(self) -> str:
        m, n = self.shape
        chosen = f" ({self._chosen_as})" if self._chosen_as is not None else ""
        return (f"<DeviceMatrix {m}x{n} {self.precision} format={self.format!r}{chosen} "
                f"device={self.device.name!r} {self.nbytes} bytes>")

    # -- products -------------------------------------------------------------------------
    def matvec(self, x: Array, y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
               method: str = "auto", row_offset: int | None = None) -> Array:
        """``y = alpha * A @ x + beta * y``.

        With a numpy ``x`` the result is a numpy array; a numpy ``y`` is updated in place and
        returned. With a ``pyopencl.array.Array`` ``x`` (same context) the result stays on the
        device: a given ``y`` array is updated in place, else a new one is returned. ``method``
        matters only for CSC input, whose product is a transpose product (see
        :data:`TRANSPOSE_METHODS`). ``alpha`` and ``beta`` are any real numbers
        (:func:`clspmv.arguments.scalar_arg`); ``alpha`` must be finite (the kernels scale
        sums, the transpose kernels terms: NaN and Inf tell them apart), a NaN or infinite
        ``beta`` scales y as IEEE says. An operand beyond the device's largest allocation, or
        one its driver refuses, raises :class:`DeviceError` naming it and its bytes.

        ``row_offset``: the matrix is a row block of a larger one, and ``y`` (required) is the
        larger one's output: rows ``[row_offset, row_offset + m)`` of ``y`` get
        ``alpha * A @ x + beta * y``, its other rows are left as they are (several blocks, of
        any formats, thus fill one y). Not for CSC input.
        """
        return self._apply(False, method, x, y, alpha, beta, False, row_offset)

    def matvec_checked(self, x: Array | None, y: Array, alpha: np.generic,
                       beta: np.generic, row_offset: int = 0) -> list[cl.Event]:
        """:meth:`matvec` for operands the caller has checked once for many products (as
        :mod:`clspmv.distributed` does): ``x`` and ``y`` contiguous pyopencl arrays of this
        matrix's dtype on its device's queue, without offset (``x`` None for a matrix without
        columns), ``y`` holding the rows ``[row_offset, row_offset + m)``; ``alpha`` and
        ``beta`` of :attr:`dtype` (finite ``alpha``). Enqueues the product and returns its
        events (:attr:`last_events`), without :meth:`matvec`'s checks and conversions, whose
        host time counts where the device's product takes tens of microseconds."""
        if self._transposed_storage:
            raise ValueError("matvec_checked needs CSR storage; this matrix holds A^T (CSC input)")
        with self._lock:
            launch = self._launcher(False, "auto", False, row_offset, True)
            self.last_events = launch(self._device.queue, x, y, alpha, beta)
            return self.last_events

    def rmatvec(self, x: Array, y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
                method: str = "auto", row_offset: int | None = None) -> Array:
        """``y = alpha * A.T @ x + beta * y``, without forming A^T unless ``method`` asks for it.

        ``method`` is ``"atomic"`` (the format's transpose kernel: one work-item, or T, per stored
        row adding into y atomically), ``"transpose"`` (the normal kernel of a copy of A^T built
        on first use and kept: see :meth:`prepare_transpose`) or ``"auto"`` (the copy if it
        exists, else atomic where the device can, else the copy). Inputs and outputs as in
        :meth:`matvec`, with the shapes transposed. Raises :class:`DeviceError` for
        ``"atomic"`` in float64 on a device without 64-bit integer atomics.

        ``row_offset``: the matrix is a row block of a larger one and ``x`` the larger one's
        input: rows ``[row_offset, row_offset + m)`` of ``x`` are read. A block (a
        ``row_offset``, or a ``column_map``) runs the format's own transpose kernel (``"auto"``
        means ``"atomic"``; ``"transpose"`` is refused).
        """
        return self._apply(True, method, x, y, alpha, beta, False, row_offset)

    def matmat(self, X: Array, Y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
               method: str = "auto", row_offset: int | None = None) -> Array:
        """``Y = alpha * A @ X + beta * Y`` for ``X`` of shape (n, k), row- or column-major.

        The result has X's memory order. ``csr-*``, ``ell``, ``ellr``, ``ellr-t``, ``sell`` and
        ``pjds`` read each matrix entry once per block of up to 16 columns; ``coo``, ``hyb`` and
        ``dia`` (and transpose products) run one product per column. numpy or pyopencl arrays as in
        :meth:`matvec`; ``row_offset`` places the rows in a taller ``Y`` as there.
        """
        return self._apply(False, method, X, Y, alpha, beta, True, row_offset)

    def rmatmat(self, X: Array, Y: Array | None = None, alpha: float = 1.0, beta: float = 0.0,
                method: str = "auto", row_offset: int | None = None) -> Array:
        """``Y = alpha * A.T @ X + beta * Y`` for ``X`` of shape (m, k) (see :meth:`matmat` and
        :meth:`rmatvec`)."""
        return self._apply(True, method, X, Y, alpha, beta, True, row_offset)

    def _apply(self, transposed: bool, method: str, x: object, y: object, alpha: float,
               beta: float, columns: bool, row_offset: int | None = None) -> Array:
        """The one generic product (:meth:`_product`); where it fails or is interrupted (Ctrl-C
        in a transfer, a launch or the wait, replayed or not) the queue is drained
        (:func:`clspmv.host_buffers.drain`) before the exception goes on, and the product's
        buffers on numpy memory with it."""
        try:
            return self._product(transposed, method, x, y, alpha, beta, columns, row_offset)
        except BaseException:
            host_buffers.drain(self._device.queue)
            raise

    def _product(self, transposed: bool, method: str, x: object, y: object, alpha: float,
                 beta: float, columns: bool, row_offset: int | None) -> Array:
        """:meth:`_apply`'s product: checks, transfers, alpha/beta, then the launch."""
        if method not in TRANSPOSE_METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, TRANSPOSE_METHODS))}, "
                             f"got {method!r}")
        default = self._default_product(transposed, method, y, alpha, beta, columns, row_offset)
        replay = self._replay
        if default and replay and replay.accepts(x):
            with self._lock:
                result, self.last_events = replay(x)
                self.last_transfers = {"x": host_buffers.IN_PLACE, "y": host_buffers.IN_PLACE}
                return result
        m, n = self.shape[::-1] if transposed else self.shape
        names = ("X", "Y") if columns else ("x", "y")
        block = None
        if row_offset is not None:
            if self._transposed_storage:
                raise ValueError("row_offset needs CSR storage; this matrix holds A^T (CSC "
                                 "input): convert it with A.tocsr()")
            block = row_block(row_offset, self._fmt.shape[0], x if transposed else y,
                              names[0] if transposed else names[1])
        mapped = self._fmt.column_map is not None
        if self._needs_transpose_kernel(transposed):
            if block is not None or mapped:
                if method == "transpose":
                    raise ValueError("a block's transpose product (row_offset or column_map) "
                                     "runs the format's own kernel: use method='atomic' or "
                                     "'auto'")
                method = "atomic"
            if method == "atomic":
                self._check_atomics()
        # y entries outside the block stay as they are: y is read also when beta == 0
        keep_y = (block is not None and not transposed) or (mapped and transposed)
        in_shape, out_shape = product_shapes(x, m, n, columns, names[0])
        if block is not None and transposed:
            in_shape = (block.length, *in_shape[1:])
        elif block is not None:
            out_shape = (block.length, *out_shape[1:])
        dtype = self.dtype
        alpha_v = scalar_arg(alpha, "alpha", dtype, finite=True)
        beta_v = scalar_arg(beta, "beta", dtype)
        ops = Operands(x, y, (in_shape, out_shape), names, self._device, dtype, keep_y)
        if ops.empty:
            return ops.result()
        with self._lock:
            ops.to_device(beta_v, self._outputs)
            launch = self._launcher(transposed, method, columns,
                                    block.offset if block is not None else 0, keep_y)
            if default and self._replay is None and self._device.shares_host_pointer \
                    and ops.transfers == {"x": host_buffers.IN_PLACE, "y": host_buffers.IN_PLACE}:
                with Recording() as launches:
                    self.last_events = launch(self._device.queue, ops.x_dev, ops.y_dev,
                                              alpha_v, beta_v)
                self._replay = replay_of(launches, ops.x_dev.data, ops.y_dev.data,
                                         self.last_events, self._device, self.shape, dtype,
                                         self._outputs) or False
            else:
                self.last_events = launch(self._device.queue, ops.x_dev, ops.y_dev, alpha_v,
                                          beta_v)
            self.last_transfers = ops.transfers
            ops.launched(self.last_events)
            return ops.result()

    def _default_product(self, transposed: bool, method: str, y: object, alpha: object,
                         beta: object, columns: bool, row_offset: int | None) -> bool:
        """True for ``M @ x`` as it comes: a forward vector product of the stored arrays into a
        new y, alpha 1 and beta 0 (what :mod:`clspmv.replay` records and replays)."""
        return (y is None and not transposed and not columns and row_offset is None
                and method == "auto" and not self._transposed_storage
                and type(alpha) is float and alpha == 1.0
                and type(beta) is float and beta == 0.0)

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
                "method='transpose' (or 'auto'; not for a block), or dtype=float32"
            )

    def _launcher(self, transposed: bool, method: str, columns: bool, row0: int,
                  keep_y: bool) -> Callable[..., list]:
        """launch(queue, x, y, alpha, beta) -> events on device arrays, for this product."""
        fmt, use_t = self._fmt, False
        if self._needs_transpose_kernel(transposed):
            if method == "transpose" or (method == "auto" and (
                    self._copy is not None or not self._atomics_ok())):
                fmt = self._transposed_copy()
            else:
                use_t = True
        if columns:
            if self._vectors is None:
                self._vectors = DeviceVectors(self._device, self.dtype)
            vectors = self._vectors
            return lambda q, X, Y, a, b: launch_columns(fmt, use_t, vectors, q, X, Y, a, b, row0,
                                                        keep_y)
        kernel = fmt.launch_t if use_t else fmt.launch
        return lambda q, x, y, a, b: kernel(q, x.data if x is not None else None, y.data, a, b,
                                            row0)

    # -- the transposed copy ----------------------------------------------------------------
    def prepare_transpose(self) -> int:
        """Build the transposed copy that ``method="transpose"`` uses (once; later calls return at
        once) and return its device bytes, which :attr:`nbytes` then includes.

        The stored arrays are read back, transposed on the host (vectorised, through scipy) and
        uploaded in the same format with its default parameters, or in ``csr-vector`` where that
        format refuses A^T; nothing stays on the host. The one-time cost is a download, a
        transposition and an upload of the matrix: many times one product. Raises ValueError
        for a matrix with a ``column_map``.
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
            self._copy = transposed_copy(self._fmt, self._device, self._precision)
        return self._copy

    # -- conversions ----------------------------------------------------------------------
    def to_scipy(self) -> sp.csr_array:
        """The stored matrix read back from the device as a ``scipy.sparse.csr_array`` of
        :attr:`dtype` with sorted indices, also for CSC input (``scipy.sparse.csr_matrix(
        M.to_scipy())`` for the older matrix class). Explicit zeros are kept, except by
        ``dia``, which does not store them."""
        rows, cols, vals = self._triplets()
        if self._transposed_storage:
            rows, cols = cols, rows
        out = sp.csr_array((vals, (rows, cols)), shape=self.shape, dtype=self.dtype)
        out.sort_indices()
        return out

    def _line_sums(self) -> np.ndarray:
        """Sums along the stored rows (A's rows, or its columns for CSC input), by the normal
        kernel: what :meth:`sum` adds up for the total."""
        if self._transposed_storage:
            return self.rmatvec(np.ones(self.shape[0], self.dtype))
        return self.matvec(np.ones(self.shape[1], self.dtype))

    def toarray(self, order: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The matrix read back from the device as a dense array (scipy's ``toarray``)."""
        return self.to_scipy().toarray(order=order, out=out)

    def astype(self, dtype: object) -> DeviceMatrix:
        """A new device matrix of ``dtype`` (float32, float64 or ``"mixed"``) in the same format,
        on the same device: the stored arrays are read back, converted and uploaded again with
        the parameters this matrix was converted with (those given to :meth:`from_scipy`, and
        :meth:`retuned`'s), the others derived for ``dtype`` as :meth:`from_scipy` derives them
        (this matrix is unchanged). ValueError (or TypeError) where a given parameter does not
        suit ``dtype``, e.g. ``csr-merge``'s ``items`` beyond what float64 fits in local
        memory."""
        return rebuild(DeviceMatrix, self._state(), self._device, dtype)

    def copy(self) -> DeviceMatrix:
        """A new device matrix equal to this one (same format, parameters, precision and
        device), made like :meth:`astype`; ``copy.copy(M)`` and ``copy.deepcopy(M)`` are this
        too (the device is kept, a user's context and queue included)."""
        return rebuild(DeviceMatrix, self._state(), self._device)

    def __copy__(self) -> DeviceMatrix:
        return self.copy()

    def __deepcopy__(self, memo: dict) -> DeviceMatrix:
        return self.copy()

    def __reduce__(self) -> tuple:
        """Pickling stores the matrix read back (CSR arrays of the stored matrix), its format,
        the parameters it was converted with, precision, column map and the device's platform
        and name (:mod:`clspmv.matrix_state`); unpickling uploads it again to that device if
        present, else to the default device with a RuntimeWarning (the parameters not given are
        derived for the device it lands on). A user's context or queue is not stored (clspmv's
        own is used). A state that clspmv did not write raises :class:`ClspmvError`."""
        return restore, (DeviceMatrix, self._state())

    def _state(self) -> dict[str, object]:
        nnz = self.nnz  # before the lock: counting may read the arrays back
        with self._lock:
            return host_state(self._fmt, self._transposed_storage, self._n_cols, nnz,
                              self._device)

    def _triplets(self) -> Triplets:
        """The stored entries read back, columns in the global numbering of a column map."""
        with self._lock:
            rows, cols, vals = self._fmt.to_coo(self._fmt.download())
        if self._fmt.column_map is not None:
            cols = self._fmt.column_map[cols]
        return rows, cols, vals

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


_OWN_ARGUMENTS = tuple(inspect.signature(DeviceMatrix.from_scipy).parameters)[2:-1]
"""The keyword arguments of :meth:`DeviceMatrix.from_scipy` besides the format's parameters."""
