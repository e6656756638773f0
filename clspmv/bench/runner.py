"""The benchmark loop: matrix x value type x (baselines, then device x format).

Each matrix is loaded (read, generated or downloaded) once; for each value type its canonical
CSR, a random x and the float64 reference product are computed once, the baselines run once,
then every device runs every format: conversion + upload (timed), one product checked against
the reference, warm-up and repeated products (kernel time from profiling events), and the wall
time of a product including the transfers of x and y. Every record is saved as soon as it
exists (:class:`clspmv.bench.records.Results`), so an interrupted run keeps what it measured.

With ``--sweep`` every device then runs the kernel-parameter experiments of
``openmp-vs-cuda.txt`` on each matrix and value type (:mod:`clspmv.bench.sweep`; records with
``operation`` ``sweep``).

With ``--transpose``, ``--matmat`` or ``--solver`` every format, right after its A x, measures
those operations on the same uploaded matrix (:mod:`clspmv.bench.operations`), and every
baseline runs them too; their records carry ``operation`` ``transpose``, ``matmat`` or
``solver``.

A format that cannot run (UnsuitableFormatError, too large, out of memory, no fp64) becomes a
``skipped`` record with the reason and the run goes on; a driver error a ``failed`` one. The
other operations of a format that could not run A x are recorded with the same status and
reason.
"""

from __future__ import annotations

import gc
import math
import os
import platform
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from .. import __version__
from ..device import Device
from ..errors import (
    BuildError,
    DeviceError,
    IndexOverflowError,
    MatrixFormatError,
    UnsuitableFormatError,
)
from ..formats.base import round_up
from ..matrix import FORMATS, DeviceMatrix, canonical_csr
from ..precision import MIXED, Precision
from ..stats import MatrixStats, stats
from . import autoselect, bandwidth, baselines, operations, sweep, timing
from .operations import SPMV, NotApplicable, Operation, check, set_times
from .records import Record, Results, min_bytes
from .sources import Source, SourceError

REFERENCE_FORMAT = "csr-scalar"
"""Break-even counts compare conversion + products against this format (the naive CSR of the
naive-SpMV paper, ``naive-spmv-transpose.txt``)."""

ERROR_FACTOR = 2.0
"""The checked product must satisfy |y_i - ref_i| <= ERROR_FACTOR (len_i + 1) (eps (|A||x|)_i
+ tiny) in every row (the bound of the test suite's oracle)."""

FORMULAS = {
    "gflops": "2 * nnz / kernel time",
    "min_bytes": "nnz * (value + 4) + 4 * (rows + 1) + value * (cols + rows)  "
                 "(values + int32 columns, int32 row pointers, x read once, y written once; "
                 "beta = 0)",
    "gbps": "min_bytes / kernel time",
    "pct_copy_bw": "100 * gbps / copy_gbps (device copy bandwidth measured in the same run)",
    "speedup_vs_X": "kernel time of baseline X / kernel time of this record "
                    "(same matrix, dtype and run)",
    "breakeven_products": "smallest n >= 0 with conversion + n * kernel <= "
                          "conversion(csr-scalar) + n * kernel(csr-scalar); None: never",
    "reduction_vs_ell_pct": "100 * (1 - device_bytes / ELLPACK bytes), ELLPACK bytes = "
                            "rows padded to the SIMD width * longest row * (value + 4)",
    "error_ratio": "max over rows of |y - y_ref| / (2 (len + 1) (eps (|A||x|) + tiny))",
    "max_rel_error": "max |y - y_ref| / max |y_ref|, y_ref the float64 product of the stored "
                     "values (mixed and float32: the same float32 values)",
    "mixed": "float32 values, x and y, sums in float64; compared with the float32 baselines "
             "(scipy, MKL, cuSPARSE in float32) of the same matrix and x",
}

