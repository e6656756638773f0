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
from .matrix import FORMATS, DeviceMatrix
from .stats import MatrixStats, stats
from .unsupported import UnsupportedAttributeError, UnsupportedOperationError
from .version import __version__ as __version__

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
