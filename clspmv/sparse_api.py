"""The scipy.sparse names of a device matrix, where their meaning is the same.

:class:`ScipyOperators` holds what :class:`clspmv.DeviceMatrix` and its transposed view
(:class:`TransposedMatrix`, ``M.T``) share: ``@`` on either side, ``dot``, ``ndim``, ``size``,
``todense``, ``tocsr``, the reductions (``sum`` by products with ones on the device, as
cupyx.scipy.sparse computes it; ``trace``, ``diagonal``, ``count_nonzero``), ``transpose``,
``conj``, and the clear errors of what scipy has and clspmv has not (``len(M)``,
``np.asarray(M)``, indexing, element-wise arithmetic, scipy's other methods:
:class:`~clspmv.unsupported.UnsupportedOperationError`, from its base
:class:`~clspmv.sparse_refusals.ScipyRefusals`). Pickling, :meth:`DeviceMatrix.astype` and
:meth:`DeviceMatrix.copy` go through the plain-data state of :mod:`clspmv.matrix_state`.

Semantics follow scipy's sparse *arrays* (``csr_array``): ``to_scipy()`` and ``tocsr()`` return a
``csr_array``, ``todense()`` an ``ndarray`` like ``toarray()`` (not ``np.matrix``), ``sum(axis)``
a 1-D ``ndarray``, ``size`` counts the stored values (``nnz``), ``M * x`` would be element-wise
(refused here: use ``M @ x``), and ``M @ B`` with a scipy sparse ``B`` is refused with a
TypeError (clspmv multiplies by dense vectors and matrices; ``M.to_scipy() @ B`` computes it on
the host). The names of scipy's older ``spmatrix`` classes (``getnnz``, ``getformat``, ``A``,
...) are not there, as on scipy's arrays.
"""

from __future__ import annotations

import operator

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .arguments import real_array
from .sparse_refusals import ScipyRefusals
from .unsupported import UnsupportedOperationError


def diagonal_offset(k: object, what: str = "k") -> int:
    """``k`` as the integer offset of a diagonal (TypeError for anything but an integer)."""
    try:
        return operator.index(k)
    except TypeError:
        raise TypeError(f"{what} must be an integer (a diagonal's offset), got {k!r}") from None


def _axis(axis: object) -> int | None:
    """``axis`` of a reduction (:meth:`ScipyOperators.sum`, ``count_nonzero``) as 0, 1 or None
    (both), as scipy reads it: -2 and -1 count from the end, a tuple of both axes is None.
    TypeError for a non-integer, ValueError for an axis beyond the two or named twice."""
    if axis is None:
        return None
    axes = axis if isinstance(axis, tuple) else (axis,)
    if not axes:
        raise ValueError("axis=() sums nothing (scipy.sparse refuses it too): use M.toarray() "
                         "or M.copy()")
    out = []
    for a in axes:
        try:
            index = operator.index(a)
        except TypeError:
            raise TypeError(f"axis must be 0, 1, -1, -2, None or a tuple of them, got "
                            f"{axis!r}") from None
        if not -2 <= index < 2:
            raise ValueError(f"axis {index} is out of range for a 2-D matrix (0, 1, -1, -2)")
        out.append(index % 2)
    if len(set(out)) != len(out):
        raise ValueError(f"duplicate value in axis {axis!r}")
    return out[0] if len(out) == 1 else None


def _operand(other: object) -> cl_array.Array | np.ndarray:
    """``other`` as the dense operand of ``@``: a pyopencl array as it is, anything else
    converted once to a numpy array of real numbers (TypeError for a sparse operand)."""
    if isinstance(other, cl_array.Array):
        return other
    if sp.issparse(other) or isinstance(other, ScipyOperators):
        raise TypeError(
            f"clspmv multiplies a device matrix by dense vectors and matrices (numpy or "
            f"pyopencl arrays), not by a sparse {type(other).__name__}: use "
            "M.to_scipy() @ B for a sparse product on the host, or B.toarray()")
    return real_array(other, "x")


