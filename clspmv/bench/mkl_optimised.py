"""MKL's inspector-executor CSR product prepared for repeated calls: the ``mkl-optimised``
baseline (issue 44).

A handle is created from a scipy CSR matrix's arrays (``mkl_sparse_?_create_csr``), told how it
will be used (``mkl_sparse_set_mv_hint`` / ``mkl_sparse_set_mm_hint``: the operation, a general
matrix, the expected number of calls) and prepared by ``mkl_sparse_optimize``, which lets MKL
choose and build its own layout and thread partition for those calls (what PETSc's AIJMKL and
Intel's examples do before repeated products). Products are then ``mkl_sparse_?_mv`` /
``mkl_sparse_?_mm`` with alpha and beta; :meth:`OptimisedMkl.close` destroys the handle.

The binding is written here with ctypes because sparse_dot_mkl, which the plain ``mkl`` baseline
uses, does not bind ``mkl_sparse_set_mv_hint``, ``mkl_sparse_set_mm_hint`` or
``mkl_sparse_optimize``. It calls the same ``libmkl_rt`` that sparse_dot_mkl loaded, with the
index width sparse_dot_mkl chose for it (``MKL_INT``: 32-bit under the LP64 interface, 64-bit
under ILP64, :func:`sparse_dot_mkl.mkl_interface_integer_dtype`), so that both baselines run one
library under one interface layer and one thread setting.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import ClspmvError, IndexOverflowError
from .availability import find_mkl_rt, load_sparse_dot_mkl

SPARSE_OPERATION_NON_TRANSPOSE, SPARSE_OPERATION_TRANSPOSE = 10, 11
SPARSE_MATRIX_TYPE_GENERAL = 20
SPARSE_INDEX_BASE_ZERO = 0
SPARSE_LAYOUT_ROW_MAJOR, SPARSE_LAYOUT_COLUMN_MAJOR = 101, 102
"""mkl_spblas.h's values of sparse_operation_t, sparse_matrix_type_t, sparse_index_base_t and
sparse_layout_t."""

STATUS = {0: "SPARSE_STATUS_SUCCESS", 1: "SPARSE_STATUS_NOT_INITIALIZED",
          2: "SPARSE_STATUS_ALLOC_FAILED", 3: "SPARSE_STATUS_INVALID_VALUE",
          4: "SPARSE_STATUS_EXECUTION_FAILED", 5: "SPARSE_STATUS_INTERNAL_ERROR",
          6: "SPARSE_STATUS_NOT_SUPPORTED"}
"""mkl_spblas.h's sparse_status_t, by value."""


class MklUnavailableError(ClspmvError, ImportError):
    """MKL cannot be loaded here; the message says what to install."""


class MklError(ClspmvError, RuntimeError):
    """An MKL sparse routine returned a status other than success; the message names both."""


class _Handle(ctypes.Structure):
    """The opaque ``struct sparse_matrix``; a handle is a pointer to it."""


class MatrixDescr(ctypes.Structure):
    """``struct matrix_descr`` (passed by value): type, fill mode, diagonal type."""

    _fields_ = [("type", ctypes.c_int), ("mode", ctypes.c_int), ("diag", ctypes.c_int)]


GENERAL = MatrixDescr(SPARSE_MATRIX_TYPE_GENERAL, 0, 0)
"""The descriptor of a general matrix (mode and diagonal are ignored for it)."""


@dataclass(frozen=True)
class MklSparse:
    """The routines of ``libmkl_rt`` this module calls, typed for its ``MKL_INT``
    (:attr:`index_dtype`). Tests wrap them (count creates and destroys)."""

    index_dtype: np.dtype
    create_csr: dict[np.dtype, object]
    set_mv_hint: object
    set_mm_hint: object
    optimize: object
    mv: dict[np.dtype, object]
    mm: dict[np.dtype, object]
    destroy: object


