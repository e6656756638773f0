"""What ``clspmv bench`` measures beyond A x, with the same matrix on the same device:
``--transpose`` (A^T x by the atomic kernel and by a transposed copy, with the copy's one-time
cost and break-even count), ``--matmat K,...`` (A X in row- and column-major X) and
``--solver cg`` (time per iteration against scipy's ``cg`` running the same iterations).

Each is an :class:`~clspmv.bench.operation.Operation` (:data:`TRANSPOSE`, :data:`MATMAT`,
:data:`SOLVER`, registered in :mod:`clspmv.bench.registry`) with the record fields it adds and
their formulas. Timing goes through :mod:`clspmv.bench.timing`; every product is checked
against scipy under the bound of :mod:`clspmv.bench.reference`. The functions here fill in a
record or raise; the runner turns exceptions into ``skipped`` / ``failed`` records, as for A x.
What each record holds: docs/benchmarks.md, "Transpose products, several right-hand sides and
solvers".
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .. import solvers
from ..formats import FORMAT_CLASSES
from ..formats.base import atomic_add_kind
from ..matrix import DeviceMatrix
from ..precision import Precision
from . import timing
from .baseline import Baseline
from .errors import NotApplicable
from .operation import (
    Case,
    Operation,
    Settings,
    check,
    measure_product,
    note,
    set_ratio,
    set_times,
    take_result,
)
from .records import Record
from .reference import Problem
from .speedups import breakeven

__all__ = ["AMORTISED_OVER", "MATMAT", "NotApplicable", "ORDERS", "SOLVER", "SOLVERS",
           "Settings", "TRANSPOSE"]

AMORTISED_OVER = 100
"""Products the one-time cost of a transposed copy is spread over in ``amortised_ms``."""

SOLVERS = ("cg",)
"""Solvers ``--solver`` measures."""

ORDERS = ("C", "F")
"""Layouts of X and Y measured by ``--matmat``: row-major and column-major."""

SOLVER_TOLERANCE = (2.0, 100.0)
"""A device solve is ``wrong`` when its final relative residual exceeds
2 x scipy's + 100 eps (the same iterations in another order of additions)."""


# -- A^T x ---------------------------------------------------------------------------------------
class Transpose(Operation):
    """A^T x by the atomic kernel and by a transposed copy (``--transpose``)."""

    name = "transpose"
    fields = {
        "one_time_ms": "wall time of prepare_transpose() (download, transposition on the host, "
                       "upload; its kernels compiled before)",
        "extra_bytes": "device memory of the transposed copy (0 for the atomic kernel)",
        "single_ms": "one_time_ms + kernel time: one A^T x from the stored matrix "
                     "(naive-SpMV paper, Fig. 3, first row)",
        "amortised_ms": "one_time_ms / amortised_over + kernel time",
        "amortised_over": "products the copy's one-time cost is spread over",
    }
    formulas = {
        "breakeven_products (copy)": "smallest n with one_time + n * kernel(copy) <= "
                                     "n * kernel(atomic), same format",
        "ratio_to_spmv": "kernel time of A^T x / kernel time of A x, same format or baseline",
    }

    def active(self, plan: Any) -> bool:
        return bool(plan.transpose)

    def settings(self, plan: Any) -> dict[str, Any]:
        return {"transpose": True, "amortised_over": AMORTISED_OVER}

    def cases(self, plan: Any, fmt: str) -> list[Case]:
        return [Case(self.name, "atomic"), Case(self.name, "transpose")]

    def measure(self, rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                settings: Settings) -> None:
        measure_transpose(rec, M, problem, case.method, settings)
        set_ratio(rec)

    def finish(self, records: list[Record]) -> None:
        set_breakeven(records)

    def baseline_cases(self, plan: Any, baseline: Baseline) -> list[Case]:
        return [Case(self.name)]

    def measure_baseline(self, rec: Record, baseline: Baseline, problem: Problem, case: Case,
                         settings: Settings) -> None:
        measure_product(rec, baseline, problem, problem.transposed(), settings, True)
        set_amortised(rec)
        set_ratio(rec)


def measure_transpose(rec: Record, M: DeviceMatrix, problem: Problem, method: str,
                      settings: Settings) -> None:
    """A^T x by ``method`` (``atomic`` or ``transpose``), x and y on the device."""
    t_problem = problem.transposed()
    queue = M.device.queue
    if method == "transpose":
        M.prepare_transpose()  # compiles the copy's kernels: not a cost of the copy
        M.release_transpose()
        rec.extra["one_time_ms"] = timing.time_wall_once(M.prepare_transpose, queue.finish)
        rec.extra["extra_bytes"] = M.prepare_transpose()
        name, params = M.transpose_copy or (M.format, {})
        note(rec, f"copy: {name}" + "".join(f", {k}={v}" for k, v in params.items()))
    try:
        check(rec, t_problem, M.rmatvec(t_problem.x, method=method))
        if method == "atomic":  # it ran: the device has the atomics the kernel needs
            rec.extra["extra_bytes"] = 0
            note(rec, f"atomic add: {atomic_add_kind(M.device, M.dtype)}"
                 if FORMAT_CLASSES[M.format].transpose_atomics
                 else "gathers along the diagonals, no atomics")
        x_dev = cl_array.to_device(queue, t_problem.x)
        y_dev = cl_array.empty(queue, M.shape[1], M.dtype)
        set_times(rec, timing.time_events(
            M, lambda: M.rmatvec(x_dev, y_dev, method=method), warmup=settings.warmup,
            repeat=settings.repeat))
    finally:
        M.release_transpose()
    set_amortised(rec)


