"""What a device matrix does not do of scipy.sparse's, and the errors that say what to use
instead: element-wise arithmetic, indexing, changes after upload, and every other public name of
scipy's ``csr_array`` that :mod:`clspmv.sparse_api` does not give a device matrix."""

from __future__ import annotations

import scipy.sparse as sp

from .errors import ClspmvError


class UnsupportedOperationError(ClspmvError, NotImplementedError):
    """A scipy.sparse operation that a device matrix does not do (element-wise arithmetic,
    indexing, changes after upload, ...); the message says what to use instead."""


class UnsupportedAttributeError(UnsupportedOperationError, AttributeError):
    """A scipy.sparse array method or attribute that a device matrix lacks: also an
    AttributeError, so that ``hasattr`` and ``getattr(M, name, default)`` say it is absent."""


SCIPY_NAMES = frozenset({n for n in dir(sp.csr_array) if not n.startswith("_")}
                        | {"data", "indices", "indptr"})
"""The public names of scipy's ``csr_array`` (its arrays included): those a device matrix lacks
raise :class:`UnsupportedAttributeError` (:func:`absent`)."""

_ELEMENTWISE = ("element-wise arithmetic on a device matrix is not supported: {expr} needs "
                "scipy.sparse on the host ({host}), then DeviceMatrix.from_scipy again")

_COMPARISON = ("M {op} B compares element by element in scipy.sparse, which a device matrix does "
               "not do: compare on the host (M.to_scipy() {op} B; two device matrices hold the "
               "same entries where (M.to_scipy() != N.to_scipy()).nnz == 0); M is N tells "
               "whether they are the same object")

_HOW = {
    **dict.fromkeys(
        ("multiply", "power", "maximum", "minimum", "sign", "sqrt", "expm1", "log1p", "sin",
         "sinh", "tan", "tanh", "arcsin", "arcsinh", "arctan", "arctanh", "deg2rad", "rad2deg",
         "rint", "floor", "ceil", "trunc", "real", "imag"),
        "is element-wise, which a device matrix does not compute: use M.to_scipy().{name} on "
        "the host, then DeviceMatrix.from_scipy again"),
    **dict.fromkeys(
        ("setdiag", "resize", "reshape", "eliminate_zeros", "sum_duplicates", "sort_indices",
         "prune", "check_format"),
        "would change the stored matrix, which does not change after upload (it is kept "
        "canonical: duplicates summed, indices sorted): change M.to_scipy() on the host and "
        "convert it again with DeviceMatrix.from_scipy"),
    **dict.fromkeys(
        ("data", "indices", "indptr", "has_canonical_format", "has_sorted_indices"),
        "belongs to scipy's host arrays, while a device matrix holds its own storage format "
        "(M.format) on the device: M.to_scipy().{name} reads it back as a csr_array"),
}
"""Why a group of scipy names is absent, and what to use (``{name}`` is the name)."""

_READ_BACK = ("is not computed on the device: M.to_scipy().{name} reads the matrix back to the "
              "host as a scipy csr_array, which has it")
"""What to use for any other absent scipy name."""


def elementwise(op: str) -> UnsupportedOperationError:
    """The error of the element-wise binary operator ``op`` (``+``, ``/``, ``**``, ...)."""
    return UnsupportedOperationError(_ELEMENTWISE.format(expr=f"M {op} B",
                                                         host=f"M.to_scipy() {op} B"))


def absolute() -> UnsupportedOperationError:
    """The error of ``abs(M)``."""
    return UnsupportedOperationError(_ELEMENTWISE.format(expr="abs(M)",
                                                         host="abs(M.to_scipy())"))


def comparison(op: str) -> UnsupportedOperationError:
    """The error of the comparison ``op`` (``==``, ``<``, ...): element-wise in scipy.sparse,
    never the identity of the objects (``is`` asks that)."""
    return UnsupportedOperationError(_COMPARISON.format(op=op))


def absent(owner: str, name: str) -> UnsupportedAttributeError:
    """The error of scipy's name ``name`` (one of :data:`SCIPY_NAMES`) on a device matrix of
    class ``owner``."""
    how = _HOW.get(name, _READ_BACK)
    return UnsupportedAttributeError(f"{owner}.{name} (a scipy.sparse name) "
                                     + how.format(name=name))
