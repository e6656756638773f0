"""Krylov solvers that run on the device: :func:`cg`, :func:`bicgstab` and :func:`gmres`.

Signatures and results follow ``scipy.sparse.linalg``: ``x, info = cg(A, b, rtol=..., ...)``
with ``info == 0`` on convergence (``norm(b - A x) <= max(rtol * norm(b), atol)``), ``info > 0``
the iterations done without converging, ``info < 0`` a breakdown.

Every vector stays in device memory (``pyopencl.array.Array`` on the matrix's device queue). Dot
products are reduced on the device into a small array of scalars, and the step lengths are
computed there from it, so per iteration the host reads only what the convergence test needs:
one read for CG, two for BiCGStab, one per Arnoldi step for GMRES. Updates are fused kernels from
``kernels_cl/vector.cl``; nothing is allocated inside the iteration loops.

``A`` is a :class:`clspmv.DeviceMatrix`, or any object with ``shape``, ``dtype``, ``device`` (a
:class:`clspmv.Device`) and ``matvec(x, y)`` writing A x into the pyopencl array ``y``. An
``A`` with a ``vector_space`` attribute (a :class:`clspmv.distributed.DistributedMatrix`) runs
distributed: vectors are each rank's ``vector_space.size`` entries, every dot product is summed
over the ranks by ``vector_space.reduce`` (an ``Allreduce``) and ``b``, ``x0`` and the solution are
the rank's slices. ``M`` is
None, ``"jacobi"`` (the inverse of :meth:`DeviceMatrix.diagonal`, applied inside the fused update
kernels) or such an object approximating the inverse of A (for instance a DeviceMatrix holding a
sparse approximate inverse). ``callback(xk)`` gets the current iterate as a pyopencl array (call
``xk.get()`` for numpy); ``history``, a list, receives the residual norms (see each solver).

The solvers work in ``A.dtype``: with a ``dtype="mixed"`` matrix the vectors, dot products and
updates are float32 and only A's products sum in float64 (:attr:`DeviceMatrix.precision`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

from .solver_setup import Setup
from .vectors import i32

Array = np.ndarray | cl_array.Array

__all__ = ["bicgstab", "cg", "gmres"]

CG_BREAKDOWN = -1
"""info of :func:`cg` when the residual stops being finite (A or M not positive definite)."""
RHO_BREAKDOWN = -10
"""info of :func:`bicgstab` when rho = r0 . r vanishes (scipy's code)."""
OMEGA_BREAKDOWN = -11
"""info of :func:`bicgstab` when omega or r0 . v vanishes (scipy's code)."""


def cg(A: Any, b: Array, x0: Array | None = None, *, rtol: float = 1e-5, atol: float = 0.0,
       maxiter: int | None = None, M: Any = None, callback: Callable | None = None,
       history: list | None = None) -> tuple[Array, int]:
    """Conjugate gradients for a symmetric positive definite A, on the device.

    The same iteration as ``scipy.sparse.linalg.cg`` (residual recurrence, convergence test on
    ``norm(r)`` before each iteration). ``maxiter`` defaults to 10 n. ``history`` receives
    ``norm(r)`` before the first iteration and after each one. Returns ``(x, info)``: x numpy when
    b is numpy, else a pyopencl array; info 0 converged, > 0 iterations without convergence,
    :data:`CG_BREAKDOWN` when the residual stops being finite.
    """
    s = Setup(A, b, x0, M, rtol, atol, maxiter, callback, history, lambda n: 10 * n)
    if s.bnorm == 0:
        s.record(0.0)
        return s.result(0)
    n, run = s.n, s.vec.run
    r, p, q = s.empty(), s.empty(), s.empty()
    z = s.empty() if (s.dinv is not None or s.M is not None) else r
    pq_slot = 4
    rho_slots = (0, 2)  # rho at slot, r.r at slot + 1 (preconditioned); alternating parity

    def rho_and_norm(slot: int) -> float:
        """rho = r.z into ``slot`` (and r.r after it); returns norm(r)."""
        if z is r:
            return math.sqrt(max(float(s.dots_read([(r, r)], slot)[0]), 0.0))
        return math.sqrt(max(float(s.dots_read([(r, z), (r, r)], slot)[1]), 0.0))

    s.residual(r, q)
    s.precondition(r, z)
    cur = 0
    norm = rho_and_norm(rho_slots[cur])
    s.record(norm)
    for iteration in range(s.maxiter):
        if norm < s.atol:
            return s.result(0)
        if not math.isfinite(norm):
            return s.result(CG_BREAKDOWN)
        if iteration == 0:
            cl.enqueue_copy(s.queue, p.data, z.data)
        else:
            run("cg_direction", n, s.scalars, i32(rho_slots[cur]), i32(rho_slots[1 - cur]), z, p)
        s.matvec(p, q)
        s.dots([(p, q)], s.scalars, pq_slot)
        run("cg_step", n, s.scalars, i32(rho_slots[cur]), i32(pq_slot), s.x, r, p, q, s.d_arg,
            i32(s.fused), z)
        if s.M is not None:
            s.precondition(r, z)
        cur = 1 - cur
        norm = rho_and_norm(rho_slots[cur])
        s.record(norm)
        s.step_done()
    if norm < s.atol:
        return s.result(0)
    return s.result(s.maxiter if math.isfinite(norm) else CG_BREAKDOWN)


def bicgstab(A: Any, b: Array, x0: Array | None = None, *, rtol: float = 1e-5,
             atol: float = 0.0, maxiter: int | None = None, M: Any = None,
             callback: Callable | None = None, history: list | None = None
             ) -> tuple[Array, int]:
    """BiCGStab for a general square A, on the device.

    The same iteration and breakdown tests as ``scipy.sparse.linalg.bicgstab`` (rho or omega
    below eps**2: info :data:`RHO_BREAKDOWN` or :data:`OMEGA_BREAKDOWN`). ``maxiter`` defaults to
    10 n. ``history`` receives ``norm(r)`` before the first iteration and after each one (the
    last one ``norm(s)`` when the half step converged). Returns ``(x, info)`` as :func:`cg`.
    """
    s = Setup(A, b, x0, M, rtol, atol, maxiter, callback, history, lambda n: 10 * n)
    if s.bnorm == 0:
        s.record(0.0)
        return s.result(0)
    n, run = s.n, s.vec.run
    tol = float(np.finfo(s.dtype).eps) ** 2
    r, rtilde, p, v, t = s.empty(), s.empty(), s.empty(), s.empty(), s.empty()
    precond = s.dinv is not None or s.M is not None
    phat = s.empty() if precond else p
    shat = s.empty() if precond else r
    rho_slots = (0, 2)  # rho at slot, r.r at slot + 1; alternating parity
    RV, ALPHA, OMEGA, TS, TT, SS = 4, 5, 6, 7, 8, 9
    s.residual(r, t)
    cl.enqueue_copy(s.queue, rtilde.data, r.data)
    cur = 0
    norm = math.nan
    for iteration in range(s.maxiter):
        slot = rho_slots[cur]
        s.dots([(rtilde, r), (r, r)], s.scalars, slot)
        values = s.read()
        rho, omega = float(values[slot]), float(values[OMEGA])
        norm = math.sqrt(max(float(values[slot + 1]), 0.0))
        s.record(norm)
        if norm < s.atol:
            return s.result(0)
        if abs(rho) < tol:
            return s.result(RHO_BREAKDOWN)
        if iteration > 0 and abs(omega) < tol:
            return s.result(OMEGA_BREAKDOWN)
        run("bicg_direction", n, s.scalars, i32(iteration == 0), i32(slot),
            i32(rho_slots[1 - cur]), i32(ALPHA), i32(OMEGA), r, v, p, s.d_arg, i32(s.fused),
            phat)
        if s.M is not None:
            s.precondition(p, phat)
        s.matvec(phat, v)
        s.dots([(rtilde, v)], s.scalars, RV)
        run("bicg_half", n, s.scalars, i32(slot), i32(RV), i32(ALPHA), r, v, s.d_arg,
            i32(s.fused), shat)
        if s.M is not None:
            s.precondition(r, shat)
        s.matvec(shat, t)
        s.dots([(t, r), (t, t), (r, r)], s.scalars, TS)
        values = s.read()
        if values[RV] == 0:
            return s.result(OMEGA_BREAKDOWN)
        s_norm = math.sqrt(max(float(values[SS]), 0.0))
        if s_norm < s.atol:
            run("bicg_finish", n, s.scalars, i32(ALPHA), s.x, phat)
            s.record(s_norm)
            return s.result(0)
        run("bicg_step", n, s.scalars, i32(ALPHA), i32(TS), i32(TT), i32(OMEGA), s.x, r, phat,
            shat, t)
        cur = 1 - cur
        s.step_done()
    norm = math.sqrt(max(s.dot(r, r), 0.0))
    s.record(norm)
    return s.result(0 if norm < s.atol else s.maxiter)


def gmres(A: Any, b: Array, x0: Array | None = None, *, rtol: float = 1e-5, atol: float = 0.0,
          restart: int | None = None, maxiter: int | None = None, M: Any = None,
          callback: Callable | None = None, history: list | None = None
          ) -> tuple[Array, int]:
    """Restarted GMRES(``restart``, default 20) for a general square A, on the device.

    Right-preconditioned (the residual tested is the true ``b - A x``), Arnoldi with classical
    Gram-Schmidt applied twice (two fused kernels per pass over the basis, which stays in one
    device buffer), Givens rotations and the small least-squares problem on the host. As in
    scipy, ``maxiter`` counts restart cycles (default 10 n) and info > 0 is the cycles done
    without converging. ``history`` receives the true residual norm at the start of each cycle
    and the Arnoldi estimate after each inner step; ``callback(xk)`` runs after each cycle.
    """
    s = Setup(A, b, x0, M, rtol, atol, maxiter, callback, history, lambda n: 10 * n)
    if s.bnorm == 0:
        s.record(0.0)
        return s.result(0)
    vec, n, run, dt = s.vec, s.n, s.vec.run, s.dtype.type
    m = max(1, min(20 if restart is None else int(restart), n))
    V = cl_array.empty(s.queue, (m + 1) * n, s.dtype)
    r, w, u = s.empty(), s.empty(), s.empty()
    precond = s.dinv is not None or s.M is not None
    z = s.empty() if precond else u
    h_dev = cl_array.zeros(s.queue, 2 * (m + 1) + 1, s.dtype)
    h_host = np.zeros(h_dev.size, s.dtype)
    second, norm_slot = m + 1, 2 * (m + 1)
    coef = cl_array.empty(s.queue, m, s.dtype)
    NORM = 15
    for _cycle in range(s.maxiter):
        s.residual(r, w)
        s.x_given = True
        s.dots([(r, r)], s.scalars, NORM)
        beta = math.sqrt(max(float(s.read()[NORM]), 0.0))
        s.record(beta)
        if beta < s.atol:
            return s.result(0)
        if not math.isfinite(beta):
            return s.result(CG_BREAKDOWN)
        run("normalize_into", n, r, s.scalars, i32(NORM), V, i32(0), u)
        H = np.zeros((m + 1, m))
        cs, sn = np.zeros(m), np.zeros(m)
        g = np.zeros(m + 1)
        g[0] = beta
        k = 0
        for j in range(m):
            s.precondition(u, z)
            s.matvec(z, w)
            for offset in (0, second):  # classical Gram-Schmidt, twice
                vec.basis_dots(n, j + 1, V, n, w, h_dev, offset)
                s.reduce(h_dev, offset, j + 1)
                run("basis_axpy", n, i32(j + 1), V, i32(n), h_dev, i32(offset), dt(-1), w,
                    i32(0), w)
            s.dots([(w, w)], h_dev, norm_slot)
            cl.enqueue_copy(s.queue, h_host, h_dev.data)
            column = h_host[: j + 1].astype(np.float64) + h_host[second: second + j + 1]
            h_next = math.sqrt(max(float(h_host[norm_slot]), 0.0))
            H[: j + 1, j] = column
            H[j + 1, j] = h_next
            for i in range(j):  # earlier rotations
                H[i, j], H[i + 1, j] = (cs[i] * H[i, j] + sn[i] * H[i + 1, j],
                                        -sn[i] * H[i, j] + cs[i] * H[i + 1, j])
            radius = math.hypot(H[j, j], H[j + 1, j])
            cs[j], sn[j] = (H[j, j] / radius, H[j + 1, j] / radius) if radius else (1.0, 0.0)
            H[j, j], H[j + 1, j] = radius, 0.0
            g[j], g[j + 1] = cs[j] * g[j], -sn[j] * g[j]
            k = j + 1
            estimate = abs(g[j + 1])
            s.record(estimate)
            if h_next == 0 or estimate < s.atol or not math.isfinite(estimate):
                break
            run("normalize_into", n, w, h_dev, i32(norm_slot), V, i32((j + 1) * n), u)
        y = _upper_triangular_solve(H[:k, :k], g[:k])
        coef.set(np.concatenate([y, np.zeros(m - k)]).astype(s.dtype))
        if s.M is None:
            run("basis_axpy", n, i32(k), V, i32(n), coef, i32(0), dt(1), s.d_arg, i32(s.fused),
                s.x)
        else:  # x += M (V y)
            w.fill(0)
            run("basis_axpy", n, i32(k), V, i32(n), coef, i32(0), dt(1), w, i32(0), w)
            s.precondition(w, z)
            run("axpby", n, dt(1), s.x, dt(1), z, s.x)
        s.step_done()
    s.residual(r, w)
    s.dots([(r, r)], s.scalars, NORM)
    beta = math.sqrt(max(float(s.read()[NORM]), 0.0))
    return s.result(0 if beta < s.atol else s.maxiter)


def _upper_triangular_solve(R: np.ndarray, g: np.ndarray) -> np.ndarray:
    """y with R y = g for the small upper-triangular R of the Givens-rotated Hessenberg matrix
    (zero pivots, from an exact breakdown, contribute nothing)."""
    y = np.zeros(g.size)
    for i in range(g.size - 1, -1, -1):
        pivot = R[i, i]
        y[i] = (g[i] - R[i, i + 1:] @ y[i + 1:]) / pivot if pivot else 0.0
    return y
