"""The protocol of what ``clspmv bench`` measures beyond A x: an :class:`Operation`, registered in
:mod:`clspmv.bench.registry`, carries its own measurement, the record fields it adds and their
formulas; the runner loops over the registered operations and never asks for one by name.

An operation runs in one of two places:

* per format (``transpose``, ``matmat``, ``solver``): :meth:`Operation.cases` lists the
  :class:`Case` s measured right after a format's A x on the same uploaded matrix,
  :meth:`Operation.measure` measures one; :meth:`Operation.baseline_cases` and
  :meth:`Operation.measure_baseline` do the same for a baseline;
* per device (``sweep``, ``selection``): :meth:`Operation.run_device` runs after every format
  of a device, with the :class:`Context` of the run.

Also here: the helpers every operation shares to fill in a record (:func:`start`,
:func:`set_times`, :func:`check`, :func:`set_ratio`, :func:`note`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..device import Device
from ..matrix import DeviceMatrix
from .baseline import Baseline, BaselineResult
from .errors import NotApplicable
from .records import Record, Results, min_bytes
from .reference import Problem
from .timing import Timing

__all__ = ["Case", "Context", "NotApplicable", "Operation", "SPMV", "Settings"]


@dataclass(frozen=True)
class Case:
    """One measurement of an operation: ``operation`` with its ``method``, ``k`` and ``order``
    (what distinguishes the records of one format and operation)."""

    operation: str
    method: str = ""
    k: int | None = None
    order: str = ""

    @property
    def key(self) -> tuple[str, int | None, str]:
        """What records of formats and baselines are compared on: (operation, k, order)."""
        return (self.operation, self.k, self.order)


SPMV = Case("spmv")


@dataclass(frozen=True)
class Settings:
    """Repeats and options of a run, as ``clspmv bench`` was given them."""

    warmup: int = 2
    repeat: int = 10
    solver_iterations: int = 100
    threads: int | None = None
    """Threads of the baselines that take a thread count (``--mkl-threads``)."""
    trial: bool = True
    """Whether the selection also runs auto with a trial on the device (``--no-trial``)."""


class Context(Protocol):
    """What an operation run per device uses of the runner."""

    settings: Settings
    results: Results

    def out_of_time(self) -> bool: ...

    def budget_reason(self) -> str: ...

    def copy_gbps(self, device: Device) -> float | None: ...

    def progress(self, what: str) -> None: ...


class Operation:
    """An operation measured besides A x. Subclasses set :attr:`name`, :attr:`fields` and
    override what applies to them; the defaults do nothing."""

    name: str = ""
    """The records' ``operation``."""
    fields: dict[str, str] = {}
    """The record fields it adds (``Record.extra``), each with its formula or meaning."""
    formulas: dict[str, str] = {}
    """Its formulas of core fields (written into meta with :attr:`fields`)."""
    compared: str = "kernel_ms"
    """The field speedups and ``ratio_to_spmv`` compare (a solver: its time per iteration)."""
    moves_bytes: bool = True
    """Whether ``min_bytes`` means anything for it (not for a solver's iterations)."""

    def start(self, rec: Record, problem: Problem, case: Case, spmv: Record | None) -> None:
        """Make ``rec`` a record of ``case`` (:func:`start`) with every field of :attr:`fields`
        (None until measured: the records of one operation have the same fields)."""
        start(rec, problem, case, spmv)
        rec.extra.update({name: None for name in self.fields if name not in rec.extra})
        if not self.moves_bytes:
            rec.min_bytes = None

    def active(self, plan: Any) -> bool:
        """Whether ``plan`` (a :class:`clspmv.bench.plan.Plan`) asks for it."""
        return False

    def settings(self, plan: Any) -> dict[str, Any]:
        """What goes into meta["settings"] when it is active."""
        return {}

    def steps(self, plan: Any) -> int:
        """Progress steps per device, matrix and value type (per-device operations)."""
        return 0

    def prepare(self, problem: Problem, plan: Any) -> None:
        """Make what the cases of ``problem`` share, once per matrix and value type."""

    # per format
    def cases(self, plan: Any, fmt: str) -> list[Case]:
        """The cases measured on format ``fmt`` after its A x."""
        return []

    def measure(self, rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                settings: Settings) -> None:
        """Check and time ``case`` of ``M`` into ``rec``; raises on failure."""
        raise NotImplementedError

    def finish(self, records: list[Record]) -> None:
        """After every case of one format: numbers that compare its records."""

    def compare(self, rec: Record, baselines: dict[str, Record]) -> None:
        """After a format's record is measured: checks against the baselines' records of the
        same case (before the speedups are set)."""

    # per baseline
    def baseline_cases(self, plan: Any, baseline: Baseline) -> list[Case]:
        """The cases ``baseline`` runs."""
        return []

    def measure_baseline(self, rec: Record, baseline: Baseline, problem: Problem, case: Case,
                         settings: Settings) -> None:
        """Run ``case`` on ``baseline`` into ``rec`` (status ``absent`` with the reason where
        the baseline cannot run); raises on failure."""
        raise NotImplementedError

    # per device
    def run_device(self, context: Context, problem: Problem, device: Device) -> None:
        """Measure on ``device`` after its formats (records go into ``context.results``)."""