def _bind(lib: ctypes.CDLL, index_dtype: np.dtype) -> MklSparse:
    """``lib``'s sparse routines with their C signatures for an ``index_dtype`` MKL_INT."""
    mkl_int = ctypes.c_int64 if index_dtype == np.int64 else ctypes.c_int32
    handle = ctypes.POINTER(_Handle)

    def typed(name: str, *args: object) -> object:
        # lib[name], not getattr: a function object of our own, since getattr returns the one
        # sparse_dot_mkl typed for its own arguments, whose argtypes must stay as they are
        function = lib[name]
        function.argtypes, function.restype = list(args), ctypes.c_int
        return function

    def index_array() -> object:
        return np.ctypeslib.ndpointer(index_dtype, ndim=1, flags="C_CONTIGUOUS")

    create, mv, mm = {}, {}, {}
    for letter, dtype, scalar in (("d", np.dtype(np.float64), ctypes.c_double),
                                  ("s", np.dtype(np.float32), ctypes.c_float)):
        values = np.ctypeslib.ndpointer(dtype, flags="C_CONTIGUOUS")
        out = np.ctypeslib.ndpointer(dtype, flags="WRITEABLE")
        dense = np.ctypeslib.ndpointer(dtype)
        create[dtype] = typed(f"mkl_sparse_{letter}_create_csr", ctypes.POINTER(handle),
                              ctypes.c_int, mkl_int, mkl_int, index_array(), index_array(),
                              index_array(), values)
        mv[dtype] = typed(f"mkl_sparse_{letter}_mv", ctypes.c_int, scalar, handle, MatrixDescr,
                          values, scalar, out)
        mm[dtype] = typed(f"mkl_sparse_{letter}_mm", ctypes.c_int, scalar, handle, MatrixDescr,
                          ctypes.c_int, dense, mkl_int, mkl_int, scalar, out, mkl_int)
    return MklSparse(
        index_dtype=np.dtype(index_dtype), create_csr=create,
        set_mv_hint=typed("mkl_sparse_set_mv_hint", handle, ctypes.c_int, MatrixDescr, mkl_int),
        set_mm_hint=typed("mkl_sparse_set_mm_hint", handle, ctypes.c_int, MatrixDescr,
                          ctypes.c_int, mkl_int, mkl_int),
        optimize=typed("mkl_sparse_optimize", handle), mv=mv, mm=mm,
        destroy=typed("mkl_sparse_destroy", handle))


_BINDING: list[MklSparse] = []
"""The binding, made once per process (:func:`binding`)."""


def mkl_rt_library(module: object) -> ctypes.CDLL:
    """The ``libmkl_rt`` that sparse_dot_mkl (``module``) loaded: its own CDLL where its private
    layout still has it, else the library at the path sparse_dot_mkl was given
    (:func:`~clspmv.bench.availability.find_mkl_rt`, which the loader put in ``$MKL_RT``)."""
    interface = getattr(module, "_mkl_interface", None)
    lib = getattr(getattr(interface, "_cfunctions", None), "_libmkl", None)
    if isinstance(lib, ctypes.CDLL):
        return lib
    path = find_mkl_rt()
    if path is None:
        raise MklUnavailableError("sparse_dot_mkl is loaded but neither its libmkl_rt handle nor "
                                  "a libmkl_rt path was found; set MKL_RT to the path of "
                                  "libmkl_rt")
    return ctypes.CDLL(path)


def binding() -> MklSparse:
    """The sparse routines of the ``libmkl_rt`` sparse_dot_mkl uses; MklUnavailableError with
    what to install when sparse_dot_mkl or MKL cannot be loaded."""
    if not _BINDING:
        try:
            module = load_sparse_dot_mkl()
        except ImportError as err:
            raise MklUnavailableError(str(err)) from err
        index_dtype = np.dtype(module.mkl_interface_integer_dtype())
        _BINDING.append(_bind(mkl_rt_library(module), index_dtype))
    return _BINDING[0]


def _check(status: int, routine: str) -> None:
    if status != 0:
        raise MklError(f"{routine} returned {STATUS.get(status, status)}; the matrix or vectors "
                       "do not fit what it was given (shape, value type, index width)")


def is_fortran(x: np.ndarray) -> bool:
    """A column-major 2-D array (one that is not also row-major)."""
    return x.ndim == 2 and bool(x.flags.f_contiguous and not x.flags.c_contiguous)


