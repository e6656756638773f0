"""clspmv: sparse matrix-vector products on any OpenCL device.

>>> import clspmv, scipy.sparse as sp
>>> A = sp.random(1000, 1000, density=0.01, format="csr")
>>> M = clspmv.DeviceMatrix.from_scipy(A, format="sell")
>>> y = M @ np.ones(1000)
>>> z = M.rmatvec(np.ones(1000))          # A.T @ x, without forming A.T
>>> x, info = clspmv.solvers.cg(M2, b)     # Krylov solvers with vectors on the device
"""

from __future__ import annotations

from . import io, solvers
from .device import Device, devices, select_device
from .errors import (
    BuildError,
    ClspmvError,
    DeviceError,
    IndexOverflowError,
    MatrixFormatError,
    StoredMatrixError,
    UnsuitableFormatError,
)
from .matrix import FORMATS, DeviceMatrix
from .stats import MatrixStats, stats
from .version import __version__ as __version__

__all__ = [
    "FORMATS",
    "BuildError",
    "ClspmvError",
    "Device",
    "DeviceError",
    "DeviceMatrix",
    "IndexOverflowError",
    "MatrixFormatError",
    "StoredMatrixError",
    "MatrixStats",
    "UnsuitableFormatError",
    "devices",
    "io",
    "select_device",
    "solvers",
    "stats",
]
