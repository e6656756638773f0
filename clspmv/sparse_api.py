"""The scipy.sparse names of a device matrix, where their meaning is the same.

:class:`ScipyOperators` holds what :class:`clspmv.DeviceMatrix` and its transposed view
(:class:`TransposedMatrix`, ``M.T``) share: ``@`` on either side, ``dot``, ``ndim``, ``todense``,
and the clear errors of what scipy has and clspmv has not (``len(M)``, ``np.asarray(M)``,
element-wise arithmetic). Pickling, :meth:`DeviceMatrix.astype` and :meth:`DeviceMatrix.copy`
go through the plain-data state of :mod:`clspmv.matrix_state`.

Semantics follow scipy's sparse *arrays* (``csr_array``): ``todense()`` returns an ``ndarray``
like ``toarray()`` (not ``np.matrix``), ``M * x`` would be element-wise (refused here: use
``M @ x``), and ``M @ B`` with a scipy sparse ``B`` is refused with a TypeError (clspmv multiplies
by dense vectors and matrices; ``M.to_scipy() @ B`` computes it on the host).
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .arguments import real_array

_ELEMENTWISE = ("element-wise arithmetic on a device matrix is not supported: {op} needs "
                "scipy.sparse on the host (M.to_scipy() {op} ...), then "
                "DeviceMatrix.from_scipy again")


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


class ScipyOperators:
    """scipy.sparse operators and names on top of ``shape``, ``dtype``, ``matvec``, ``rmatvec``,
    ``matmat``, ``rmatmat`` and ``toarray`` (see the module docstring)."""

    __array_ufunc__ = None
    """numpy defers to :meth:`__rmatmul__` (``x @ M``) instead of trying a ufunc."""

    shape: tuple[int, int]

    @property
    def ndim(self) -> int:
        """2, as for every scipy sparse matrix."""
        return 2

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
        a scalar (which scipy would multiply element-wise) raises NotImplementedError."""
        if not sp.issparse(other) and not isinstance(other, cl_array.Array) \
                and np.ndim(other) == 0:
            raise NotImplementedError("M.dot(scalar) would scale the matrix, which a device "
                                      "matrix does not do: use matvec(x, alpha=...)")
        return self @ other

    def todense(self, order: str | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """The same as :meth:`toarray`: an ``ndarray``, as scipy's sparse arrays return (not the
        ``np.matrix`` of scipy's older ``spmatrix`` classes)."""
        return self.toarray(order=order, out=out)

    def __len__(self) -> int:
        raise TypeError(f"{type(self).__name__} length is ambiguous; use M.nnz or M.shape[0] "
                        "(as scipy's 'sparse array length is ambiguous')")

    def __bool__(self) -> bool:
        if self.shape == (1, 1):
            return bool(self.toarray()[0, 0] != 0)
        raise ValueError("The truth value of a device matrix with more than one element is "
                         "ambiguous (as in scipy.sparse); test M.nnz or M.shape instead")

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        raise TypeError(f"a {type(self).__name__} does not turn into a numpy array implicitly "
                        "(np.asarray would give a 0-d object array): use M.toarray() for a "
                        "dense copy, M.to_scipy() for a scipy matrix, or M @ x for a product")

    def _elementwise(self, op: str) -> NotImplementedError:
        return NotImplementedError(_ELEMENTWISE.format(op=op))

    def __add__(self, other: object) -> object:
        raise self._elementwise("+")

    __radd__ = __add__

    def __sub__(self, other: object) -> object:
        raise self._elementwise("-")

    __rsub__ = __sub__

    def __mul__(self, other: object) -> object:
        raise NotImplementedError(
            "M * x is element-wise in scipy.sparse arrays and not supported on a device matrix: "
            "use M @ x (or M.dot(x)) for the product, matvec(x, alpha=...) to scale it")

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> object:
        raise self._elementwise("/")

    def __pow__(self, other: object) -> object:
        raise self._elementwise("**")

    def __neg__(self) -> object:
        raise NotImplementedError("-M is not supported on a device matrix: use "
                                  "matvec(x, alpha=-1.0)")


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
        if name in ("dtype", "precision", "accumulate_dtype", "format", "device", "nnz",
                    "nbytes", "params", "last_events", "last_transfers"):
            return getattr(self._matrix, name)
        raise AttributeError(f"{type(self).__name__!r} has no attribute {name!r}")

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

    def to_scipy(self) -> sp.csr_matrix:
        """The transpose read back as CSR."""
        return self._matrix.to_scipy().T.tocsr()

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