OPERATION_FORMULAS = {
    "transpose": {
        "one_time_ms": "wall time of prepare_transpose() (download, transposition on the host, "
                       "upload; its kernels compiled before)",
        "single_ms": "one_time_ms + kernel time: one A^T x from the stored matrix "
                     "(naive-SpMV paper, Fig. 3, first row)",
        "amortised_ms": "one_time_ms / amortised_over + kernel time",
        "breakeven_products (copy)": "smallest n with one_time + n * kernel(copy) <= "
                                     "n * kernel(atomic), same format",
        "ratio_to_spmv": "kernel time of A^T x / kernel time of A x, same format or baseline",
        "extra_bytes": "device memory of the transposed copy (0 for the atomic kernel)",
    },
    "matmat": {
        "gflops": "2 * nnz * k / kernel time",
        "min_bytes": "nnz * (value + 4) + 4 * (rows + 1) + value * k * (cols + rows)",
        "ratio_to_spmv": "kernel time of A X / (k * kernel time of A x); its inverse is the "
                         "speed-up over k separate products",
    },
    "solver": {
        "ms_per_iteration": "wall time of the solve (median of repeats) / iterations; rtol = "
                            "atol = 0, so every solve runs exactly the iterations asked for",
        "residual": "|b - A x| / |b| after the iterations (float64 on the host)",
        "ratio_to_spmv": "ms_per_iteration / kernel time of A x, same format",
        "error_ratio": "residual / (2 * scipy's residual + 100 eps)",
        "speedup_vs_scipy": "scipy cg's ms_per_iteration on the host / this ms_per_iteration",
    },
}
"""Formulas of the other operations, written into meta when they run."""


@dataclass
class Plan:
    """What one ``clspmv bench`` run measures."""

    sources: list[Source]
    devices: list[Device]
    formats: list[str] | str = "all"  # a list of names, "all" or "auto"
    dtypes: list[np.dtype | str] = field(default_factory=lambda: [np.dtype(np.float64)])
    """Value types, or ``"mixed"`` (float32 values summed in float64: its baselines are
    float32's, run once for both when float32 is in the list too)."""
    baselines: list[str] = field(default_factory=lambda: list(baselines.PRODUCTS))
    repeat: int = 10
    warmup: int = 2
    mkl_threads: int | None = None
    max_seconds: float | None = None
    """Total time budget: once spent, nothing more is started (what is left is recorded as
    skipped, or listed in meta["not_run"] with matrices that cannot run at all)."""
    seed: int = 0
    progress: bool = True
    suite: str | None = None
    transpose: bool = False
    """Also A^T x by both methods (``--transpose``)."""
    matmat: list[int] = field(default_factory=list)
    """Also A X for these numbers of columns (``--matmat``)."""
    solvers: list[str] = field(default_factory=list)
    """Also these solvers' time per iteration (``--solver``)."""
    solver_iterations: int = 100
    sweep: bool = False
    """Also the kernel-parameter sweep on every device (``--sweep``)."""

    @property
    def operations(self) -> list[str]:
        """The operations measured besides A x."""
        return ([*(["transpose"] if self.transpose else []), *(["matmat"] if self.matmat else []),
                 *(["solver"] if self.solvers else [])])

    def settings(self) -> operations.Settings:
        return operations.Settings(self.warmup, self.repeat, self.solver_iterations)

    def formats_for_count(self) -> int:
        if self.formats == "all":
            return len(FORMATS)
        if self.formats == "auto":
            return 2
        return len(self.formats)


def device_label(device: Device) -> str:
    """How a device is named in records: ``name (platform)``."""
    return f"{device.name} ({device.platform})"


# -- run meta data ------------------------------------------------------------------------------
def _git() -> dict[str, Any] | None:
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                                text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--",
                                "clspmv", "kernels_cl"], capture_output=True, text=True,
                               timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "modified": bool(dirty)}


def _versions() -> dict[str, str]:
    import pyopencl
    import scipy

    out = {"clspmv": __version__, "python": platform.python_version(), "numpy": np.__version__,
           "scipy": scipy.__version__, "pyopencl": pyopencl.VERSION_TEXT}
    for module in ("sparse_dot_mkl", "cupy", "tqdm", "tabulate", "matplotlib"):
        mod = sys.modules.get(module)
        if mod is not None:
            out[module] = str(getattr(mod, "__version__", "?"))
    mkl = sys.modules.get("sparse_dot_mkl")
    if mkl is not None:
        try:
            out["mkl"] = mkl.mkl_get_version_string()
        except Exception:  # an old sparse_dot_mkl: the version is not essential
            pass
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        try:
            out["cuda_runtime"] = str(cupy.cuda.runtime.runtimeGetVersion())
            out["cuda_driver"] = str(cupy.cuda.runtime.driverGetVersion())
        except Exception:
            pass
    return out


