"""The protocol of a baseline: another library's product, measured in the same run on the same
matrix and value type as the formats. The baselines themselves are in
:mod:`clspmv.bench.baselines` (scipy, MKL) and :mod:`clspmv.bench.baseline_cusparse`, registered
in :mod:`clspmv.bench.registry`; the runner loops over the registered ones and never asks for one
by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp

from .timing import Timing


@dataclass(frozen=True)
class BaselineResult:
    """A baseline's product time on one matrix and value type, or why there is none."""

    name: str
    device: str
    device_type: str
    status: str  # "ok" or "absent"
    reason: str = ""
    timing: Timing | None = None
    threads: int | None = None
    y: np.ndarray | None = None
    """One product's result, for the error check."""
    params: str = ""
    """What exactly was called (the library routine and its operation), where it matters."""
    iterations: int | None = None
    """Iterations a solver ran (solver baselines)."""


def absent(name: str, device: str, device_type: str, reason: str) -> BaselineResult:
    """The result of a baseline that cannot run here, with the reason (what to install)."""
    return BaselineResult(name, device, device_type, "absent", reason)


Product = Callable[..., BaselineResult]
"""``product(A, x, *, transpose=False, warmup=, repeat=[, threads=]) -> BaselineResult``; x a
vector or an n x k array (several right-hand sides). An unavailable baseline returns a result
with status ``absent`` and the reason (the availability check is part of the call: a library
may import but find no device)."""


@dataclass(frozen=True)
class Baseline:
    """A registered baseline: its name (a record's ``format``), where it runs, how it is measured
    and what it computes."""

    name: str
    device_type: str
    """``cpu`` or ``gpu``: where its records say it ran when it fails before saying more."""
    description: str
    """What is called and how it is timed (written into each run's meta)."""
    product: Product
    solvers: dict[str, Callable[..., BaselineResult]] = field(default_factory=dict)
    """Solver name -> ``solve(A, b, solver, iterations, *, warmup=, repeat=)``."""
    threaded: bool = False
    """Whether ``product`` takes ``threads=`` (``--mkl-threads``): it runs on MKL's thread pool,
    which the run's meta then records (:func:`clspmv.bench.metadata.thread_pools`)."""
    library_versions: Callable[[], dict[str, str]] | None = None
    """The versions of the libraries it has loaded (for the run's meta data)."""
    availability: Callable[[], Any] | None = None
    """Whether it can run here, without running it: a
    :class:`~clspmv.bench.availability.Availability` (``clspmv doctor``)."""

    def versions(self) -> dict[str, str]:
        """:attr:`library_versions` (empty where nothing was loaded or it cannot say)."""
        if self.library_versions is None:
            return {}
        try:
            return self.library_versions()
        except Exception:  # a version is not essential to a run
            return {}

    def measure(self, A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False,
                warmup: int = 2, repeat: int = 10, threads: int | None = None
                ) -> BaselineResult:
        """Time A x (A^T x with ``transpose``; A X for a 2-D x) with this baseline."""
        kwargs = {"threads": threads} if self.threaded else {}
        return self.product(A, x, transpose=transpose, warmup=warmup, repeat=repeat, **kwargs)

    def result(self, status: str, reason: str) -> BaselineResult:
        """A result without a measurement (``failed`` or ``skipped``) with the reason."""
        return BaselineResult(self.name, self.name, self.device_type, status, reason)