def set_amortised(rec: Record, over: int = AMORTISED_OVER) -> None:
    """single_ms and amortised_ms of a transpose record (one_time_ms 0 where there is none)."""
    if rec.kernel_ms is None or rec.status not in ("ok", "wrong"):
        return
    one_time = rec.extra.get("one_time_ms") or 0.0
    rec.extra.update(single_ms=one_time + rec.kernel_ms,
                     amortised_ms=one_time / over + rec.kernel_ms, amortised_over=over)


def set_breakeven(records: list[Record]) -> None:
    """breakeven_products of each transposed-copy record: the smallest n with one_time +
    n kernel(copy) <= n kernel(atomic) of the same format (None: the copy is never faster)."""
    atomic = {r.format: r for r in records
              if r.operation == "transpose" and r.method == "atomic" and r.status == "ok"}
    for rec in records:
        ref = atomic.get(rec.format)
        if (rec.operation != "transpose" or rec.method != "transpose" or rec.status != "ok"
                or ref is None or rec.kernel_ms is None):
            continue
        rec.breakeven_products = breakeven(rec.extra.get("one_time_ms") or 0.0, rec.kernel_ms,
                                           0.0, ref.kernel_ms or 0.0)


# -- A X -----------------------------------------------------------------------------------------
def matmat_method(fmt: str, k: int) -> str:
    """How :meth:`DeviceMatrix.matmat` runs ``k`` columns in ``fmt``: ``spmv`` (one column is
    the plain product), ``block`` (the format's block kernel) or ``columns`` (one product per
    column)."""
    if k == 1:
        return "spmv"
    return "block" if FORMAT_CLASSES[fmt].has_matmat else "columns"


class Matmat(Operation):
    """A X for k right-hand sides in both orders (``--matmat``); formats without a block kernel
    run it only when ``--formats`` names them."""

    name = "matmat"
    formulas = {
        "gflops": "2 * nnz * k / kernel time",
        "min_bytes": "nnz * (value + 4) + 4 * (rows + 1) + value * k * (cols + rows)",
        "ratio_to_spmv": "kernel time of A X / (k * kernel time of A x); its inverse is the "
                         "speed-up over k separate products",
    }

    def active(self, plan: Any) -> bool:
        return bool(plan.matmat)

    def settings(self, plan: Any) -> dict[str, Any]:
        return {"matmat": plan.matmat}

    def prepare(self, problem: Problem, plan: Any) -> None:
        problem.columns(max(plan.matmat))  # X, its reference and bound, for the largest k

    def cases(self, plan: Any, fmt: str) -> list[Case]:
        if not (FORMAT_CLASSES[fmt].has_matmat or isinstance(plan.formats, list)):
            return []
        return [Case(self.name, matmat_method(fmt, k), k, order)
                for order in ORDERS for k in plan.matmat]

    def measure(self, rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                settings: Settings) -> None:
        measure_matmat(rec, M, problem, case, settings)
        set_ratio(rec)

    def baseline_cases(self, plan: Any, baseline: Baseline) -> list[Case]:
        return [Case(self.name, "", k, order) for order in ORDERS for k in plan.matmat]

    def measure_baseline(self, rec: Record, baseline: Baseline, problem: Problem, case: Case,
                         settings: Settings) -> None:
        measure_product(rec, baseline, problem, problem.columns(case.k or 1, case.order),
                          settings)
        set_ratio(rec)


def measure_matmat(rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                   settings: Settings) -> None:
    """A X for ``case.k`` columns in ``case.order``, X and Y on the device."""
    c_problem = problem.columns(case.k, case.order)
    check(rec, c_problem, M.matmat(c_problem.x))
    queue = M.device.queue
    X = cl_array.to_device(queue, c_problem.x)
    Y = cl_array.empty(queue, (M.shape[0], case.k), M.dtype, order=case.order)
    set_times(rec, timing.time_events(M, lambda: M.matmat(X, Y), warmup=settings.warmup,
                                      repeat=settings.repeat))


