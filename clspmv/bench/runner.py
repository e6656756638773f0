"""The benchmark loop: matrix x value type x (baselines, then device x format).

Each matrix is loaded (read, generated or downloaded) once; for each value type its
:class:`~clspmv.bench.reference.Problem` (canonical CSR, a random x, the float64 reference
product and the error bound) is made once, the registered baselines
(:data:`clspmv.bench.registry.BASELINES`) run once, then every device runs every format:
conversion + upload (timed), one product checked against the reference, warm-up and repeated
products (kernel time from profiling events), and the wall time of a product including the
transfers of x and y (:data:`clspmv.bench.product.PRODUCT`, the operation every run measures,
the baselines' A x too). Right after a format's A x, the registered operations the plan asks for
(:data:`clspmv.bench.registry.OPERATIONS`: ``--transpose``, ``--matmat``, ``--solver``) measure
their cases on the same uploaded matrix, and the baselines run theirs; after every format of a
device, the per-device operations run (``--sweep``). The runner knows no baseline or operation
by name. Every record is saved as soon as it exists (:class:`clspmv.bench.records.Results`), so
an interrupted run keeps what it measured.

A format that cannot run (UnsuitableFormatError, too large, out of memory, no fp64) becomes a
``skipped`` record with the reason and the run goes on; a driver error a ``failed`` one
(:mod:`clspmv.bench.errors`). The other operations of a format that could not run A x are
recorded with the same status and reason.
"""

from __future__ import annotations

import gc
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np

from .. import bandwidth
from ..device import Device
from ..errors import MatrixFormatError
from ..formats import SINGLE_FORMATS
from ..matrix import DeviceMatrix
from ..model import select
from ..precision import Precision
from ..row_stats import stats
from . import timing
from .baseline import Baseline
from .errors import NotApplicable, classify, first_lines
from .operation import SPMV, Case, Operation, Settings
from .plan import Plan
from .product import PRODUCT
from .progress import Progress
from .records import Record, Results, device_label, ell_bytes
from .reference import Problem
from .registry import BASELINES, OPERATIONS
from .sources import Source, SourceError
from .speedups import REFERENCE_FORMAT, set_speedups, times

__all__ = ["Plan", "Results", "Runner"]

BaselineRecords = dict[tuple[str, int | None, str], dict[str, Record]]
"""The baselines' records of one matrix and value type: by case key, then by name."""


def _compared(key: tuple[str, int | None, str]) -> str:
    """The field the records of a case key compare (its operation's ``compared``)."""
    return (OPERATIONS.get(key[0]) or PRODUCT).compared


