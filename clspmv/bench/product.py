"""A x, the operation every run measures (:data:`PRODUCT`): on each format, right after its
conversion and upload, one product checked against the reference, the kernel time of repeated
products and, in the same rounds, the wall time of one product with its transfers; on each
baseline, its own A x. Its records are compared with ``csr-scalar``'s by break-even counts
(:mod:`.speedups`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..matrix import DeviceMatrix
from . import timing
from .baseline import Baseline
from .operation import SPMV, Case, Operation, Settings, check, measure_product, set_times
from .records import Record
from .reference import Problem
from .speedups import set_breakeven

WALL_REPEATS = 5
"""At most this many products are timed with their transfers (``wall_ms``), each right after one
of the kernel time's (:func:`~clspmv.bench.timing.time_kernels_and_wall`)."""


class Product(Operation):
    """A x: always active; its case is :data:`~clspmv.bench.operation.SPMV`."""

    name = SPMV.operation

    def active(self, plan: Any) -> bool:
        return True

    def cases(self, plan: Any, fmt: str) -> list[Case]:
        return [SPMV]

    def measure(self, rec: Record, M: DeviceMatrix, problem: Problem, case: Case,
                settings: Settings) -> None:
        check(rec, problem, np.asarray(M.matvec(problem.x)))
        kernel, wall = timing.time_kernels_and_wall(M, problem.x, warmup=settings.warmup,
                                                    repeat=settings.repeat,
                                                    wall_repeat=WALL_REPEATS)
        set_times(rec, kernel)
        rec.wall_ms = wall.median_ms
        if rec.cache_bytes:
            rec.fits_cache = bool((rec.min_bytes or 0) <= rec.cache_bytes)

    def finish(self, records: list[Record]) -> None:
        set_breakeven(records)

    def baseline_cases(self, plan: Any, baseline: Baseline) -> list[Case]:
        return [SPMV]

    def measure_baseline(self, rec: Record, baseline: Baseline, problem: Problem, case: Case,
                         settings: Settings) -> None:
        measure_product(rec, baseline, problem, problem, settings)


PRODUCT = Product()
