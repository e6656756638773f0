"""What ``clspmv bench`` measures beyond A x, with the same matrix on the same device.

* ``--transpose``: A^T x by both methods of :meth:`clspmv.DeviceMatrix.rmatvec`: ``atomic``
  (the format's transpose kernel, no extra memory) and ``transpose`` (the forward kernel of a
  transposed copy). The copy's one-time cost is the wall time of
  :meth:`~clspmv.DeviceMatrix.prepare_transpose` (download, transposition on the host, upload;
  built once untimed first so that kernel compilation is not counted, as for conversions), and
  the records state the two scenarios of the naive-SpMV paper's Fig. 3
  (``naive-spmv-transpose.txt``): one product from the stored matrix (``single_ms`` = one-time
  cost + kernel) and the product amortised over many (``amortised_ms``), plus the break-even
  count of products after which the copy pays for itself against the atomic kernel.
* ``--matmat K,...``: A X for k columns in row-major (C) and column-major (F) X and Y, kernel
  time of :meth:`~clspmv.DeviceMatrix.matmat`, GFLOP/s = 2 nnz k / time and the ratio to k
  separate products.
* ``--solver cg``: time per iteration of :func:`clspmv.solvers.cg` with every vector on the
  device, a fixed number of iterations (``rtol=0, atol=0``: the convergence test never stops it
  early), against scipy's ``cg`` on the host running the same iterations on the same system
  ``A x = b``, b = A x_run (x_run: the run's random x).

Every timing goes through :mod:`clspmv.bench.timing`; every product is checked against scipy in
float64 under the runner's per-row bound. The functions here fill in a record or raise; the
runner turns exceptions into ``skipped`` / ``failed`` records, as for A x.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .. import solvers
from ..formats import FORMAT_CLASSES
from ..formats.base import atomic_add_kind
from ..matrix import DeviceMatrix
from ..precision import Precision
from . import timing
from .records import Record, min_bytes

if TYPE_CHECKING:
    from .runner import Problem

AMORTISED_OVER = 100
"""Products the one-time cost of a transposed copy is spread over in ``amortised_ms``."""

SOLVERS = ("cg",)
"""Solvers ``--solver`` measures."""

ORDERS = ("C", "F")
"""Layouts of X and Y measured by ``--matmat``: row-major and column-major."""

SOLVER_TOLERANCE = (2.0, 100.0)
"""A device solve is ``wrong`` when its final relative residual exceeds
2 x scipy's + 100 eps (the same iterations in another order of additions)."""


class NotApplicable(Exception):
    """The operation does not apply to this matrix (a solver on a non-square matrix, CG on one
    that is not positive definite): the record is ``skipped`` with this message."""


@dataclass(frozen=True)
class Operation:
    """One measurement beyond A x: ``operation`` with its ``method``, ``k`` and ``order``."""

    operation: str
    method: str = ""
    k: int | None = None
    order: str = ""

    @property
    def key(self) -> tuple[str, int | None, str]:
        """What records of formats and baselines are compared on: (operation, k, order)."""
        return (self.operation, self.k, self.order)


SPMV = Operation("spmv")


def matmat_method(fmt: str, k: int) -> str:
    """How :meth:`DeviceMatrix.matmat` runs ``k`` columns in ``fmt``: ``spmv`` (one column is
    the plain product), ``block`` (the format's block kernel) or ``columns`` (one product per
    column)."""
    if k == 1:
        return "spmv"
    return "block" if FORMAT_CLASSES[fmt].has_matmat else "columns"


def format_operations(fmt: str, transpose: bool, ks: list[int], solver_names: list[str],
                      fallback_matmat: bool) -> list[Operation]:
    """The operations measured for format ``fmt``; ``--matmat`` runs formats without a block
    kernel only when ``fallback_matmat`` (they were named in ``--formats``)."""
    ops = []
    if transpose:
        ops += [Operation("transpose", "atomic"), Operation("transpose", "transpose")]
    if ks and (FORMAT_CLASSES[fmt].has_matmat or fallback_matmat):
        ops += [Operation("matmat", matmat_method(fmt, k), k, order)
                for order in ORDERS for k in ks]
    ops += [Operation("solver", name) for name in solver_names]
    return ops


