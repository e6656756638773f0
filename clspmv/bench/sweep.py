"""``clspmv bench --sweep``: the kernel-parameter experiments of Ferez's OpenMP-vs-CUDA paper
(work-items per row, work-group size, unrolling, ELLPACK row- against column-major) and, beyond
it, ``csr-adaptive``'s work-group and block sizes: the measurements behind the formats' defaults,
taken on each device like every other product.

Each configuration (:class:`Variant`) is a format parameter of an existing kernel; :func:`grid`
is the union of the experiments of :data:`EXPERIMENTS`, each a table of
:mod:`clspmv.report.sweep`. A layout is uploaded once per matrix, value type and device and its
variants reuse the device arrays (:meth:`clspmv.DeviceMatrix.retuned`), except ``csr-adaptive``'s,
whose row blocks depend on both sizes. Each variant is checked against scipy, timed by
:func:`clspmv.bench.timing.time_kernels` and recorded with ``operation`` ``sweep`` and ``method``
its :attr:`Variant.label`; the run's ``--max-seconds`` is checked before each. The grid in full:
docs/benchmarks.md, "Kernel-parameter sweep".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ..device import Device
from ..formats import FORMAT_CLASSES
from ..formats.base import UNROLL_FACTORS
from ..formats.csr_adaptive import CsrAdaptive, max_block_entries
from ..matrix import DeviceMatrix
from . import timing
from .errors import classify
from .operation import Context, Operation, check, set_times
from .records import Record, device_label
from .reference import Problem

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
ADAPTIVE_BLOCK_DIVISORS = (1, 2)
"""Block sizes of the ``adaptive`` experiment: ``block_entries = max_block_entries // d`` (1: the
default; 2: half the entries a work-item loads before gathering from x)."""
ADAPTIVE_FORMAT = "csr-adaptive"
EXPERIMENTS = ("threads", "unroll", "ell-order", "adaptive")


class Config(NamedTuple):
    """The fields of a :attr:`Variant.label` (:func:`parse_label`)."""

    threads: int
    """Work-items per row; 0: chosen per row block (``csr-adaptive``)."""
    work_group_size: int
    unroll: int
    order: str
    """``row`` or ``col`` (ELLPACK storage; ``col`` for CSR)."""
    block_divisor: int = 0
    """``csr-adaptive``: ``block_entries = max_block_entries // block_divisor``; 0: other
    formats."""

    @property
    def label(self) -> str:
        """``T=4 wg=128 unroll=2 col``; with a block divisor ``... cap=max`` or
        ``... cap=max/2``."""
        label = f"T={self.threads} wg={self.work_group_size} unroll={self.unroll} {self.order}"
        return f"{label} cap={block_size(self.block_divisor)}" if self.block_divisor else label


def block_size(divisor: int) -> str:
    """``max`` or ``max/<divisor>``: csr-adaptive's block size in a label."""
    return "max" if divisor == 1 else f"max/{divisor}"


@dataclass(frozen=True)
class Variant:
    """One kernel configuration: family (``csr``, ``ell`` or ``adaptive``), work-items per row
    (0 for ``adaptive``: chosen per row block), work-group size, unroll factor, (ELLPACK) row- or
    column-major storage and (``adaptive``) the divisor of the largest block size."""

    family: str
    threads: int
    work_group_size: int
    unroll: int = 1
    row_major: bool = False
    block_divisor: int = 0

    @property
    def format(self) -> str:
        """The format that runs it."""
        if self.family == "adaptive":
            return ADAPTIVE_FORMAT
        if self.family == "csr":
            return "csr-scalar" if self.threads == 1 else "csr-vector"
        return "ellr" if self.threads == 1 else "ellr-t"

    @property
    def order(self) -> str:
        return "row" if self.row_major else "col"

    @property
    def config(self) -> Config:
        return Config(self.threads, self.work_group_size, self.unroll, self.order,
                      self.block_divisor)

    @property
    def label(self) -> str:
        """The record's ``method``: ``T=4 wg=128 unroll=2 col``; ``csr-adaptive`` adds its block
        size, ``T=0 wg=128 unroll=1 col cap=max`` or ``... cap=max/2`` (:func:`parse_label`
        reads it)."""
        return self.config.label

    @property
    def rows_per_group(self) -> int:
        return self.work_group_size // self.threads

    @property
    def conversion(self) -> tuple[str, tuple[tuple[str, object], ...]]:
        """(format, parameters that change the stored arrays): variants sharing it share one
        upload. CSR arrays do not depend on T; column-major ELLPACK-R-T interleaves T lanes;
        csr-adaptive's partition depends on the work-group size and the block size."""
        params: dict[str, object] = {}
        if self.family == "adaptive":
            params["work_group_size"] = self.work_group_size
            params["block_divisor"] = self.block_divisor
        elif self.family == "ell":
            params["row_major"] = self.row_major
            if self.threads > 1:
                params["threads_per_row"] = self.threads
        elif self.threads > 1:
            params["threads_per_row"] = CSR_THREADS[-1]  # any T: retuned per variant
        return self.format, tuple(params.items())

    def convert_params(self, device: Device, dtype: np.dtype) -> dict[str, object]:
        """The keyword arguments of :func:`clspmv.bench.timing.convert` for :attr:`conversion`
        on ``device`` with values of ``dtype`` (csr-adaptive: its ``block_entries``)."""
        params = dict(self.conversion[1])
        divisor = params.pop("block_divisor", 0)
        if divisor:
            layout = CsrAdaptive.layout_for(device, self.work_group_size)
            params["block_entries"] = max_block_entries(layout, dtype.itemsize) // divisor
        return params

    @property
    def retunable(self) -> bool:
        """Whether it runs on a shared upload (:meth:`options`), not a conversion of its own."""
        return self.family != "adaptive"

    def options(self) -> dict[str, int]:
        """What :meth:`clspmv.DeviceMatrix.retuned` changes on the uploaded layout."""
        opts = {"unroll": self.unroll}
        if self.format == "csr-vector":
            opts["threads_per_row"] = self.threads
        return opts


