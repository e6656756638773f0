"""``clspmv bench --sweep``: the kernel-parameter experiments of ``openmp-vs-cuda.txt`` on each
device, measured like every other product.

The paper varies, for CSR and ELLPACK SpMV on a GPU: the threads per row and the rows per block
(its "1D" blocks, one row per block, against "2D" blocks, several rows of several threads
each), the block size, loop unrolling, and ELLPACK stored row-major ("not transposed") against
column-major ("transposed"). The OpenCL equivalents are build options of the existing kernels,
selected by format parameters (:mod:`clspmv.formats.csr`, :mod:`clspmv.formats.ell`):

* work-items per row T (``csr-scalar`` T = 1, ``csr-vector`` T > 1; ``ellr`` / ``ellr-t``);
* the work-group size; rows per work-group = work-group size / T;
* ``unroll`` (UNROLL: entries of a row per iteration of the inner loop, into separate sums);
* ``row_major`` ELLPACK (ROW_MAJOR) against the default column-major layout.

:func:`grid` is the set of :class:`Variant` measured, the union of three experiments (each a
table of the report, :mod:`clspmv.report.sweep`):

1. ``threads``: CSR, every T of :data:`CSR_THREADS` at every work-group size (the paper's
   Figs. 18-21: 1D against 2D blocks, block sizes);
2. ``unroll``: every unroll factor at every work-group size for :data:`UNROLL_KERNELS` (its
   Table 2: the best unrolling per number of threads);
3. ``ell-order``: ELLPACK-R row-major and column-major for every T of :data:`ELL_THREADS` at
   every work-group size (its Table 3).

A layout is converted and uploaded once per matrix, value type and device; its variants reuse
the device arrays (:meth:`clspmv.DeviceMatrix.retuned` changes the work-group size, ``unroll``
and the T of ``csr-vector``). Each variant is checked against scipy and timed by
:func:`clspmv.bench.timing.time_kernels`, and becomes a record with ``operation`` ``sweep`` and
``method`` its :attr:`Variant.label`. The runner's ``--max-seconds`` budget is checked before
each variant: what is left is recorded as skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..device import Device
from ..formats.base import UNROLL_FACTORS
from . import timing
from .operations import check, set_times
from .records import Record

if TYPE_CHECKING:
    from ..matrix import DeviceMatrix
    from .runner import Problem, Runner

OPERATION = "sweep"
"""The ``operation`` of the sweep's records."""

WORK_GROUP_SIZES = (32, 64, 128, 256, 512)
"""Work-group sizes of every experiment (32: one warp; a device that allows fewer skips the
larger ones)."""
CSR_THREADS = (1, 2, 4, 8, 16, 32)
"""Work-items per row of the ``threads`` experiment (1: ``csr-scalar``, else ``csr-vector``)."""
ELL_THREADS = (1, 4, 32)
"""Work-items per row of the ``ell-order`` experiment (1: ``ellr``, else ``ellr-t``): one per
row, a few, a warp (at work-groups of 32: one row per work-group, the paper's 1D block)."""
UNROLL_KERNELS = (("csr", 1, False), ("csr", 8, False), ("ell", 1, False))
"""(family, T, row-major) of the kernels of the ``unroll`` experiment."""
EXPERIMENTS = ("threads", "unroll", "ell-order")


@dataclass(frozen=True)
class Variant:
    """One kernel configuration: family (``csr`` or ``ell``), work-items per row, work-group
    size, unroll factor and (ELLPACK) row- or column-major storage."""

    family: str
    threads: int
    work_group_size: int
    unroll: int = 1
    row_major: bool = False

    @property
    def format(self) -> str:
        """The format that runs it."""
        if self.family == "csr":
            return "csr-scalar" if self.threads == 1 else "csr-vector"
        return "ellr" if self.threads == 1 else "ellr-t"

    @property
    def order(self) -> str:
        return "row" if self.row_major else "col"

    @property
    def label(self) -> str:
        """The record's ``method``: ``T=4 wg=128 unroll=2 col`` (:func:`parse_label` reads it)."""
        return f"T={self.threads} wg={self.work_group_size} unroll={self.unroll} {self.order}"

    @property
    def rows_per_group(self) -> int:
        return self.work_group_size // self.threads

    @property
    def conversion(self) -> tuple[str, tuple[tuple[str, object], ...]]:
        """(format, parameters that change the stored arrays): variants sharing it share one
        upload. CSR arrays do not depend on T; column-major ELLPACK-R-T interleaves T lanes."""
        params: dict[str, object] = {}
        if self.family == "ell":
            params["row_major"] = self.row_major
            if self.threads > 1:
                params["threads_per_row"] = self.threads
        elif self.threads > 1:
            params["threads_per_row"] = CSR_THREADS[-1]  # any T: retuned per variant
        return self.format, tuple(params.items())

    def options(self) -> dict[str, int]:
        """What :meth:`clspmv.DeviceMatrix.retuned` changes on the uploaded layout."""
        opts = {"unroll": self.unroll}
        if self.format == "csr-vector":
            opts["threads_per_row"] = self.threads
        return opts


