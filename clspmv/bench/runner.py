"""The benchmark loop: matrix x value type x (baselines, then device x format).

Each matrix is loaded (read, generated or downloaded) once; for each value type its canonical
CSR, a random x and the float64 reference product are computed once, the baselines run once,
then every device runs every format: conversion + upload (timed), one product checked against
the reference, warm-up and repeated products (kernel time from profiling events), and the wall
time of a product including the transfers of x and y. Every record is saved as soon as it
exists (:class:`clspmv.bench.records.Results`), so an interrupted run keeps what it measured.

A format that cannot run (UnsuitableFormatError, too large, out of memory, no fp64) becomes a
``skipped`` record with the reason and the run goes on; a driver error a ``failed`` one.
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
from dataclasses import dataclass, field
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
from ..matrix import FORMATS, canonical_csr
from ..stats import MatrixStats, stats
from . import autoselect, bandwidth, baselines, timing
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
}


@dataclass
class Plan:
    """What one ``clspmv bench`` run measures."""

    sources: list[Source]
    devices: list[Device]
    formats: list[str] | str = "all"  # a list of names, "all" or "auto"
    dtypes: list[np.dtype] = field(default_factory=lambda: [np.dtype(np.float64)])
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
            "formats": plan.formats, "dtypes": [d.name for d in plan.dtypes],
            "baselines": plan.baselines, "repeat": plan.repeat, "warmup": plan.warmup,
            "mkl_threads": plan.mkl_threads, "max_seconds": plan.max_seconds, "seed": plan.seed,
            "beta": 0.0, "alpha": 1.0,
        },
        "formulas": FORMULAS,
        "not_run": [],
    }


# -- the checks and the numbers of one record ---------------------------------------------------
@dataclass(frozen=True)
class Problem:
    """One matrix in one value type: its CSR, x, the reference product and the error bound."""

    name: str
    csr: sp.csr_matrix
    stats: MatrixStats
    x: np.ndarray
    reference: np.ndarray
    bound: np.ndarray

    @classmethod
    def build(cls, name: str, A: sp.spmatrix, s: MatrixStats, dtype: np.dtype,
              seed: int) -> Problem:
        csr = canonical_csr(A, dtype)
        x = np.random.default_rng(seed).uniform(-1.0, 1.0, csr.shape[1]).astype(dtype)
        x64 = x.astype(np.float64)
        A64 = sp.csr_matrix((csr.data.astype(np.float64), csr.indices, csr.indptr),
                            shape=csr.shape)
        reference = A64 @ x64
        A64.data = np.abs(A64.data)
        magnitude = A64 @ np.abs(x64)
        finfo = np.finfo(dtype)
        lengths = np.diff(csr.indptr).astype(np.float64) + 1
        bound = ERROR_FACTOR * lengths * (finfo.eps * magnitude + finfo.tiny)
        return cls(name, csr, s, x, reference, bound)

    def error_ratio(self, y: np.ndarray) -> float:
        """max |y - reference| / bound over the rows (NaN counts as infinitely wrong)."""
        if y.size == 0:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = np.abs(np.asarray(y, np.float64) - self.reference) / self.bound
        return float("inf") if np.isnan(ratio).any() else float(ratio.max())

    def record(self, device: str, device_type: str, fmt: str, kind: str = "format") -> Record:
        m, n = self.csr.shape
        rec = Record(matrix=self.name, rows=m, cols=n, nnz=self.csr.nnz, device=device,
                     device_type=device_type, format=fmt, dtype=self.csr.dtype.name, kind=kind,
                     host=socket.gethostname())
        rec.set_matrix_stats(self.stats)
        rec.min_bytes = min_bytes(m, n, self.csr.nnz, self.csr.dtype.itemsize)
        return rec


def _set_times(rec: Record, t: timing.Timing) -> None:
    rec.kernel_ms, rec.kernel_ms_min, rec.kernel_ms_max = t.median_ms, t.min_ms, t.max_ms
    rec.repeats = t.repeats
    if t.median_ms > 0:
        rec.gflops = 2 * rec.nnz / t.median_ms / 1e6
        rec.gbps = (rec.min_bytes or 0) / t.median_ms / 1e6


def _check(rec: Record, problem: Problem, y: np.ndarray) -> None:
    rec.error_ratio = problem.error_ratio(y)
    if not rec.error_ratio <= 1.0:
        rows = int(np.count_nonzero(~(np.abs(np.asarray(y, np.float64) - problem.reference)
                                      <= problem.bound)))
        rec.status = "wrong"
        rec.reason = (f"product exceeds the error bound in {rows} rows "
                      f"(max ratio {rec.error_ratio:.3g})")


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
    """speedup_vs_X = baseline X's kernel time / the record's (for baselines that ran)."""
    if rec.status not in ("ok", "wrong") or not rec.kernel_ms:
        return
    for name, ms in baseline_ms.items():
        setattr(rec, f"speedup_vs_{name}", ms / rec.kernel_ms)


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
        return len(self.plan.baselines) + len(self.plan.devices) * self.plan.formats_for_count()

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
        for dtype in self.plan.dtypes:
            try:
                problem = Problem.build(source.name, A, s, dtype, self.plan.seed)
            except (TypeError, ValueError) as err:  # complex values, beyond 32-bit indices
                self.not_run(f"{source.name} {dtype.name} ({err})", self.per_dtype())
                continue
            baseline_ms = self.run_baselines(problem)
            for device in self.plan.devices:
                self.run_device(problem, device, baseline_ms)
            del problem
            gc.collect()

    def run_baselines(self, problem: Problem) -> dict[str, float]:
        times: dict[str, float] = {}
        recs = []
        for name in self.plan.baselines:
            kwargs: dict[str, Any] = {"warmup": self.plan.warmup, "repeat": self.plan.repeat}
            if name == "mkl":
                kwargs["threads"] = self.plan.mkl_threads
            try:
                result = baselines.PRODUCTS[name](problem.csr, problem.x, **kwargs)
            except Exception as err:  # a library error: recorded, the run goes on
                result = baselines.BaselineResult(
                    name, name, "gpu" if name == "cusparse" else "cpu", "failed",
                    f"{type(err).__name__}: {_first_lines(err)}")
            rec = problem.record(result.device, result.device_type, name, kind="baseline")
            rec.status, rec.reason, rec.threads = result.status, result.reason, result.threads
            if result.timing is not None:
                _set_times(rec, result.timing)
                _check(rec, problem, result.y)
                if rec.status == "ok":
                    times[name] = result.timing.median_ms
            recs.append(rec)
            self._progress(f"{problem.name} {problem.csr.dtype} {name}")
        for rec in recs:
            set_speedups(rec, times)
            self.results.add(rec)
        return times

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

    def run_device(self, problem: Problem, device: Device, baseline_ms: dict[str, float]) -> None:
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
            elif not device.supports(problem.csr.dtype):
                rec.status = "skipped"
                rec.reason = f"{device.name} has no float64 support (cl_khr_fp64)"
            else:
                self.measure(rec, problem, device, fmt)
            set_speedups(rec, baseline_ms)
            group.append(self.results.add(rec))
            self._progress(f"{problem.name} {problem.csr.dtype} {device.name[:24]} {fmt}")
            gc.collect()
        set_breakeven(group)
        self.results.save()

    def measure(self, rec: Record, problem: Problem, device: Device, fmt: str) -> None:
        """Convert, check and time one format; on failure set status and reason."""
        plan = self.plan
        try:
            conv = timing.convert(problem.csr, fmt, device)
        except Exception as err:
            rec.status, rec.reason = _classify(err, "converting")
            return
        M = conv.matrix
        try:
            rec.host_conversion_ms, rec.upload_ms = conv.host_ms, conv.upload_ms
            rec.conversion_ms = conv.total_ms
            rec.device_bytes = M.nbytes
            rec.params = ", ".join(f"{k}={v}" for k, v in M.params.items()) + (
                f"; {rec.params}" if rec.params else "")
            if rec.ell_bytes:
                rec.reduction_vs_ell_pct = 100.0 * (1 - M.nbytes / rec.ell_bytes)
            _check(rec, problem, np.asarray(M.matvec(problem.x)))
            _set_times(rec, timing.time_kernels(M, problem.x, warmup=plan.warmup,
                                                repeat=plan.repeat))
            rec.wall_ms = timing.time_wall(M, problem.x, repeat=min(plan.repeat, 5)).median_ms
            if rec.copy_gbps and rec.gbps is not None:
                rec.pct_copy_bw = 100.0 * rec.gbps / rec.copy_gbps
            if rec.cache_bytes:
                rec.fits_cache = bool((rec.min_bytes or 0) <= rec.cache_bytes)
        except Exception as err:
            rec.status, rec.reason = _classify(err, "running")
        finally:
            del M, conv


def _classify(err: Exception, when: str) -> tuple[str, str]:
    """(status, reason) of a format that raised ``err``; programming errors are re-raised.

    Skipped: the format cannot hold this matrix here (unsuitable, too large, out of host or
    device memory, no fp64). Failed: a kernel that does not build, or another driver error.
    """
    if isinstance(err, BuildError):
        return "failed", _first_lines(err)
    if isinstance(err, (UnsuitableFormatError, DeviceError, IndexOverflowError)):
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
