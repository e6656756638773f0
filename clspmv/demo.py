"""What ``clspmv demo`` does: a generated 2-D Poisson matrix through each storage format, every
product checked against scipy and timed with the kernels' profiling events.

The functions here return records (:class:`DemoResult`); ``clspmv.cli`` prints them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

from .device import Device
from .errors import UnsuitableFormatError
from .matrix import DeviceMatrix

REPEATS = 10
"""Timed products per format."""

TOLERANCE = {np.dtype(np.float32): 1e-4, np.dtype(np.float64): 1e-10}
"""Largest accepted max-norm error relative to max|y|, per value type."""


def poisson2d(k: int) -> sp.csr_matrix:
    """The 5-point Laplacian on a k x k grid: k*k rows, 4 on the diagonal, -1 for each neighbour."""
    if k < 1:
        raise ValueError(f"grid size must be >= 1, got {k}")
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k), format="csr")
    identity = sp.identity(k, format="csr")
    return sp.kron(identity, T, format="csr") + sp.kron(T, identity, format="csr")


def kernel_ns(events: list[cl.Event]) -> int:
    """Nanoseconds the device spent in ``events`` (start to end of each, summed); waits for them."""
    total = 0
    for ev in events:
        ev.wait()
        total += ev.profile.end - ev.profile.start
    return total


def relative_error(y: np.ndarray, reference: np.ndarray) -> float:
    """max|y - reference| / max|reference| (the absolute error where the reference is zero)."""
    err = float(np.max(np.abs(np.asarray(y, np.float64) - reference), initial=0.0))
    scale = float(np.max(np.abs(reference), initial=0.0))
    return err / scale if scale > 0 else err


@dataclass(frozen=True)
class DemoResult:
    """One format's outcome: bytes on the device, median kernel time, error; or why it refused."""

    format: str
    nnz: int
    nbytes: int | None = None
    kernel_ns: float | None = None
    rel_error: float | None = None
    tolerance: float | None = None
    refused: str | None = None

    @property
    def ok(self) -> bool:
        """True when the format refused the matrix or its product is within the tolerance."""
        if self.refused is not None:
            return True
        assert self.rel_error is not None and self.tolerance is not None
        return bool(self.rel_error <= self.tolerance)  # False for NaN

    @property
    def gflops(self) -> float | None:
        """2 * nnz floating-point operations per median kernel time."""
        if not self.kernel_ns:
            return None
        return 2 * self.nnz / self.kernel_ns  # flops per ns = GFLOP/s

    def as_row(self) -> dict[str, object]:
        """The result as one row of the ``clspmv demo`` table."""
        if self.refused is not None:
            check = f"refused: {self.refused}"
        else:
            check = "ok" if self.ok else "FAILED"
        return {
            "format": self.format,
            "device MiB": None if self.nbytes is None else self.nbytes / 2**20,
            "kernel ms": None if self.kernel_ns is None else self.kernel_ns / 1e6,
            "GFLOP/s": self.gflops,
            "max rel. error": self.rel_error,
            "check": check,
        }


def run_format(
    A: sp.csr_matrix,
    fmt: str,
    device: Device,
    dtype: np.dtype,
    x: np.ndarray,
    reference: np.ndarray,
    repeats: int = REPEATS,
) -> DemoResult:
    """Convert ``A`` to ``fmt`` on ``device``, check one product of ``x`` against ``reference``,
    then time ``repeats`` products on device-resident vectors (median of the kernel times)."""
    try:
        M = DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
    except UnsuitableFormatError as err:
        return DemoResult(fmt, A.nnz, refused=str(err))
    error = relative_error(M.matvec(x), reference)
    queue = device.queue
    x_dev = cl_array.to_device(queue, x)
    y_dev = cl_array.empty(queue, A.shape[0], M.dtype)
    times = []
    for _ in range(repeats):
        M.matvec(x_dev, y_dev)
        times.append(kernel_ns(M.last_events))
    return DemoResult(fmt, A.nnz, nbytes=M.nbytes, kernel_ns=float(np.median(times)),
                      rel_error=error, tolerance=TOLERANCE[np.dtype(dtype)])


def run(
    A: sp.csr_matrix,
    formats: list[str] | tuple[str, ...],
    device: Device,
    dtype: object = np.float32,
    repeats: int = REPEATS,
    seed: int = 0,
) -> list[DemoResult]:
    """:func:`run_format` for each of ``formats`` with one random x; scipy in float64 is the
    reference."""
    dtype = np.dtype(dtype)
    x = np.random.default_rng(seed).standard_normal(A.shape[1]).astype(dtype)
    # The device holds A's values cast to dtype: the reference multiplies those same values.
    reference = sp.csr_matrix(A, dtype=dtype).astype(np.float64) @ x.astype(np.float64)
    return [run_format(A, fmt, device, dtype, x, reference, repeats) for fmt in formats]