def _device_meta(device: Device) -> dict[str, Any]:
    return {
        "label": device_label(device), "name": device.name, "platform": device.platform,
        "type": device.type, "driver_version": device.driver_version,
        "opencl_version": device.cl_device.version.strip(),
        "compute_units": device.compute_units, "global_memory": device.global_memory,
        "max_allocation": device.max_allocation, "cache_bytes": device.cache_bytes,
        "simd_width": device.simd_width, "fp64": device.fp64,
    }


def run_meta(plan: Plan, command: str) -> dict[str, Any]:
    """The ``meta`` block of results.json (devices, host, versions, git commit, command)."""
    return {
        "tool": "clspmv bench",
        "command": command,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "finished": None,
        "interrupted": False,
        "host": {"name": socket.gethostname(), "cpu": baselines.host_cpu(),
                 "cores": os.cpu_count(), "os": platform.platform()},
        "versions": _versions(),
        "git": _git(),
        "devices": [_device_meta(d) for d in plan.devices],
        "settings": {
            "suite": plan.suite, "matrices": [s.name for s in plan.sources],
            "formats": plan.formats, "dtypes": [Precision.of(d).name for d in plan.dtypes],
            "baselines": plan.baselines, "repeat": plan.repeat, "warmup": plan.warmup,
            "mkl_threads": plan.mkl_threads, "max_seconds": plan.max_seconds, "seed": plan.seed,
            "beta": 0.0, "alpha": 1.0,
            **({"operations": plan.operations, "transpose": plan.transpose,
                "matmat": plan.matmat, "solvers": plan.solvers,
                "solver_iterations": plan.solver_iterations,
                "amortised_over": operations.AMORTISED_OVER} if plan.operations else {}),
            **({"sweep": sweep.settings()} if plan.sweep else {}),
        },
        "formulas": {**FORMULAS, **{f"{op}: {name}": text for op in plan.operations
                                    for name, text in OPERATION_FORMULAS[op].items()}},
        "not_run": [],
    }