# -- solvers -------------------------------------------------------------------------------------
class Solver(Operation):
    """Time per iteration of a device-resident solver (``--solver``) against the baselines that
    have the same solver."""

    name = "solver"
    compared = "ms_per_iteration"
    moves_bytes = False
    fields = {
        "iterations": "iterations run",
        "ms_per_iteration": "wall time of the solve (median of repeats) / iterations; rtol = "
                            "atol = 0, so every solve runs exactly the iterations asked for",
        "residual": "|b - A x| / |b| after the iterations (float64 on the host)",
    }
    formulas = {
        "ratio_to_spmv": "ms_per_iteration / kernel time of A x, same format",
        "error_ratio": "residual / (2 * a baseline's residual + 100 eps)",
        "speedups[X]": "baseline X's ms_per_iteration / this ms_per_iteration",
    }

    def active(self, plan: Any) -> bool:
        return bool(plan.solvers)

    def settings(self, plan: Any) -> dict[str, Any]:
        return {"solvers": plan.solvers, "solver_iterations": plan.solver_iterations}

    def cases(self, plan: Any, fmt: str) -> list[Case]:
        return [Case(self.name, name) for name in plan.solvers]

    def measure(self, rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                settings: Settings) -> None:
        measure_solver(rec, M, problem, case.method, settings)
        set_ratio(rec, self.compared)

    def compare(self, rec: Record, baselines: dict[str, Record]) -> None:
        residual = next((r.extra.get("residual") for r in baselines.values()
                         if r.status == "ok" and r.extra.get("residual") is not None), None)
        check_solver(rec, residual)

    def baseline_cases(self, plan: Any, baseline: Baseline) -> list[Case]:
        return [Case(self.name, name) for name in plan.solvers if name in baseline.solvers]

    def measure_baseline(self, rec: Record, baseline: Baseline, problem: Problem, case: Case,
                         settings: Settings) -> None:
        b = solver_rhs(problem)
        result = baseline.solvers[case.method](
            problem.csr, b, case.method, settings.solver_iterations, warmup=settings.warmup,
            repeat=settings.repeat)
        take_result(rec, result)
        if result.timing is not None:
            iterations = result.iterations
            rec.repeats, rec.wall_ms = result.timing.repeats, result.timing.median_ms
            rec.extra.update(iterations=iterations,
                             ms_per_iteration=result.timing.median_ms / max(iterations or 1, 1),
                             residual=relative_residual(problem.csr, result.y, b))
        set_ratio(rec, self.compared)


def solver_rhs(problem: Problem) -> np.ndarray:
    """b of the solver runs: A x for the run's random x, in the run's value type."""
    m, n = problem.csr.shape
    if m != n:
        raise NotApplicable(f"a solver needs a square matrix; this one is {m}x{n}")
    return problem.reference.astype(problem.csr.dtype)


def relative_residual(csr: sp.csr_matrix, x: np.ndarray, b: np.ndarray) -> float:
    """|b - A x| / |b| in float64."""
    A64 = csr.astype(np.float64)
    b64 = np.asarray(b, np.float64)
    norm = float(np.linalg.norm(b64))
    return float(np.linalg.norm(b64 - A64 @ np.asarray(x, np.float64))) / (norm or 1.0)


def measure_solver(rec: Record, M: DeviceMatrix, problem: Problem, name: str,
                   settings: Settings) -> None:
    """Time per iteration of ``solvers.<name>`` on the device over a fixed iteration count."""
    if name not in SOLVERS:
        raise ValueError(f"unknown solver {name!r}; choose from {', '.join(SOLVERS)}")
    b = solver_rhs(problem)
    iterations = settings.solver_iterations
    b_dev = cl_array.to_device(M.device.queue, b)
    history: list[float] = []
    last: list = []

    def solve() -> None:
        history.clear()
        last[:] = solvers.cg(M, b_dev, rtol=0.0, atol=0.0, maxiter=iterations, history=history)

    # the warm-up solves build the vector kernels; every solve runs the same iterations
    t = timing.time_host(solve, warmup=settings.warmup, repeat=settings.repeat)
    x, info = last
    done = len(history) - 1
    if done != iterations:
        why = ("the residual stopped being finite: the matrix is not symmetric positive "
               "definite" if info < 0 else "it converged exactly (b = 0?): nothing to time")
        raise NotApplicable(f"{name} ran {done} of {iterations} iterations (info {info}): {why}")
    note(rec, f"clspmv.solvers.{name}, rtol=0, atol=0, maxiter={iterations}, vectors on the "
         "device")
    rec.repeats, rec.wall_ms = t.repeats, t.median_ms
    rec.extra.update(iterations=iterations, ms_per_iteration=t.median_ms / iterations,
                     residual=relative_residual(problem.csr, x.get(), b))


def check_solver(rec: Record, scipy_residual: float | None) -> None:
    """error_ratio of a device solve: its final relative residual against a baseline's after
    the same iterations (:data:`SOLVER_TOLERANCE`); ``wrong`` above 1."""
    residual = rec.extra.get("residual")
    if residual is None or scipy_residual is None or rec.status != "ok":
        return
    factor, eps_count = SOLVER_TOLERANCE
    eps = float(np.finfo(Precision.of(rec.dtype).value).eps)  # mixed: float32's
    rec.error_ratio = residual / (factor * scipy_residual + eps_count * eps)
    if not rec.error_ratio <= 1.0:
        rec.status = "wrong"
        rec.reason = (f"final relative residual {residual:.3g} against scipy's "
                      f"{scipy_residual:.3g} after the same {rec.extra.get('iterations')} "
                      "iterations")


TRANSPOSE, MATMAT, SOLVER = Transpose(), Matmat(), Solver()