def baseline_operations(transpose: bool, ks: list[int], solver_names: list[str]
                        ) -> list[Operation]:
    """The operations every baseline runs besides A x (solvers: scipy only)."""
    ops = [Operation("transpose")] if transpose else []
    ops += [Operation("matmat", "", k, order) for order in ORDERS for k in ks]
    return ops + [Operation("solver", name) for name in solver_names]


def apply(rec: Record, problem: Problem, op: Operation, spmv: Record | None) -> None:
    """Make ``rec`` (a record of ``problem``'s matrix) one of ``op``, compared with the A x of
    the same format or baseline, ``spmv``."""
    rec.operation, rec.method, rec.k, rec.order = op.operation, op.method, op.k, op.order
    if op.k:
        m, n = problem.csr.shape
        rec.min_bytes = min_bytes(m, n, problem.csr.nnz, problem.csr.dtype.itemsize, op.k)
    if op.operation == "solver":
        rec.min_bytes = None
    if spmv is not None:
        rec.copy_gbps, rec.cache_bytes = spmv.copy_gbps, spmv.cache_bytes
        if spmv.kind == "format":
            rec.params = spmv.params  # the layout; a transpose measurement says more
        if spmv.status == "ok" and spmv.kernel_ms:
            rec.spmv_ms = spmv.kernel_ms


# -- the numbers of a record ---------------------------------------------------------------------
def set_times(rec: Record, t: timing.Timing) -> None:
    """Kernel time (median, min, max, repeats) and the rates: GFLOP/s = 2 nnz k / time, GB/s =
    min_bytes / time (k = 1 but for several right-hand sides)."""
    rec.kernel_ms, rec.kernel_ms_min, rec.kernel_ms_max = t.median_ms, t.min_ms, t.max_ms
    rec.repeats = t.repeats
    if t.median_ms > 0:
        rec.gflops = 2 * rec.nnz * (rec.k or 1) / t.median_ms / 1e6
        rec.gbps = (rec.min_bytes or 0) / t.median_ms / 1e6
    if rec.copy_gbps and rec.gbps is not None:
        rec.pct_copy_bw = 100.0 * rec.gbps / rec.copy_gbps


def check(rec: Record, problem: Problem, y: Any) -> None:
    """error_ratio of ``y`` against ``problem``'s reference; ``wrong`` above the bound."""
    rec.error_ratio = problem.error_ratio(y)
    rec.max_rel_error = problem.max_rel_error(y)
    if not rec.error_ratio <= 1.0:
        bad = ~(np.abs(np.asarray(y, np.float64) - problem.reference) <= problem.bound)
        rows = int(np.count_nonzero(bad.any(axis=1) if bad.ndim == 2 else bad))
        rec.status = "wrong"
        rec.reason = (f"product exceeds the error bound in {rows} rows "
                      f"(max ratio {rec.error_ratio:.3g})")


def set_ratio(rec: Record) -> None:
    """ratio_to_spmv: transpose kernel / A x kernel; matmat kernel / (k A x kernels); solver
    time per iteration / A x kernel."""
    if not rec.spmv_ms or rec.status not in ("ok", "wrong"):
        return
    if rec.operation == "solver":
        if rec.ms_per_iteration is not None:
            rec.ratio_to_spmv = rec.ms_per_iteration / rec.spmv_ms
    elif rec.kernel_ms is not None:
        rec.ratio_to_spmv = rec.kernel_ms / ((rec.k or 1) * rec.spmv_ms)


def set_amortised(rec: Record, over: int = AMORTISED_OVER) -> None:
    """single_ms and amortised_ms of a transpose record (one_time_ms 0 where there is none)."""
    if rec.kernel_ms is None or rec.status not in ("ok", "wrong"):
        return
    one_time = rec.one_time_ms or 0.0
    rec.single_ms = one_time + rec.kernel_ms
    rec.amortised_ms = one_time / over + rec.kernel_ms
    rec.amortised_over = over


def _note(rec: Record, text: str) -> None:
    """Append ``text`` to the record's params (the format's layout parameters)."""
    rec.params = f"{rec.params}; {text}" if rec.params else text


# -- measuring ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    """Repeats of a run, as ``clspmv bench`` was given them."""

    warmup: int = 2
    repeat: int = 10
    solver_iterations: int = 100