# -- filling in a record -------------------------------------------------------------------------
def start(rec: Record, problem: Problem, case: Case, spmv: Record | None) -> None:
    """Make ``rec`` (a record of ``problem``'s matrix) one of ``case``, compared with the A x of
    the same format or baseline, ``spmv``."""
    rec.operation, rec.method, rec.k, rec.order = case.operation, case.method, case.k, case.order
    if case.k:
        m, n = problem.csr.shape
        rec.min_bytes = min_bytes(m, n, problem.csr.nnz, problem.csr.dtype.itemsize, case.k)
    if spmv is not None:
        rec.copy_gbps, rec.cache_bytes = spmv.copy_gbps, spmv.cache_bytes
        if spmv.kind == "format":
            rec.params = spmv.params  # the layout; a measurement may say more
        if spmv.status == "ok" and spmv.kernel_ms:
            rec.spmv_ms = spmv.kernel_ms


def set_times(rec: Record, t: Timing) -> None:
    """Kernel time (median, min, max, repeats) and the rates: GFLOP/s = 2 nnz k / time, GB/s =
    min_bytes / time (k = 1 but for several right-hand sides); samples whose host part the spin
    did not hide (:mod:`clspmv.cover`) are named in ``params``."""
    rec.kernel_ms, rec.kernel_ms_min, rec.kernel_ms_max = t.median_ms, t.min_ms, t.max_ms
    rec.repeats = t.repeats
    if t.uncovered:  # said, never hidden: these samples may count the host's enqueueing
        note(rec, f"host time included in {t.uncovered} of {t.repeats} samples (not covered by "
                  "the spin before them)")
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


def set_ratio(rec: Record, field: str = "kernel_ms") -> None:
    """ratio_to_spmv = the record's ``field`` (its operation's ``compared`` time) / (k times the
    A x kernel time)."""
    ms = rec.value(field)
    if rec.spmv_ms and ms is not None and rec.status in ("ok", "wrong"):
        rec.ratio_to_spmv = ms / ((rec.k or 1) * rec.spmv_ms)


def take_result(rec: Record, result: BaselineResult) -> None:
    """Copy a baseline's where, status, reason, threads and routine into its record."""
    rec.device, rec.device_type = result.device, result.device_type
    rec.status, rec.reason, rec.threads = result.status, result.reason, result.threads
    if result.params:
        rec.params = result.params


def measure_product(rec: Record, baseline: Baseline, problem: Problem, target: Problem,
                    settings: Settings, transpose: bool = False) -> BaselineResult:
    """Run ``baseline`` on ``target.x`` (A^T x with ``transpose``) and check its product."""
    result = baseline.measure(problem.csr, target.x, transpose=transpose,
                              warmup=settings.warmup, repeat=settings.repeat,
                              threads=settings.threads)
    take_result(rec, result)
    if result.timing is not None:
        set_times(rec, result.timing)
        check(rec, target, result.y)
    return result


def note(rec: Record, text: str) -> None:
    """Append ``text`` to the record's params (the format's layout parameters)."""
    rec.params = f"{rec.params}; {text}" if rec.params else text
