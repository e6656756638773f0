"""What every Krylov solver of :mod:`clspmv.solvers` starts from: the operator's device and
vectors, the right-hand side and start vector on the device, the preconditioner, the absolute
tolerance, the dot products (summed over the ranks for a distributed operator) and the
bookkeeping of history and callback."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .vectors import DeviceVectors

Array = np.ndarray | cl_array.Array

class Setup:
    """What every solver starts from: the operator, device vectors, right-hand side, start vector,
    preconditioner, absolute tolerance and the bookkeeping of history and callback."""

    def __init__(self, A: Any, b: Array, x0: Array | None, M: Any, rtol: float, atol: float,
                 maxiter: int | None, callback: Callable | None, history: list | None,
                 default_maxiter: Callable[[int], int]) -> None:
        shape = tuple(A.shape)
        if len(shape) != 2 or shape[0] != shape[1]:
            raise ValueError(f"A must be square, got shape {shape}")
        self.A = A
        self.space = getattr(A, "vector_space", None)
        """Sums dot products over the ranks of a distributed A (None: one process)."""
        self.n = n = shape[0] if self.space is None else int(self.space.size)
        self.dtype = np.dtype(A.dtype)
        self.device = A.device
        self.queue = self.device.queue
        self.vec = DeviceVectors(self.device, self.dtype)
        self.b_on_device = isinstance(b, cl_array.Array)
        self.b = self._vector(b, "b")
        self.x = self._vector(x0, "x0") if x0 is not None else cl_array.zeros(self.queue, n,
                                                                                self.dtype)
        self.x_given = x0 is not None
        self.callback = callback
        self.history = history
        self.maxiter = default_maxiter(shape[0]) if maxiter is None else int(maxiter)
        if rtol < 0 or atol < 0:
            raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
        self.scalars = self.vec.scalars(16)
        self._host_scalars = np.zeros(16, self.dtype)
        self.bnorm = math.sqrt(self.dot(self.b, self.b))
        self.atol = max(float(atol), float(rtol) * self.bnorm)
        self.dinv, self.M = preconditioner(M, A, self.dtype, self.queue, n)
        self.fused = 1 if self.dinv is not None else 0
        self.d_arg = self.dinv if self.dinv is not None else self.b  # never read when not fused

    def _vector(self, v: Array, what: str) -> cl_array.Array:
        """A device copy of ``v`` in the matrix's dtype (the caller's array is never changed)."""
        n = self.n
        if isinstance(v, cl_array.Array):
            if v.shape != (n,):
                raise ValueError(f"{what} has shape {v.shape}, expected ({n},)")
            if v.context != self.device.context:
                raise ValueError(f"{what} lives in another OpenCL context than A's device "
                                 f"{self.device.name}; copy it there first")
            return v.astype(self.dtype, queue=self.queue)  # a new, contiguous array
        arr = np.asarray(v)
        if arr.shape not in ((n,), (n, 1)):
            raise ValueError(f"{what} has shape {arr.shape}, expected ({n},)")
        if np.issubdtype(arr.dtype, np.complexfloating):
            raise TypeError(f"complex {what} is not supported")
        return cl_array.to_device(self.queue, np.ascontiguousarray(arr.ravel(), self.dtype))

    # -- device helpers ---------------------------------------------------------------------
    def empty(self) -> cl_array.Array:
        return cl_array.empty(self.queue, self.n, self.dtype)

    def matvec(self, x: cl_array.Array, y: cl_array.Array) -> None:
        """y = A x on the device."""
        out = self.A.matvec(x, y)
        if out is not None and out is not y:
            cl.enqueue_copy(self.queue, y.data, out.data)

    def residual(self, r: cl_array.Array, t: cl_array.Array) -> None:
        """r = b - A x (t is scratch)."""
        if not self.x_given:
            cl.enqueue_copy(self.queue, r.data, self.b.data)
            return
        self.matvec(self.x, t)
        self.vec.run("axpby", self.n, self.dtype.type(1), self.b, self.dtype.type(-1), t, r)

    def precondition(self, r: cl_array.Array, z: cl_array.Array) -> None:
        """z = M r where M is not fused into the update kernels."""
        if self.dinv is not None:
            self.vec.run("scale_by", self.n, self.dinv, r, z)
        elif self.M is not None:
            out = self.M.matvec(r, z)
            if out is not None and out is not z:
                cl.enqueue_copy(self.queue, z.data, out.data)

    def read(self) -> np.ndarray:
        """The device scalars, read back (the one synchronisation point)."""
        cl.enqueue_copy(self.queue, self._host_scalars, self.scalars.data)
        return self._host_scalars

    def dot(self, a: cl_array.Array, b: cl_array.Array, slot: int = 15) -> float:
        return float(self.dots_read([(a, b)], slot)[0])

    def dots_read(self, pairs: list, slot: int) -> np.ndarray:
        """:meth:`dots` into the scalars at ``slot``, and their values on the host (summed over
        the ranks of a distributed A, whose reduction has them: no second read)."""
        sums = self.dots(pairs, self.scalars, slot)
        return self.read()[slot: slot + len(pairs)] if sums is None else sums

    def dots(self, pairs: list, target: cl_array.Array, slot: int) -> np.ndarray | None:
        """target[slot + j] = pairs[j][0] . pairs[j][1] on the device (summed over the ranks of a
        distributed A, whose sums are returned: :meth:`reduce`)."""
        self.vec.dots(self.n, pairs, target, slot)
        return self.reduce(target, slot, len(pairs))

    def reduce(self, target: cl_array.Array, slot: int, count: int) -> np.ndarray | None:
        """Sum the partial results target[slot:slot + count] over the ranks (distributed A) and
        return the sums on the host; None on one device (nothing to sum)."""
        if self.space is None:
            return None
        return self.space.reduce(self.queue, target, slot, count)

    # -- bookkeeping --------------------------------------------------------------------------
    def record(self, norm: float) -> None:
        if self.history is not None:
            self.history.append(norm)

    def step_done(self) -> None:
        if self.callback is not None:
            self.callback(self.x)

    def result(self, info: int) -> tuple[Array, int]:
        return (self.x if self.b_on_device else self.x.get(self.queue)), int(info)


def preconditioner(M: Any, A: Any, dtype: np.dtype, queue: cl.CommandQueue, n: int
                    ) -> tuple[cl_array.Array | None, Any]:
    """(inverse diagonal on the device for Jacobi, else None; a general M, else None)."""
    if M is None:
        return None, None
    if isinstance(M, str):
        if M != "jacobi":
            raise ValueError(f"M must be None, 'jacobi' or an operator with matvec(x, y), got "
                             f"{M!r}")
        if not hasattr(A, "diagonal"):
            raise TypeError("M='jacobi' needs A.diagonal(); pass a DeviceMatrix")
        diag = np.asarray(A.diagonal(), dtype=np.float64)
        zero = np.flatnonzero(diag == 0)
        if zero.size:
            raise ValueError(f"the Jacobi preconditioner needs a nonzero diagonal; A[i, i] = 0 "
                             f"for {zero.size} rows, e.g. i = {zero[:5].tolist()}")
        return cl_array.to_device(queue, (1.0 / diag).astype(dtype)), None
    if not hasattr(M, "matvec") or tuple(M.shape) != (n, n):
        raise TypeError(f"M must be None, 'jacobi' or an {n}x{n} operator with matvec(x, y) on "
                        "device arrays")
    return None, M
