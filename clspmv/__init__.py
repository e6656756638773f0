"""clspmv: sparse matrix-vector products on any OpenCL device.

>>> import numpy as np, scipy.sparse as sp, clspmv
>>> A = sp.random_array((1000, 1000), density=0.01, format="csr")
>>> M = clspmv.DeviceMatrix.from_scipy(A)  # format="auto"; "csr": the best CSR kernel
>>> y = M @ np.ones(1000)
>>> z = M.rmatvec(np.ones(1000))           # A.T @ x, without forming A.T
>>> s, B = M.sum(axis=0), M.to_scipy()      # scipy's names; B is a csr_array

Krylov solvers with their vectors on the device: :mod:`clspmv.solvers`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .version import __version__ as __version__

if TYPE_CHECKING:  # what the names below are, for type checkers and readers
    from collections.abc import Sequence

    from . import io, solvers
    from .device import Device, devices, select_device
    from .errors import (
        BuildError,
        ClspmvError,
        ClspmvWarning,
        DeviceError,
        IndexOverflowError,
        MatrixFormatError,
        SettingError,
        StoredMatrixError,
        UnsuitableFormatError,
    )
    from .matrix import DeviceMatrix
    from .row_stats import MatrixStats, stats
    from .unsupported import UnsupportedAttributeError, UnsupportedOperationError

    FORMATS: Sequence[str]
    """Every registered format's name (:data:`clspmv.formats.FORMAT_CLASSES`), read at each
    use: a format added by :func:`clspmv.formats.register` is among them until
    :func:`clspmv.formats.unregister`."""

_HOMES = {
    "io": "io", "solvers": "solvers",
    **dict.fromkeys(("Device", "devices", "select_device"), "device"),
    **dict.fromkeys(("BuildError", "ClspmvError", "ClspmvWarning", "DeviceError",
                     "IndexOverflowError", "MatrixFormatError", "SettingError",
                     "StoredMatrixError", "UnsuitableFormatError"), "errors"),
    "FORMATS": "formats", "DeviceMatrix": "matrix",
    **dict.fromkeys(("MatrixStats", "stats"), "row_stats"),
    **dict.fromkeys(("UnsupportedAttributeError", "UnsupportedOperationError"), "unsupported"),
}
"""Public name -> the module that defines it. The names are loaded on first use (PEP 562), so
that ``import clspmv.entry`` (the ``clspmv`` command) does not wait for numpy, scipy and pyopencl
before it can answer Ctrl-C."""


_MODULES = ("io", "solvers")
"""The public names that are modules."""


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'clspmv' has no attribute {name!r}")
    module = importlib.import_module(f"{__name__}.{home}")
    value = module if name in _MODULES else getattr(module, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "FORMATS",
    "BuildError",
    "ClspmvError",
    "ClspmvWarning",
    "Device",
    "DeviceError",
    "DeviceMatrix",
    "IndexOverflowError",
    "MatrixFormatError",
    "MatrixStats",
    "SettingError",
    "StoredMatrixError",
    "UnsuitableFormatError",
    "UnsupportedAttributeError",
    "UnsupportedOperationError",
    "devices",
    "io",
    "select_device",
    "solvers",
    "stats",
]