class OptimisedMkl:
    """An MKL handle of one CSR matrix (float32 or float64), hinted for ``expected_calls``
    products with ``operation`` (A, or A^T with ``transpose``) and then optimised; with
    ``columns``, hinted for ``mkl_sparse_?_mm`` on that many right-hand sides in ``layout``.

    ``optimise=False`` gives the plain handle (no hint, no optimize), as sparse_dot_mkl
    creates it. Use as a context manager or call :meth:`close`: the handle is freed once.
    """

    def __init__(self, A: sp.csr_matrix, *, expected_calls: int, transpose: bool = False,
                 columns: int | None = None, fortran: bool = False,
                 optimise: bool = True) -> None:
        mkl = binding()
        A = sp.csr_matrix(A)
        self.dtype = np.dtype(A.dtype)
        if self.dtype not in mkl.mv:
            raise MklError(f"MKL's real CSR routines take float32 or float64, not {self.dtype}; "
                           "convert the matrix first (A.astype(np.float64))")
        limit = np.iinfo(mkl.index_dtype).max
        if max(A.nnz, *A.shape) > limit:
            raise IndexOverflowError(
                f"a matrix of shape {A.shape} with {A.nnz} entries exceeds MKL's "
                f"{mkl.index_dtype} indices (at most {limit}); set MKL_INTERFACE_LAYER=ILP64 "
                "before sparse_dot_mkl is imported")
        self._mkl = mkl
        indptr = np.ascontiguousarray(A.indptr, mkl.index_dtype)
        # the handle points into these arrays (create_csr does not copy): kept while it lives
        self._arrays = (indptr[:-1], indptr[1:], np.ascontiguousarray(A.indices, mkl.index_dtype),
                        np.ascontiguousarray(A.data))
        self.shape = A.shape
        self._op = SPARSE_OPERATION_TRANSPOSE if transpose else SPARSE_OPERATION_NON_TRANSPOSE
        self.rows = A.shape[1] if transpose else A.shape[0]
        self._handle = ctypes.POINTER(_Handle)()
        _check(mkl.create_csr[self.dtype](ctypes.byref(self._handle), SPARSE_INDEX_BASE_ZERO,
                                          A.shape[0], A.shape[1], *self._arrays),
               "mkl_sparse_?_create_csr")
        try:
            if optimise:
                if columns is None:
                    _check(mkl.set_mv_hint(self._handle, self._op, GENERAL, expected_calls),
                           "mkl_sparse_set_mv_hint")
                else:
                    layout = SPARSE_LAYOUT_COLUMN_MAJOR if fortran else SPARSE_LAYOUT_ROW_MAJOR
                    _check(mkl.set_mm_hint(self._handle, self._op, GENERAL, layout, columns,
                                           expected_calls), "mkl_sparse_set_mm_hint")
                _check(mkl.optimize(self._handle), "mkl_sparse_optimize")
        except MklError:
            self.close()
            raise

    def matvec(self, x: np.ndarray, y: np.ndarray | None = None, alpha: float = 1.0,
               beta: float = 0.0) -> np.ndarray:
        """``y = alpha op(A) x + beta y`` (y is not read when beta is 0; a new y when None);
        x a vector, or an n x k array in either layout (``mkl_sparse_?_mm``). Returns y."""
        if not self._handle:
            raise MklError("this MKL handle was closed; create another OptimisedMkl")
        x = np.asarray(x, self.dtype)
        fortran = is_fortran(x)
        x = np.asfortranarray(x) if fortran else np.ascontiguousarray(x)
        shape = (self.rows,) + x.shape[1:]
        if y is None:
            y = np.zeros(shape, self.dtype, order="F" if fortran else "C")
        if y.shape != shape or y.dtype != self.dtype or is_fortran(y) != fortran or not (
                y.flags.f_contiguous if fortran else y.flags.c_contiguous):
            raise MklError(f"y must be a contiguous {self.dtype} array of shape {shape} in x's "
                           f"layout, not {y.dtype} {y.shape}")
        if x.ndim == 1:
            _check(self._mkl.mv[self.dtype](self._op, alpha, self._handle, GENERAL, x, beta, y),
                   "mkl_sparse_?_mv")
            return y
        k = x.shape[1]
        layout = SPARSE_LAYOUT_COLUMN_MAJOR if fortran else SPARSE_LAYOUT_ROW_MAJOR
        ldx, ldy = (x.shape[0], self.rows) if fortran else (k, k)
        _check(self._mkl.mm[self.dtype](self._op, alpha, self._handle, GENERAL, layout, x, k,
                                        ldx, beta, y, ldy), "mkl_sparse_?_mm")
        return y

    def close(self) -> None:
        """Destroy the handle (again: nothing)."""
        if self._handle:
            handle, self._handle = self._handle, ctypes.POINTER(_Handle)()
            _check(self._mkl.destroy(handle), "mkl_sparse_destroy")

    def __enter__(self) -> OptimisedMkl:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()