class ScipyOperators(ScipyRefusals):
    """scipy.sparse operators and names on top of ``shape``, ``dtype``, ``nnz``, ``T``,
    ``matvec``, ``rmatvec``, ``matmat``, ``rmatmat``, ``toarray``, ``to_scipy`` and ``copy``
    (see the module docstring)."""

    __array_ufunc__ = None
    """numpy defers to :meth:`__rmatmul__` (``x @ M``) instead of trying a ufunc."""

    shape: tuple[int, int]
    dtype: np.dtype
    nnz: int

    @property
    def ndim(self) -> int:
        """2, as for every scipy sparse matrix."""
        return 2

    @property
    def size(self) -> int:
        """The stored values, as scipy's sparse arrays count them: :attr:`nnz` (explicit zeros
        included; not ``m * n``; :meth:`count_nonzero` leaves the zeros out)."""
        return self.nnz

    # -- reductions -----------------------------------------------------------------------
    def sum(self, axis: object = None, dtype: object = None, out: np.ndarray | None = None
            ) -> np.ndarray | np.generic:
        """The sum of the entries (``axis=None``: a numpy scalar), of each column (``axis=0``:
        a 1-D array of n) or of each row (``axis=1``: a 1-D array of m), as scipy's sparse
        arrays return them (-1 and -2 count from the end).

        Computed on the device as cupyx.scipy.sparse does, by products with a vector of ones
        (``axis=1``: ``M @ ones``; ``axis=0``: ``ones @ M``, a transpose product; the total
        adds up the stored rows' sums on the host), so each row's sum is rounded as a product
        is (in :attr:`accumulate_dtype`, then to :attr:`dtype`). The result is of :attr:`dtype`;
        ``dtype`` may name that or a narrower float type (a wider one would claim precision the
        device sums do not have: ValueError naming what gives it); ``out``: an array of the
        result's shape that receives it (cast as numpy casts)."""
        axis = _axis(axis)
        kind = self._sum_dtype(dtype)
        if axis is None:
            return np.sum(self._line_sums(), dtype=kind, out=out)
        m, n = self.shape
        sums = (self.rmatvec(np.ones(m, self.dtype)) if axis == 0
                else self.matvec(np.ones(n, self.dtype)))
        if out is None:
            return sums.astype(kind, copy=False)
        if np.shape(out) != sums.shape:
            raise ValueError(f"out has shape {np.shape(out)}, the sums along axis {axis} "
                             f"{sums.shape} (out dimensions do not match shape)")
        out[...] = sums
        return out

    def _sum_dtype(self, dtype: object) -> np.dtype:
        """The result type of :meth:`sum`: :attr:`dtype`, or the narrower float ``dtype``."""
        if dtype is None:
            return self.dtype
        kind = np.dtype(dtype)
        if kind.kind != "f" or kind.itemsize > self.dtype.itemsize:
            wider = (", or M.astype(np.float64).sum() on a device with float64"
                     if kind == np.float64 else "")
            raise ValueError(
                f"sum(dtype={kind.name}): the device returns its sums in {self.dtype.name}; for "
                f"{kind.name} sums use M.to_scipy().sum(dtype=...) on the host{wider}")
        return kind

    def _line_sums(self) -> np.ndarray:
        """Sums along one axis, whichever the device computes best; their sum is the total."""
        return self.matvec(np.ones(self.shape[1], self.dtype))

    def diagonal(self, k: int = 0) -> np.ndarray:
        """The ``k``-th diagonal (entries ``[i, i + k]``) read back from the device, as
        scipy's (empty where the diagonal lies outside the matrix)."""
        return self.to_scipy().diagonal(diagonal_offset(k))

    def trace(self, offset: int = 0) -> np.generic:
        """The sum of the diagonal ``offset`` (entries ``[i, i + offset]``), as scipy's: a
        numpy scalar of :attr:`dtype`."""
        return self.diagonal(diagonal_offset(offset, "offset")).sum()

    def count_nonzero(self, axis: object = None) -> np.int64 | np.ndarray:
        """The entries that are not zero (``axis=None``: a ``numpy.int64``; ``axis=0``: per
        column, ``axis=1``: per row, 1-D arrays), as scipy's: explicit zeros are left out,
        unlike :attr:`nnz`, and NaN counts. The matrix is read back from the device
        (:meth:`to_scipy`)."""
        axis = _axis(axis)
        host = self.to_scipy()
        nonzero = host.data != 0
        if axis is None:
            return np.int64(np.count_nonzero(nonzero))
        if axis == 0:
            return np.bincount(host.indices[nonzero], minlength=host.shape[1])
        rows = np.repeat(np.arange(host.shape[0]), np.diff(host.indptr))
        return np.bincount(rows[nonzero], minlength=host.shape[0])

    # -- views and conversions --------------------------------------------------------------
    def transpose(self, axes: object = None, copy: bool = False) -> ScipyOperators:
        """``M.T`` (a view sharing the device arrays), or with ``copy=True`` the transpose of
        :meth:`copy`; ``axes``, as in scipy, only ``None`` or ``(1, 0)``."""
        if axes is not None and tuple(axes) != (1, 0):
            raise ValueError(f"axes={axes!r}: a 2-D matrix has one transpose, axes (1, 0) "
                             "(scipy.sparse takes no other either)")
        return self.copy().T if copy else self.T

    def conj(self, copy: bool = True) -> ScipyOperators:
        """The complex conjugate (also ``conjugate``), as scipy's for real values: :meth:`copy`
        (``copy=True``, the default) or this matrix itself."""
        return self.copy() if copy else self

    conjugate = conj

    def tocsr(self, copy: bool = False) -> sp.csr_array:
        """:meth:`to_scipy`: the matrix read back as a new ``scipy.sparse.csr_array`` (``copy``
        is scipy's argument; the result is always a new host matrix)."""
        return self.to_scipy()

    def __matmul__(self, other: object) -> object:
        """``M @ x`` (a vector: :meth:`matvec`) or ``M @ X`` (a 2-D array: :meth:`matmat`), numpy
        or pyopencl; a scipy sparse operand raises TypeError, a scalar ValueError (as scipy)."""
        other = _operand(other)
        ndim = other.ndim
        if ndim == 1:
            return self.matvec(other)
        if ndim == 2:
            return self.matmat(other)
        if ndim == 0:
            raise ValueError("Scalar operands are not allowed with @ (as in scipy.sparse); "
                             "scale with matvec(x, alpha=...)")
        raise ValueError(f"M @ x takes a vector or a 2-D array, got {ndim} dimensions")

    def __rmatmul__(self, other: object) -> object:
        """``x @ M`` = ``M.T @ x`` for a vector (:meth:`rmatvec`), ``X @ M`` =
        ``(M.T @ X.T).T`` for a 2-D array (:meth:`rmatmat`)."""
        other = _operand(other)
        ndim = other.ndim
        if ndim == 1:
            return self.rmatvec(other)
        if ndim == 2:
            return self.rmatmat(other.T).T
        if ndim == 0:
            raise ValueError("Scalar operands are not allowed with @ (as in scipy.sparse)")
        raise ValueError(f"x @ M takes a vector or a 2-D array, got {ndim} dimensions")

    def dot(self, other: object) -> object:
        """``M @ other`` for a vector or a 2-D array (numpy or pyopencl), as scipy's ``dot``;
        a scalar (which scipy would multiply element-wise) raises
        :class:`UnsupportedOperationError`."""
        if not sp.issparse(other) and not isinstance(other, cl_array.Array) \
                and np.ndim(other) == 0:
            raise UnsupportedOperationError("M.dot(scalar) would scale the matrix, which a "
                                            "device matrix does not do: use matvec(x, alpha=...)")
        return self @ other

    def todense(self, order: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The same as :meth:`toarray`: an ``ndarray``, as scipy's sparse arrays return (not the
        ``np.matrix`` of scipy's older ``spmatrix`` classes)."""
        return self.toarray(order=order, out=out)


_KEPT = ("dtype", "precision", "accumulate_dtype", "format", "device", "nnz", "nbytes", "params",
         "selection", "last_events", "last_transfers")
"""The facts of a matrix that its transposed view shares."""


class TransposedMatrix(ScipyOperators):
    """``M.T``: a view of a device matrix as its transpose, sharing its device arrays (nothing is
    copied). Its products run the matrix's transpose products (``matvec`` is ``M.rmatvec``,
    ``matmat`` is ``M.rmatmat`` and the other way round, with the same keyword arguments), its
    ``.T`` is ``M`` itself, and it speaks the same scipy names."""

    def __init__(self, matrix: object) -> None:
        self._matrix = matrix

    @property
    def T(self) -> object:  # noqa: N802 (scipy's name)
        """The matrix this view transposes."""
        return self._matrix

    @property
    def shape(self) -> tuple[int, int]:
        """(columns, rows) of the matrix."""
        m, n = self._matrix.shape
        return n, m

    def __getattr__(self, name: str) -> object:
        # facts that a transpose keeps: dtype, precision, format, device, nnz, nbytes, ...
        if name in _KEPT:
            return getattr(self._matrix, name)
        return super().__getattr__(name)

    def matvec(self, x: object, y: object = None, **kwargs: object) -> object:
        """``y = alpha * M.T @ x + beta * y``: :meth:`DeviceMatrix.rmatvec`."""
        return self._matrix.rmatvec(x, y, **kwargs)

    def rmatvec(self, x: object, y: object = None, **kwargs: object) -> object:
        """``M @ x``: :meth:`DeviceMatrix.matvec`."""
        return self._matrix.matvec(x, y, **kwargs)

    def matmat(self, X: object, Y: object = None, **kwargs: object) -> object:
        """``M.T @ X``: :meth:`DeviceMatrix.rmatmat`."""
        return self._matrix.rmatmat(X, Y, **kwargs)

    def rmatmat(self, X: object, Y: object = None, **kwargs: object) -> object:
        """``M @ X``: :meth:`DeviceMatrix.matmat`."""
        return self._matrix.matmat(X, Y, **kwargs)

    def to_scipy(self) -> sp.csr_array:
        """The transpose read back as a ``scipy.sparse.csr_array`` with sorted indices."""
        out = self._matrix.to_scipy().T.tocsr()
        out.sort_indices()
        return out

    def diagonal(self, k: int = 0) -> np.ndarray:
        """The ``k``-th diagonal: the matrix's ``-k``-th."""
        return self._matrix.diagonal(-diagonal_offset(k))

    def _line_sums(self) -> np.ndarray:
        return self._matrix._line_sums()

    def toarray(self, order: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The transpose read back as a dense array."""
        return self.to_scipy().toarray(order=order, out=out)

    def astype(self, dtype: object) -> TransposedMatrix:
        """``M.astype(dtype).T``."""
        return TransposedMatrix(self._matrix.astype(dtype))

    def copy(self) -> TransposedMatrix:
        """``M.copy().T``."""
        return TransposedMatrix(self._matrix.copy())

    def aslinearoperator(self) -> object:
        """The matrix's LinearOperator, transposed."""
        return self._matrix.aslinearoperator().T

    def __reduce__(self) -> tuple:
        return getattr, (self._matrix, "T")

    def __repr__(self) -> str:
        return f"<transposed view of {self._matrix!r}>"
