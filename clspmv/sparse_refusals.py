"""The clear errors a device matrix gives for what scipy.sparse has and clspmv has not
(:class:`ScipyRefusals`, a base of :class:`clspmv.sparse_api.ScipyOperators`): ``len(M)``,
truth values of more than one element, ``np.asarray(M)``, indexing and assignment, iteration,
element-wise arithmetic and comparisons (so, as scipy's sparse arrays, no hash), negation,
``abs`` and scipy's other names (:mod:`clspmv.unsupported` says what to use instead)."""

from __future__ import annotations

import numpy as np

from .unsupported import (
    SCIPY_NAMES,
    UnsupportedOperationError,
    absent,
    absolute,
    comparison,
    elementwise,
)


class ScipyRefusals:
    """The scipy.sparse operators and names a device matrix refuses, each with an error that
    says what to use instead (see the module docstring); needs ``shape`` and ``toarray``."""

    shape: tuple[int, int]

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

    def __getattr__(self, name: str) -> object:
        # called only for names the class lacks: scipy's get a message saying what to use
        if name in SCIPY_NAMES and not hasattr(type(self), name):
            raise absent(type(self).__name__, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __getitem__(self, key: object) -> object:
        raise UnsupportedOperationError(
            "indexing a device matrix (M[...]) is not supported: M.to_scipy()[...] reads it "
            "back to the host; a column is M @ e_j, a row e_i @ M, the diagonal M.diagonal()")

    def __setitem__(self, key: object, value: object) -> None:
        raise UnsupportedOperationError(
            "a device matrix does not change after upload (M[...] = v): change M.to_scipy() "
            "on the host and convert it again with DeviceMatrix.from_scipy")

    def __iter__(self) -> object:
        raise UnsupportedOperationError(
            "iterating over the rows of a device matrix is not supported: iterate over "
            "M.to_scipy() on the host")

    def __add__(self, other: object) -> object:
        raise elementwise("+")

    __radd__ = __add__

    def __sub__(self, other: object) -> object:
        raise elementwise("-")

    __rsub__ = __sub__

    def __mul__(self, other: object) -> object:
        raise UnsupportedOperationError(
            "M * x is element-wise in scipy.sparse arrays and not supported on a device matrix: "
            "use M @ x (or M.dot(x)) for the product, matvec(x, alpha=...) to scale it")

    __rmul__ = __mul__

    def __truediv__(self, other: object) -> object:
        raise elementwise("/")

    __rtruediv__ = __truediv__

    def __pow__(self, other: object) -> object:
        raise elementwise("**")

    # comparisons are element-wise in scipy.sparse, never identity (``is`` asks that); so, as
    # scipy's sparse arrays, a device matrix is unhashable
    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:  # type: ignore[override]
        raise comparison("==")

    def __ne__(self, other: object) -> bool:  # type: ignore[override]
        raise comparison("!=")

    def __lt__(self, other: object) -> object:
        raise comparison("<")

    def __le__(self, other: object) -> object:
        raise comparison("<=")

    def __gt__(self, other: object) -> object:
        raise comparison(">")

    def __ge__(self, other: object) -> object:
        raise comparison(">=")

    def __neg__(self) -> object:
        raise UnsupportedOperationError("-M is not supported on a device matrix: use "
                                        "matvec(x, alpha=-1.0)")

    def __abs__(self) -> object:
        raise absolute()