# -- the checks and the numbers of one record ---------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One matrix in one precision: its CSR (float32 values for ``mixed``), x, the float64
    reference product and the error bound (float32's for ``mixed`` too)."""

    name: str
    csr: sp.csr_matrix
    stats: MatrixStats
    x: np.ndarray
    """The input: a vector, or an n x k array for several right-hand sides."""
    reference: np.ndarray
    bound: np.ndarray
    seed: int = 0
    derived: dict[Any, Problem] = field(default_factory=dict, repr=False, compare=False)
    """Problems made from this one (:meth:`transposed`, :meth:`columns`), kept for reuse."""
    precision: Precision | None = None
    """None: the CSR's value type, summed in it."""

    @property
    def accuracy(self) -> Precision:
        """How the formats store and sum this problem."""
        return self.precision or Precision.of(self.csr.dtype)

    def mixed(self) -> Problem:
        """The same float32 problem run with float64 sums (``dtype="mixed"``)."""
        return replace(self, precision=Precision.of(MIXED))

    @classmethod
    def build(cls, name: str, A: sp.spmatrix, s: MatrixStats, dtype: np.dtype,
              seed: int) -> Problem:
        csr = canonical_csr(A, dtype)
        x = np.random.default_rng(seed).uniform(-1.0, 1.0, csr.shape[1]).astype(dtype)
        return cls(name, csr, s, x, *reference_and_bound(csr, x), seed=seed)

    def transposed(self) -> Problem:
        """A^T with a random x of its own (seed + 1): the check of A^T x. Its ``csr`` is A^T;
        records are still made from this problem, which describes A."""
        if "T" not in self.derived:
            csr_t = self.csr.T.tocsr()
            csr_t.sort_indices()
            x = np.random.default_rng(self.seed + 1).uniform(-1.0, 1.0, csr_t.shape[1])
            x = x.astype(self.csr.dtype)
            self.derived["T"] = Problem(self.name, csr_t, self.stats, x,
                                        *reference_and_bound(csr_t, x), seed=self.seed + 1)
        return self.derived["T"]

    def columns(self, k: int, order: str = "C") -> Problem:
        """A with an n x k random X in ``order``: the first k columns of the widest X asked for
        so far (column j is the same for every k: seed + 2, drawn column after column), with
        its reference and bound. Ask for the widest first to draw it once."""
        widest = self.derived.get("X")
        if widest is None or widest.x.shape[1] < k:
            n = self.csr.shape[1]
            X = np.random.default_rng(self.seed + 2).uniform(-1.0, 1.0, (k, n)).T
            X = X.astype(self.csr.dtype)
            widest = self.derived["X"] = Problem(self.name, self.csr, self.stats, X,
                                                 *reference_and_bound(self.csr, X),
                                                 seed=self.seed + 2)
        as_order = np.asfortranarray if order == "F" else np.ascontiguousarray
        return Problem(self.name, self.csr, self.stats, as_order(widest.x[:, :k]),
                       widest.reference[:, :k], widest.bound[:, :k], seed=widest.seed)

    def error_ratio(self, y: np.ndarray) -> float:
        """max |y - reference| / bound over the rows (NaN counts as infinitely wrong)."""
        if y.size == 0:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = np.abs(np.asarray(y, np.float64) - self.reference) / self.bound
        return float("inf") if np.isnan(ratio).any() else float(ratio.max())

    def max_rel_error(self, y: np.ndarray) -> float:
        """max |y - reference| / max |reference| (NaN counts as infinitely wrong)."""
        if y.size == 0:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(np.asarray(y, np.float64) - self.reference)
        if np.isnan(err).any():
            return float("inf")
        scale = float(np.abs(self.reference).max())
        return float(err.max()) / scale if scale > 0 else float(err.max())

    def record(self, device: str, device_type: str, fmt: str, kind: str = "format") -> Record:
        m, n = self.csr.shape
        rec = Record(matrix=self.name, rows=m, cols=n, nnz=self.csr.nnz, device=device,
                     device_type=device_type, format=fmt, dtype=self.accuracy.name, kind=kind,
                     host=socket.gethostname())
        rec.set_matrix_stats(self.stats)
        rec.min_bytes = min_bytes(m, n, self.csr.nnz, self.csr.dtype.itemsize)
        return rec


def reference_and_bound(csr: sp.csr_matrix, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's float64 product A x (x a vector or an n x k array) and the per-entry error
    bound ERROR_FACTOR (len + 1) (eps (|A||x|) + tiny), len the entries of the row."""
    x64 = x.astype(np.float64)
    A64 = sp.csr_matrix((csr.data.astype(np.float64), csr.indices, csr.indptr),
                        shape=csr.shape)
    reference = A64 @ x64
    A64.data = np.abs(A64.data)
    magnitude = A64 @ np.abs(x64)
    finfo = np.finfo(csr.dtype)
    lengths = np.diff(csr.indptr).astype(np.float64) + 1
    if x.ndim == 2:
        lengths = lengths[:, None]
    bound = ERROR_FACTOR * lengths * (finfo.eps * magnitude + finfo.tiny)
    return reference, bound


def ell_bytes(rows: int, longest: int, simd_width: int, value_bytes: int) -> int:
    """Bytes of plain ELLPACK on a device: rows padded to the SIMD width x longest row."""
    return round_up(rows, simd_width) * longest * (value_bytes + 4)


def breakeven(conv: float, kern: float, conv_ref: float, kern_ref: float) -> int | None:
    """Smallest n >= 0 with conv + n kern <= conv_ref + n kern_ref; None if there is none."""
    if conv <= conv_ref and kern <= kern_ref:
        return 0
    if kern >= kern_ref:
        return None
    return max(0, math.ceil((conv - conv_ref) / (kern_ref - kern)))


def set_breakeven(group: list[Record]) -> None:
    """Break-even counts of the records of one matrix, device and dtype against csr-scalar."""
    ref = next((r for r in group if r.format == REFERENCE_FORMAT and r.status == "ok"), None)
    for rec in group:
        if ref is None or rec.status != "ok" or rec.conversion_ms is None:
            continue
        rec.breakeven_products = breakeven(rec.conversion_ms, rec.kernel_ms or 0.0,
                                           ref.conversion_ms or 0.0, ref.kernel_ms or 0.0)


def set_speedups(rec: Record, baseline_ms: dict[str, float]) -> None:
    """speedup_vs_X = baseline X's time / the record's (kernel times, or times per iteration
    for solvers; for baselines that ran the same operation)."""
    ms = rec.compared_ms
    if rec.status not in ("ok", "wrong") or not ms:
        return
    for name, baseline in baseline_ms.items():
        setattr(rec, f"speedup_vs_{name}", baseline / ms)


# -- the runner ---------------------------------------------------------------------------------
_OUT_OF_MEMORY = (MemoryError, cl.MemoryError)


def _is_out_of_memory(err: cl.Error) -> bool:
    code = getattr(err, "code", None)
    return code in (cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                    cl.status_code.OUT_OF_RESOURCES, cl.status_code.OUT_OF_HOST_MEMORY)


class Runner:
    """Runs a :class:`Plan`, saving records into ``results`` as they come."""

    def __init__(self, plan: Plan, results: Results) -> None:
        self.plan = plan
        self.results = results
        self.started = time.monotonic()
        self.bandwidths: dict[str, bandwidth.Bandwidth] = {}
        self.bar = None

    # budget
    def out_of_time(self) -> bool:
        budget = self.plan.max_seconds
        return budget is not None and time.monotonic() - self.started > budget

    def _budget_reason(self) -> str:
        return f"time budget of {self.plan.max_seconds:g} s (--max-seconds) spent"

    def run(self) -> Results:
        from tqdm import tqdm

        plan = self.plan
        total = len(plan.sources) * len(plan.dtypes) * self.per_dtype()
        with tqdm(total=total, disable=not plan.progress, unit="run", dynamic_ncols=True,
                  desc="clspmv bench") as self.bar:
            try:
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
        per_device = self.plan.formats_for_count() + (len(sweep.grid()) if self.plan.sweep else 0)
        return len(self.plan.baselines) + len(self.plan.devices) * per_device

    def not_run(self, what: str, steps: int) -> None:
        """Note a matrix that cannot run (in meta and on stderr) and go on."""
        self.results.meta["not_run"].append(what)
        self.results.save()
        if self.bar is not None:
            self.bar.total -= steps
            self.bar.write(f"clspmv: not run: {what}", file=sys.stderr)

    def _progress(self, what: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(what, refresh=False)
            self.bar.update()

    def run_matrix(self, source: Source) -> None:
        A = source.load()
        s = stats(A)
        float32: tuple[Problem, BaselineRecords] | None = None  # kept for "mixed"
        for dtype in self.plan.dtypes:
            precision = Precision.of(dtype)
            if precision.mixed and float32 is not None:
                problem, baseline = float32[0].mixed(), float32[1]
                if self.bar is not None:  # float32's baselines are not run again
                    self.bar.total -= len(self.plan.baselines)
            else:
                try:
                    problem = Problem.build(source.name, A, s, precision.value, self.plan.seed)
                except (TypeError, ValueError) as err:  # complex values, beyond 32-bit indices
                    self.not_run(f"{source.name} {precision.name} ({err})", self.per_dtype())
                    continue
                if self.plan.matmat:  # X, its reference and bound, for the largest k at once
                    problem.columns(max(self.plan.matmat))
                baseline = self.run_baselines(problem)  # mixed: float32's baselines
                if precision.value == np.float32 and any(
                        Precision.of(d).mixed for d in self.plan.dtypes):
                    float32 = (problem, baseline)
                problem = problem.mixed() if precision.mixed else problem
            for device in self.plan.devices:
                self.run_device(problem, device, baseline)
            del problem
            gc.collect()

    def run_baselines(self, problem: Problem) -> BaselineRecords:
        """Every baseline's A x, then its other operations; their records by operation."""
        plan = self.plan
        by_op: BaselineRecords = {}
        spmv: dict[str, Record] = {}
        for name in plan.baselines:
            spmv[name] = self.baseline_record(problem, name, SPMV, None)
            by_op.setdefault(SPMV.key, {})[name] = spmv[name]
            self._progress(f"{problem.name} {problem.csr.dtype} {name}")
        for op in operations.baseline_operations(plan.transpose, plan.matmat, plan.solvers):
            for name in plan.baselines:
                if op.operation == "solver" and name != "scipy":
                    continue  # the solver baseline is scipy's
                by_op.setdefault(op.key, {})[name] = self.baseline_record(problem, name, op,
                                                                          spmv[name])
        for recs in by_op.values():
            times = _times(recs)
            for rec in recs.values():
                set_speedups(rec, times)
                self.results.add(rec)
        return by_op

    def baseline_record(self, problem: Problem, name: str, op: Operation,
                        spmv: Record | None) -> Record:
        """Run baseline ``name`` on ``op`` and make its record (``failed`` if it raises)."""
        kwargs: dict[str, Any] = {"warmup": self.plan.warmup, "repeat": self.plan.repeat}
        if name == "mkl":
            kwargs["threads"] = self.plan.mkl_threads
        target = problem
        try:
            if op.operation == "solver":
                result = baselines.scipy_solver(problem.csr, operations.solver_rhs(problem),
                                                op.method, self.plan.solver_iterations,
                                                **kwargs)
            else:
                if op.operation == "transpose":
                    target = problem.transposed()
                elif op.operation == "matmat":
                    target = problem.columns(op.k or 1, op.order)
                result = baselines.PRODUCTS[name](problem.csr, target.x,
                                                  transpose=op.operation == "transpose",
                                                  **kwargs)
        except NotApplicable as err:
            result = baselines.BaselineResult(name, name, "cpu", "skipped", str(err))
        except Exception as err:  # a library error: recorded, the run goes on
            result = baselines.BaselineResult(
                name, name, "gpu" if name == "cusparse" else "cpu", "failed",
                f"{type(err).__name__}: {_first_lines(err)}")
        rec = problem.record(result.device, result.device_type, name, kind="baseline")
        if op != SPMV:
            operations.apply(rec, problem, op, spmv)
        rec.status, rec.reason, rec.threads = result.status, result.reason, result.threads
        if result.params:
            rec.params = result.params
        if result.timing is None:
            return rec
        if op.operation == "solver":
            rec.iterations, rec.repeats = result.iterations, result.timing.repeats
            rec.wall_ms = result.timing.median_ms
            rec.ms_per_iteration = result.timing.median_ms / max(result.iterations or 1, 1)
            rec.residual = operations.relative_residual(
                problem.csr, result.y, operations.solver_rhs(problem))
        else:
            set_times(rec, result.timing)
            check(rec, target, result.y)
            if op.operation == "transpose":
                operations.set_amortised(rec)
        operations.set_ratio(rec)
        return rec

    def bandwidth_of(self, device: Device) -> bandwidth.Bandwidth:
        label = device_label(device)
        if label not in self.bandwidths:
            bw = bandwidth.measure(device)
            self.bandwidths[label] = bw
            for entry in self.results.meta["devices"]:
                if entry["label"] == label:
                    entry["bandwidth"] = bw.as_dict()
        return self.bandwidths[label]

    def formats_for(self, problem: Problem, device: Device) -> tuple[list[str], str]:
        if self.plan.formats == "all":
            return list(FORMATS), ""
        if self.plan.formats == "auto":
            chosen, why = autoselect.choose(problem.csr, problem.stats, device)
            return list(dict.fromkeys([chosen, REFERENCE_FORMAT])), f"auto: {why}"
        return list(self.plan.formats), ""

    def operations_for(self, fmt: str) -> list[Operation]:
        """The operations besides A x measured for ``fmt``; formats without a block kernel
        run --matmat only when --formats names them."""
        plan = self.plan
        return operations.format_operations(fmt, plan.transpose, plan.matmat, plan.solvers,
                                            fallback_matmat=isinstance(plan.formats, list))

    def run_device(self, problem: Problem, device: Device, baseline: BaselineRecords) -> None:
        label = device_label(device)
        formats, note = self.formats_for(problem, device)
        if self.plan.formats == "auto" and self.bar is not None and len(formats) == 1:
            self.bar.total -= 1
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
                rec.status, rec.reason = "skipped", self._budget_reason()
            extras = (self.measure(rec, problem, device, fmt) if rec.status == "ok"
                      else self.unmeasured(rec, problem, fmt))
            set_speedups(rec, _times(baseline.get(SPMV.key, {})))
            group.append(self.results.add(rec))
            for extra in extras:
                op = Operation(extra.operation, extra.method, extra.k, extra.order)
                recs = baseline.get(op.key, {})
                if extra.operation == "solver" and "scipy" in recs:
                    operations.check_solver(extra, recs["scipy"].residual)
                set_speedups(extra, _times(recs))
                self.results.add(extra)
            self._progress(f"{problem.name} {problem.accuracy.name} {device.name[:24]} {fmt}")
            gc.collect()
        set_breakeven(group)
        self.results.save()
        if self.plan.sweep:
            sweep.run(self, problem, device, sweep.grid())

    def measure(self, rec: Record, problem: Problem, device: Device, fmt: str) -> list[Record]:
        """Convert, check and time one format; on failure set status and reason. Returns the
        records of the other operations of the plan, measured on the same matrix."""
        plan = self.plan
        try:
            conv = timing.convert(problem.csr, fmt, device,
                                  accumulate=problem.accuracy.accumulate)
        except Exception as err:
            rec.status, rec.reason = _classify(err, "converting")
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
                check(rec, problem, np.asarray(M.matvec(problem.x)))
                set_times(rec, timing.time_kernels(M, problem.x, warmup=plan.warmup,
                                                   repeat=plan.repeat))
                rec.wall_ms = timing.time_wall(M, problem.x, repeat=min(plan.repeat, 5)).median_ms
                if rec.cache_bytes:
                    rec.fits_cache = bool((rec.min_bytes or 0) <= rec.cache_bytes)
            except Exception as err:
                rec.status, rec.reason = _classify(err, "running")
            if rec.status not in ("ok", "wrong"):
                return self.unmeasured(rec, problem, fmt)
            return self.measure_operations(M, rec, problem)
        finally:
            del M, conv

    def measure_operations(self, M: DeviceMatrix, spmv: Record, problem: Problem
                           ) -> list[Record]:
        """The plan's other operations of the matrix ``M`` whose A x is ``spmv``."""
        out = []
        for op in self.operations_for(spmv.format):
            rec = problem.record(spmv.device, spmv.device_type, spmv.format)
            operations.apply(rec, problem, op, spmv)
            if self.out_of_time():
                rec.status, rec.reason = "skipped", self._budget_reason()
            else:
                try:
                    operations.measure(rec, M, problem, op, self.plan.settings())
                except NotApplicable as err:
                    rec.status, rec.reason = "skipped", str(err)
                except Exception as err:
                    rec.status, rec.reason = _classify(err, "running")
            out.append(rec)
        operations.set_breakeven(out)
        return out

    def unmeasured(self, spmv: Record, problem: Problem, fmt: str) -> list[Record]:
        """Records of the other operations of a format whose A x could not run, with its
        status and reason."""
        out = []
        for op in self.operations_for(fmt):
            rec = replace(problem.record(spmv.device, spmv.device_type, fmt),
                          status=spmv.status, reason=spmv.reason)
            operations.apply(rec, problem, op, spmv)
            out.append(rec)
        return out


BaselineRecords = dict[tuple[str, int | None, str], dict[str, Record]]
"""The baselines' records of one matrix and value type: by operation key, then by name."""


def _times(recs: dict[str, Record]) -> dict[str, float]:
    """The compared times (kernel, or per iteration) of the baseline records that ran well."""
    return {name: r.compared_ms for name, r in recs.items()
            if r.status == "ok" and r.compared_ms}


def _classify(err: Exception, when: str) -> tuple[str, str]:
    """(status, reason) of a format that raised ``err``; programming errors are re-raised.

    Skipped: the format cannot hold this matrix here (unsuitable, too large, out of host or
    device memory, no fp64). Failed: a kernel that does not build, or another driver error.
    """
    if isinstance(err, BuildError):
        return "failed", _first_lines(err)
    if isinstance(err, (UnsuitableFormatError, DeviceError, IndexOverflowError, NotApplicable)):
        return "skipped", _first_lines(err)
    if isinstance(err, _OUT_OF_MEMORY):
        return "skipped", f"out of memory {when}: {_first_lines(err)}"
    if isinstance(err, cl.Error):
        if _is_out_of_memory(err):
            return "skipped", f"out of device resources {when}: {_first_lines(err)}"
        return "failed", f"OpenCL error {when}: {_first_lines(err)}"
    raise err


def _first_lines(err: BaseException, lines: int = 3) -> str:
    return " ".join(str(err).splitlines()[:lines])