def parse_label(label: str) -> Config:
    """The :class:`Config` of a :attr:`Variant.label` (without ``cap=``: block divisor 0)."""
    threads, wg, unroll, order, *cap = label.split()
    divisor = 0
    if cap:
        divisor = int(cap[0].removeprefix("cap=max").removeprefix("/") or 1)
    return Config(int(threads.removeprefix("T=")), int(wg.removeprefix("wg=")),
                  int(unroll.removeprefix("unroll=")), order, divisor)


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
    if name == "adaptive":
        return [Variant("adaptive", 0, wg, block_divisor=d) for wg in work_group_sizes
                for d in ADAPTIVE_BLOCK_DIVISORS]
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


def run(context: Context, problem: Problem, device: Device, variants: list[Variant]) -> None:
    """Measure ``variants`` of ``problem``'s matrix on ``device`` into the run's results."""
    for group in _groups(variants):
        run_group(context, problem, device, group)


def run_group(context: Context, problem: Problem, device: Device, group: list[Variant]
              ) -> None:
    """One upload, then every variant of ``group`` on it."""
    fmt = group[0].format
    too_large = f"{device.name} allows work-groups of at most {device.max_work_group_size}"
    M, status, reason = None, "ok", ""
    if context.out_of_time():
        status, reason = "skipped", context.budget_reason()
    elif not device.supports(problem.csr.dtype):
        status, reason = "skipped", f"{device.name} has no float64 support (cl_khr_fp64)"
    elif all(v.work_group_size > device.max_work_group_size for v in group):
        status, reason = "skipped", too_large
    else:
        try:
            M = timing.convert(problem.csr, fmt, device,
                               **group[0].convert_params(device, problem.csr.dtype)).matrix
        except Exception as err:
            status, reason = classify(err, "converting")
    for v in group:
        rec = problem.record(device_label(device), device.type, v.format)
        rec.operation, rec.method = OPERATION, v.label
        rec.copy_gbps, rec.cache_bytes = context.copy_gbps(device), device.cache_bytes
        rec.status, rec.reason = status, reason
        if rec.status == "ok" and context.out_of_time():
            rec.status, rec.reason = "skipped", context.budget_reason()
        elif rec.status == "ok" and v.work_group_size > device.max_work_group_size:
            rec.status, rec.reason = "skipped", too_large
        if rec.status == "ok" and M is not None:
            measure(context, rec, M, problem, v)
        context.results.add(rec)
        context.progress(f"{problem.name} {problem.csr.dtype} {device.name[:24]} sweep "
                         f"{v.format} {v.label}")
    del M


def measure(context: Context, rec: Record, M: DeviceMatrix, problem: Problem, v: Variant
            ) -> None:
    """Retune ``M`` to ``v`` (unless it was converted for ``v`` alone), check one product
    against the reference and time it."""
    try:
        V = M.retuned(work_group_size=v.work_group_size, **v.options()) if v.retunable else M
        rec.params = ", ".join(f"{k}={val}" for k, val in V.params.items())
        rec.params += f", work_group_size={v.work_group_size}"
        rec.device_bytes = V.nbytes
        check(rec, problem, np.asarray(V.matvec(problem.x)))
        set_times(rec, timing.time_kernels(V, problem.x, warmup=context.settings.warmup,
                                           repeat=context.settings.repeat))
    except Exception as err:
        rec.status, rec.reason = classify(err, "running")


def settings() -> dict[str, object]:
    """The grid, for the run's meta data."""
    return {"work_group_sizes": list(WORK_GROUP_SIZES), "csr_threads": list(CSR_THREADS),
            "ell_threads": list(ELL_THREADS), "unroll": list(UNROLL_FACTORS),
            "unroll_kernels": [f"{fam} T={t} {'row' if rm else 'col'}"
                               for fam, t, rm in UNROLL_KERNELS],
            "adaptive_blocks": [block_size(d) for d in ADAPTIVE_BLOCK_DIVISORS],
            "variants": len(grid()), "conversions": len({v.conversion for v in grid()})}


DEFAULT_UNROLL = 1
"""The unroll factor every format uses unless told otherwise."""


def defaults() -> dict[str, Any]:
    """Today's defaults the sweep compares with, for the run's meta data (the report reads them
    from there, so an old run's report compares with the defaults of its day): the default
    work-group size of each swept format on CPUs and GPUs, the unroll factor and csr-adaptive's
    block size."""
    formats = list(dict.fromkeys(v.format for v in grid()))
    return {"work_group": {f: {kind: FORMAT_CLASSES[f].default_work_group(kind)
                               for kind in ("cpu", "gpu")} for f in formats},
            "unroll": DEFAULT_UNROLL, "adaptive_block": block_size(1)}


class Sweep(Operation):
    """The kernel-parameter sweep (``--sweep``), run on each device after its formats."""

    name = OPERATION
    formulas = {"method": "T=<work-items per row> wg=<work-group size> unroll=<u> row|col "
                          "[cap=max|max/d]: one kernel configuration"}

    def active(self, plan: Any) -> bool:
        return bool(plan.sweep)

    def settings(self, plan: Any) -> dict[str, Any]:
        return {"sweep": {**settings(), "defaults": defaults()}}

    def steps(self, plan: Any) -> int:
        return len(grid())

    def run_device(self, context: Context, problem: Problem, device: Device) -> None:
        run(context, problem, device, grid())


SWEEP = Sweep()