def parse_label(label: str) -> tuple[int, int, int, str]:
    """(T, work-group size, unroll, ``row`` or ``col``) of a :attr:`Variant.label`."""
    threads, wg, unroll, order = label.split()
    return (int(threads.removeprefix("T=")), int(wg.removeprefix("wg=")),
            int(unroll.removeprefix("unroll=")), order)


def experiment(name: str, work_group_sizes: tuple[int, ...] | None = None) -> list[Variant]:
    """The variants of one of :data:`EXPERIMENTS` (work-group sizes: default
    :data:`WORK_GROUP_SIZES`)."""
    work_group_sizes = work_group_sizes or WORK_GROUP_SIZES
    if name == "threads":
        return [Variant("csr", t, wg) for t in CSR_THREADS for wg in work_group_sizes
                if t <= wg]
    if name == "unroll":
        return [Variant(fam, t, wg, u, rm) for fam, t, rm in UNROLL_KERNELS
                for u in UNROLL_FACTORS for wg in work_group_sizes if t <= wg]
    if name == "ell-order":
        return [Variant("ell", t, wg, 1, rm) for rm in (True, False) for t in ELL_THREADS
                for wg in work_group_sizes if t <= wg]
    raise ValueError(f"unknown sweep experiment {name!r}; choose from {', '.join(EXPERIMENTS)}")


def grid(work_group_sizes: tuple[int, ...] | None = None) -> list[Variant]:
    """Every variant of every experiment, once, grouped by conversion (one upload each)."""
    variants = list(dict.fromkeys(v for name in EXPERIMENTS
                                  for v in experiment(name, work_group_sizes)))
    order = list(dict.fromkeys(v.conversion for v in variants))
    return sorted(variants, key=lambda v: order.index(v.conversion))


def _groups(variants: list[Variant]) -> Iterator[list[Variant]]:
    group: list[Variant] = []
    for v in variants:
        if group and v.conversion != group[0].conversion:
            yield group
            group = []
        group.append(v)
    if group:
        yield group


def run(runner: Runner, problem: Problem, device: Device, variants: list[Variant]) -> None:
    """Measure ``variants`` of ``problem``'s matrix on ``device`` into the runner's results."""
    for group in _groups(variants):
        run_group(runner, problem, device, group)


def run_group(runner: Runner, problem: Problem, device: Device, group: list[Variant]) -> None:
    """One upload, then every variant of ``group`` on it."""
    from .runner import _classify, device_label

    bw = runner.bandwidth_of(device)
    fmt, conv_params = group[0].conversion
    M, status, reason = None, "ok", ""
    if runner.out_of_time():
        status, reason = "skipped", runner._budget_reason()
    elif not device.supports(problem.csr.dtype):
        status, reason = "skipped", f"{device.name} has no float64 support (cl_khr_fp64)"
    else:
        try:
            M = timing.convert(problem.csr, fmt, device, **dict(conv_params)).matrix
        except Exception as err:
            status, reason = _classify(err, "converting")
    for v in group:
        rec = problem.record(device_label(device), device.type, v.format)
        rec.operation, rec.method = OPERATION, v.label
        rec.copy_gbps, rec.cache_bytes = bw.copy_gbps, device.cache_bytes
        rec.status, rec.reason = status, reason
        if rec.status == "ok" and runner.out_of_time():
            rec.status, rec.reason = "skipped", runner._budget_reason()
        elif rec.status == "ok" and v.work_group_size > device.max_work_group_size:
            rec.status = "skipped"
            rec.reason = (f"{device.name} allows work-groups of at most "
                          f"{device.max_work_group_size}")
        if rec.status == "ok" and M is not None:
            measure(runner, rec, M, problem, v)
        runner.results.add(rec)
        runner._progress(f"{problem.name} {problem.csr.dtype} {device.name[:24]} sweep {v.format} "
                    f"{v.label}")
    del M


def measure(runner: Runner, rec: Record, M: DeviceMatrix, problem: Problem, v: Variant
            ) -> None:
    """Retune ``M`` to ``v``, check one product against the reference and time it."""
    from .runner import _classify

    try:
        V = M.retuned(work_group_size=v.work_group_size, **v.options())
        rec.params = ", ".join(f"{k}={val}" for k, val in V.params.items())
        rec.params += f", work_group_size={v.work_group_size}"
        rec.device_bytes = V.nbytes
        check(rec, problem, np.asarray(V.matvec(problem.x)))
        set_times(rec, timing.time_kernels(V, problem.x, warmup=runner.plan.warmup,
                                           repeat=runner.plan.repeat))
    except Exception as err:
        rec.status, rec.reason = _classify(err, "running")


def settings() -> dict[str, object]:
    """The grid, for the run's meta data."""
    return {"work_group_sizes": list(WORK_GROUP_SIZES), "csr_threads": list(CSR_THREADS),
            "ell_threads": list(ELL_THREADS), "unroll": list(UNROLL_FACTORS),
            "unroll_kernels": [f"{fam} T={t} {'row' if rm else 'col'}"
                               for fam, t, rm in UNROLL_KERNELS],
            "variants": len(grid())}
