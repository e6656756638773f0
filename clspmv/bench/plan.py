"""What one ``clspmv bench`` run measures (:class:`Plan`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..device import Device
from ..formats import SINGLE_FORMATS
from .operation import Operation, Settings
from .registry import BASELINES, OPERATIONS
from .sources import Source


@dataclass
class Plan:
    """What one ``clspmv bench`` run measures."""

    sources: list[Source]
    devices: list[Device]
    formats: list[str] | str = "all"  # a list of names, "all" or "auto"
    dtypes: list[np.dtype | str] = field(default_factory=lambda: [np.dtype(np.float64)])
    """Value types, or ``"mixed"`` (float32 values summed in float64: its baselines are
    float32's, run once for both when float32 is in the list too)."""
    baselines: list[str] = field(default_factory=lambda: list(BASELINES))
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
    selection: bool = False
    """Also auto's choice against every format measured (``--selection``; the command line
    turns it on with ``--formats all``)."""
    trial: bool = True
    """With ``selection``: also auto with a trial on the device (``--no-trial`` leaves it out:
    it converts several formats of every matrix again)."""
    distributed: list[str] = field(default_factory=list)
    """The distributed product in these modes (``--distributed --modes``; run under mpiexec,
    :mod:`clspmv.bench.distributed`); ``distributed_formats``: its (local, non-local) formats
    (None: the library's default); ``distributed_partition``: how it cuts the rows
    (``--partition``)."""
    distributed_formats: list[str] | None = None
    distributed_partition: str = "auto"

    @property
    def active(self) -> list[Operation]:
        """The registered operations this plan asks for, in order."""
        return [op for op in OPERATIONS.values() if op.active(self)]

    @property
    def operations(self) -> list[str]:
        """The names of the operations measured besides A x."""
        return [op.name for op in self.active]

    def settings(self) -> Settings:
        return Settings(self.warmup, self.repeat, self.solver_iterations, self.mkl_threads,
                        self.trial)

    def formats_for_count(self) -> int:
        if self.formats == "all":
            return len(SINGLE_FORMATS)
        if self.formats == "auto":
            return 2
        return len(self.formats)
