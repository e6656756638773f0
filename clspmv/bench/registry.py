"""The registered baselines and operations: the one place that lists them. The runner, the run's
meta data and the command line loop over these; adding a baseline or an operation is its module
plus one entry here."""

from __future__ import annotations

from . import baseline_cusparse, baselines, distributed, operations, selection, sweep
from .baseline import Baseline
from .operation import Operation

BASELINES: dict[str, Baseline] = {b.name: b for b in (
    baselines.SCIPY, baselines.MKL, baselines.MKL_OPTIMISED, baseline_cusparse.CUSPARSE)}
"""Baseline name -> :class:`~clspmv.bench.baseline.Baseline`, in the order records list them."""

OPERATIONS: dict[str, Operation] = {op.name: op for op in (
    operations.TRANSPOSE, operations.MATMAT, operations.SOLVER, selection.SELECTION,
    sweep.SWEEP, distributed.DISTRIBUTED)}
"""Operation name -> :class:`~clspmv.bench.operation.Operation`, in the order they run."""