class Runner:
    """Runs a :class:`~clspmv.bench.plan.Plan`, saving records into ``results`` as they come;
    the :class:`~clspmv.bench.operation.Context` of the per-device operations."""

    def __init__(self, plan: Plan, results: Results) -> None:
        self.plan = plan
        self.results = results
        self.settings: Settings = plan.settings()
        self.started = time.monotonic()
        self.bandwidths: dict[str, bandwidth.Bandwidth] = {}
        self.bar = Progress(enabled=plan.progress)

    # the context of the operations
    def out_of_time(self) -> bool:
        budget = self.plan.max_seconds
        return budget is not None and time.monotonic() - self.started > budget

    def budget_reason(self) -> str:
        return f"time budget of {self.plan.max_seconds:g} s (--max-seconds) spent"

    def progress(self, what: str) -> None:
        self.bar.step(what)

    def copy_gbps(self, device: Device) -> float | None:
        return self.bandwidth_of(device).copy_gbps

    # the loop
    def run(self) -> Results:
        plan = self.plan
        total = len(plan.sources) * len(plan.dtypes) * self.per_dtype()
        try:  # around the bar too: an interrupt while it is drawn is saved as one
            with self.bar.start(total):
                for i, source in enumerate(plan.sources):
                    if self.out_of_time():
                        self.results.meta["not_run"] += [
                            f"{s.name} (time budget spent)" for s in plan.sources[i:]]
                        break
                    try:
                        self.run_matrix(source)
                    except (MatrixFormatError, SourceError) as err:  # unreadable: go on
                        self.not_run(f"{source.name} ({err})",
                                     len(plan.dtypes) * self.per_dtype())
        except KeyboardInterrupt:
            self.results.meta["interrupted"] = True
            raise
        finally:
            self.results.meta["finished"] = datetime.now(timezone.utc).isoformat(
                timespec="seconds")
            self.results.save()
        return self.results

    def per_dtype(self) -> int:
        """Progress steps of one matrix in one value type."""
        per_device = self.plan.formats_for_count() + sum(op.steps(self.plan)
                                                         for op in self.plan.active)
        return len(self.plan.baselines) + len(self.plan.devices) * per_device

    def not_run(self, what: str, steps: int) -> None:
        """Note a matrix that cannot run (in meta and on stderr) and go on."""
        self.results.meta["not_run"].append(what)
        self.results.save()
        self.bar.drop(steps)
        self.bar.write(f"clspmv: not run: {what}", file=sys.stderr)

    def run_matrix(self, source: Source) -> None:
        A = source.load()
        s = stats(A)
        float32: tuple[Problem, BaselineRecords] | None = None  # kept for "mixed"
        for dtype in self.plan.dtypes:
            precision = Precision.of(dtype)
            if precision.mixed and float32 is not None:
                problem, baseline = float32[0].mixed(), float32[1]
                self.bar.drop(len(self.plan.baselines))  # float32's are not run again
            else:
                try:
                    problem = Problem.build(source.name, A, s, precision.value, self.plan.seed)
                except (TypeError, ValueError) as err:  # complex values, beyond 32-bit indices
                    self.not_run(f"{source.name} {precision.name} ({err})", self.per_dtype())
                    continue
                for op in self.plan.active:
                    op.prepare(problem, self.plan)
                baseline = self.run_baselines(problem)  # mixed: float32's baselines
                if precision.value == np.float32 and any(
                        Precision.of(d).mixed for d in self.plan.dtypes):
                    float32 = (problem, baseline)
                problem = problem.mixed() if precision.mixed else problem
            for device in self.plan.devices:
                self.run_device(problem, device, baseline)
            del problem
            gc.collect()

    # baselines
    def run_baselines(self, problem: Problem) -> BaselineRecords:
        """Every baseline's A x, then its cases of the other operations; records by case."""
        by_case: BaselineRecords = {}
        spmv: dict[str, Record] = {}
        chosen = [BASELINES[name] for name in self.plan.baselines]
        for b in chosen:
            spmv[b.name] = self.baseline_record(problem, b, PRODUCT, SPMV, None)
            by_case.setdefault(SPMV.key, {})[b.name] = spmv[b.name]
            self.progress(f"{problem.name} {problem.csr.dtype} {b.name}")
        for op in self.plan.active:
            for b in chosen:
                for case in op.baseline_cases(self.plan, b):
                    by_case.setdefault(case.key, {})[b.name] = self.baseline_record(
                        problem, b, op, case, spmv[b.name])
        for key, recs in by_case.items():
            field = _compared(key)
            compared = times(recs, field)
            for rec in recs.values():
                set_speedups(rec, compared, field)
                self.results.add(rec)
        return by_case

    def baseline_record(self, problem: Problem, baseline: Baseline, op: Operation,
                        case: Case, spmv: Record | None) -> Record:
        """Run ``baseline`` on ``case`` of ``op`` and make its record (``failed`` if it
        raises)."""
        rec = problem.record(baseline.name, baseline.device_type, baseline.name,
                             kind="baseline")
        op.start(rec, problem, case, spmv)
        try:
            op.measure_baseline(rec, baseline, problem, case, self.settings)
        except NotApplicable as err:
            rec.status, rec.reason = "skipped", str(err)
        except Exception as err:  # a library error: recorded, the run goes on
            rec.status, rec.reason = "failed", f"{type(err).__name__}: {first_lines(err)}"
        return rec

    # devices and formats
    def bandwidth_of(self, device: Device) -> bandwidth.Bandwidth:
        label = device_label(device)
        if label not in self.bandwidths:
            bw = bandwidth.measure(device, progress=self.plan.progress)
            self.bandwidths[label] = bw
            for entry in self.results.meta["devices"]:
                if entry["label"] == label:
                    entry["bandwidth"] = bw.as_dict()
        return self.bandwidths[label]

    def formats_for(self, problem: Problem, device: Device) -> tuple[list[str], str]:
        if self.plan.formats == "all":
            return list(SINGLE_FORMATS), ""
        if self.plan.formats == "auto":
            # the library's own choice (format="auto" of DeviceMatrix.from_scipy)
            chosen = select(problem.csr, device)
            return (list(dict.fromkeys([chosen.format, REFERENCE_FORMAT])),
                    f"auto: {chosen.why} ({chosen.calibration} calibration)")
        return list(self.plan.formats), ""

    def cases_for(self, fmt: str) -> list[tuple[Operation, Case]]:
        """The cases of the plan's operations measured on ``fmt`` after its A x."""
        return [(op, case) for op in self.plan.active for case in op.cases(self.plan, fmt)]

    def run_device(self, problem: Problem, device: Device, baseline: BaselineRecords) -> None:
        label = device_label(device)
        formats, note = self.formats_for(problem, device)
        if self.plan.formats == "auto" and len(formats) == 1:
            self.bar.drop(1)
        bw = self.bandwidth_of(device)
        group: list[Record] = []
        for fmt in formats:
            rec = problem.record(label, device.type, fmt)
            rec.copy_gbps, rec.cache_bytes = bw.copy_gbps, device.cache_bytes
            longest = int(problem.stats.av + problem.stats.max_minus_av + 0.5)
            rec.ell_bytes = ell_bytes(rec.rows, longest, device.simd_width,
                                      problem.csr.dtype.itemsize)
            if note and fmt == formats[0]:
                rec.params = note  # why --formats auto chose it
            if self.out_of_time():
                rec.status, rec.reason = "skipped", self.budget_reason()
            others = (self.measure(rec, problem, device, fmt) if rec.status == "ok"
                      else self.unmeasured(rec, problem, fmt))
            set_speedups(rec, times(baseline.get(SPMV.key, {})))  # A x: kernel times
            group.append(self.results.add(rec))
            for op, case, other in others:
                recs = baseline.get(case.key, {})
                op.compare(other, recs)
                set_speedups(other, times(recs, op.compared), op.compared)
                self.results.add(other)
            self.progress(f"{problem.name} {problem.accuracy.name} {device.name[:24]} {fmt}")
            gc.collect()
        PRODUCT.finish(group)
        self.results.save()
        for op in self.plan.active:
            op.run_device(self, problem, device)

    def measure(self, rec: Record, problem: Problem, device: Device, fmt: str
                ) -> list[tuple[Operation, Case, Record]]:
        """Convert, check and time one format; on failure set status and reason. Returns the
        records of the plan's other operations, measured on the same matrix."""
        try:
            conv = timing.convert(problem.csr, fmt, device,
                                  accumulate=problem.accuracy.accumulate)
        except Exception as err:
            rec.status, rec.reason = classify(err, "converting")
            return self.unmeasured(rec, problem, fmt)
        M = conv.matrix
        try:
            try:
                rec.host_conversion_ms, rec.upload_ms = conv.host_ms, conv.upload_ms
                rec.conversion_ms = conv.total_ms
                rec.device_bytes = M.nbytes
                rec.params = ", ".join(f"{k}={v}" for k, v in M.params.items()) + (
                    f"; {rec.params}" if rec.params else "")
                if rec.ell_bytes:
                    rec.reduction_vs_ell_pct = 100.0 * (1 - M.nbytes / rec.ell_bytes)
                PRODUCT.measure(rec, M, problem, SPMV, self.settings)
            except Exception as err:
                rec.status, rec.reason = classify(err, "running")
            if rec.status not in ("ok", "wrong"):
                return self.unmeasured(rec, problem, fmt)
            return self.measure_operations(M, rec, problem)
        finally:
            del M, conv

    def measure_operations(self, M: DeviceMatrix, spmv: Record, problem: Problem
                           ) -> list[tuple[Operation, Case, Record]]:
        """The plan's other operations of the matrix ``M`` whose A x is ``spmv``."""
        out = []
        for op, case in self.cases_for(spmv.format):
            rec = problem.record(spmv.device, spmv.device_type, spmv.format)
            op.start(rec, problem, case, spmv)
            if self.out_of_time():
                rec.status, rec.reason = "skipped", self.budget_reason()
            else:
                try:
                    op.measure(rec, M, problem, case, self.settings)
                except NotApplicable as err:
                    rec.status, rec.reason = "skipped", str(err)
                except Exception as err:
                    rec.status, rec.reason = classify(err, "running")
            out.append((op, case, rec))
        for op in self.plan.active:
            op.finish([rec for o, _, rec in out if o is op])
        return out

    def unmeasured(self, spmv: Record, problem: Problem, fmt: str
                   ) -> list[tuple[Operation, Case, Record]]:
        """Records of the other operations of a format whose A x could not run, with its
        status and reason."""
        out = []
        for op, case in self.cases_for(fmt):
            rec = replace(problem.record(spmv.device, spmv.device_type, fmt),
                          status=spmv.status, reason=spmv.reason)
            op.start(rec, problem, case, spmv)
            out.append((op, case, rec))
        return out