def measure(rec: Record, M: DeviceMatrix, problem: Problem, op: Operation,
            settings: Settings) -> None:
    """Check and time ``op`` of format matrix ``M`` into ``rec``; raises on failure."""
    if op.operation == "transpose":
        measure_transpose(rec, M, problem, op.method, settings)
    elif op.operation == "matmat":
        measure_matmat(rec, M, problem, op, settings)
    elif op.operation == "solver":
        measure_solver(rec, M, problem, op.method, settings)
    else:
        raise ValueError(f"unknown operation {op.operation!r}")
    set_ratio(rec)


def measure_transpose(rec: Record, M: DeviceMatrix, problem: Problem, method: str,
                      settings: Settings) -> None:
    """A^T x by ``method`` (``atomic`` or ``transpose``), x and y on the device."""
    t_problem = problem.transposed()
    queue = M.device.queue
    if method == "transpose":
        M.prepare_transpose()  # compiles the copy's kernels: not a cost of the copy
        M.release_transpose()
        rec.one_time_ms = timing.time_wall_once(M.prepare_transpose, queue.finish)
        rec.extra_bytes = M.prepare_transpose()
        name, params = M.transpose_copy or (M.format, {})
        _note(rec, f"copy: {name}" + "".join(f", {k}={v}" for k, v in params.items()))
    try:
        check(rec, t_problem, M.rmatvec(t_problem.x, method=method))
        if method == "atomic":  # it ran: the device has the atomics the kernel needs
            rec.extra_bytes = 0
            _note(rec, f"atomic add: {atomic_add_kind(M.device, M.dtype)}"
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


def measure_matmat(rec: Record, M: DeviceMatrix, problem: Problem, op: Operation,
                   settings: Settings) -> None:
    """A X for ``op.k`` columns in ``op.order``, X and Y on the device."""
    c_problem = problem.columns(op.k, op.order)
    check(rec, c_problem, M.matmat(c_problem.x))
    queue = M.device.queue
    X = cl_array.to_device(queue, c_problem.x)
    Y = cl_array.empty(queue, (M.shape[0], op.k), M.dtype, order=op.order)
    set_times(rec, timing.time_events(M, lambda: M.matmat(X, Y), warmup=settings.warmup,
                                      repeat=settings.repeat))


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
    rec.residual = relative_residual(problem.csr, x.get(), b)
    _note(rec, f"clspmv.solvers.{name}, rtol=0, atol=0, maxiter={iterations}, vectors on the "
          "device")
    rec.iterations, rec.repeats = iterations, t.repeats
    rec.wall_ms = t.median_ms
    rec.ms_per_iteration = t.median_ms / iterations


def check_solver(rec: Record, scipy_residual: float | None) -> None:
    """error_ratio of a device solve: its final relative residual against scipy's after the
    same iterations (:data:`SOLVER_TOLERANCE`); ``wrong`` above 1."""
    if rec.residual is None or scipy_residual is None or rec.status != "ok":
        return
    factor, eps_count = SOLVER_TOLERANCE
    eps = float(np.finfo(Precision.of(rec.dtype).value).eps)  # mixed: float32's
    rec.error_ratio = rec.residual / (factor * scipy_residual + eps_count * eps)
    if not rec.error_ratio <= 1.0:
        rec.status = "wrong"
        rec.reason = (f"final relative residual {rec.residual:.3g} against scipy's "
                      f"{scipy_residual:.3g} after the same {rec.iterations} iterations")


def set_breakeven(records: list[Record]) -> None:
    """breakeven_products of each transposed-copy record: the smallest n with one_time +
    n kernel(copy) <= n kernel(atomic) of the same format (None: the copy is never faster)."""
    from .runner import breakeven

    atomic = {r.format: r for r in records
              if r.operation == "transpose" and r.method == "atomic" and r.status == "ok"}
    for rec in records:
        ref = atomic.get(rec.format)
        if (rec.operation != "transpose" or rec.method != "transpose" or rec.status != "ok"
                or ref is None or rec.kernel_ms is None):
            continue
        rec.breakeven_products = breakeven(rec.one_time_ms or 0.0, rec.kernel_ms, 0.0,
                                           ref.kernel_ms or 0.0)
