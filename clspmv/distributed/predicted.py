"""``partition="time"``: row weights from the predicted kernel time of each row block, the model
of ``format="auto"`` (:mod:`clspmv.model`), so that the ranks' blocks take about equal time
where equal entries would not (rows of different structure: a stencil stacked on a power-law
graph, whose gathers from x cost more per entry).

The rows are cut into strips (:func:`strip_size`);
:class:`clspmv.model.strip_summaries.StripSummaries` gives each strip's features (one pass over
the matrix; a strip's x lines counted after its predecessor's, as a block's are), and a strip's
weight is its predicted kernel seconds of the terms that add up over strips (:data:`ADDITIVE`:
not the launch, and not the longest row's critical path, which a block pays once), in the local
part's format when one is named, else in the format predicted fastest for the strip (what
``"auto"`` would weigh). Within a strip the weight is shared by the rows in proportion to
their entries plus one, as ``"nnz"`` balances.

The time model needs a measured calibration of the device, quick or full
(:func:`clspmv.model.calibration`); with the quick default (``CLSPMV_CALIBRATE=0``) or none,
:func:`partition_calibration` returns None and the rows are balanced by entries instead.
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..device import Device
from ..errors import ClspmvWarning
from ..model.store import calibration, load
from ..model.strip_summaries import DIAGONAL_CAP, StripSummaries
from ..model.strips import calibration_predictor, strip_rows
from ..model.timemodel import TERMS, Calibration
from .collective import agree, barrier_asleep
from .partition import PARTITIONS, TIME_PARTITIONS
from .source import Weigh

ADDITIVE = np.array([name not in ("launch", "longest") for name in TERMS], np.float64)
"""The time model's terms (:data:`clspmv.model.timemodel.TERMS`) that add up over the strips of
a block: not the launch, and not the longest row's critical path."""
TIME_STRIPS = 64
"""Most strips the rows given to :func:`row_weights` are cut into (each rank weighs an equal
share of the rows, so N ranks give up to N times as many)."""
TIME_STRIP_ENTRIES = 4096
"""Fewest entries of a strip on average (fewer strips for a small matrix)."""


WEIGHING_KINDS = ("measured", "quick")
"""The calibrations whose coefficients weigh rows: the full one and the quick one (the prior of
the device's class scaled by the device's own probes, what ``format="auto"`` predicts with);
not the quick default, device facts only, whose per-format costs were never measured."""


def partition_calibration(device: Device, measure: bool) -> Calibration | None:
    """The calibration ``partition="time"`` weighs rows with on ``device``: the device's
    (:func:`clspmv.model.calibration`, measured on first use when ``measure``, else only a
    stored one); None where it is none of :data:`WEIGHING_KINDS`."""
    cal = calibration(device) if measure else load(device)
    return cal if cal is not None and cal.kind in WEIGHING_KINDS else None


def strip_size(rows: int, entries: int, simd_width: int, work_group_size: int) -> int:
    """Rows per strip: :func:`clspmv.model.strips.strip_rows` with at most
    :data:`TIME_STRIPS` strips of :data:`TIME_STRIP_ENTRIES` entries or more."""
    return strip_rows(rows, simd_width, work_group_size, TIME_STRIPS, entries,
                      TIME_STRIP_ENTRIES)


def row_weights(csr: sp.csr_matrix, device: Device, cal: Calibration,
                format: str | None = None) -> np.ndarray:
    """Predicted kernel seconds of each row of the canonical CSR matrix ``csr`` on ``device``
    under ``cal`` (see the module docstring); ``format``: the one format to predict (None or
    ``"auto"``: the fastest per strip; a format refusing a strip falls back to the fastest)."""
    m = csr.shape[0]
    if m == 0:
        return np.zeros(0)
    wg = min(256, device.max_work_group_size)
    predictor = calibration_predictor(cal, wg)
    summary = StripSummaries(csr, device.simd_width,
                             strip_size(m, csr.nnz, device.simd_width, wg))
    only = (format,) if format not in (None, "auto") and format in cal.kernel else ()
    lengths = np.diff(csr.indptr).astype(np.float64) + 1.0
    weights = np.empty(m)
    for s in range(summary.count):
        a, b = summary.rows_of(s, s + 1)
        f = summary.block(s, s + 1, summary.strip_diagonals(s))
        if s:  # the x lines its predecessor left in the cache are no new gathers
            lines = float(summary.x_lines[s + 1] - summary.x_lines[s])
            f = replace(f, x_lines=lines, x_scattered=min(lines, f.x_scattered))
        seconds = _least(predictor, cal, f, only) if only else None
        if seconds is None:
            seconds = _least(predictor, cal, f, tuple(cal.kernel))
        share = lengths[a:b]
        weights[a:b] = (seconds or 0.0) * share / share.sum()
    return weights


def check_partition(partition: object) -> bool:
    """True for a partition by predicted time (``"time"``, ``"auto"``); ValueError (on every
    rank alike) for an unknown name."""
    if isinstance(partition, str):
        if partition not in PARTITIONS:
            raise ValueError(f"partition must be one of {', '.join(map(repr, PARTITIONS))} or "
                             f"a weight per row, got {partition!r}")
        return partition in TIME_PARTITIONS
    return False


def calibrate_in_turn(comm: Any, device: Device, needed: bool) -> None:
    """Where ``needed`` (on this rank), the device's calibration
    (:func:`clspmv.model.calibration`: stored, or measured and stored on first use), on rank 0
    first, the others asleep meanwhile, then on the others: ranks sharing a device type share
    its file, so only rank 0 measures, and alone. Collective whatever ``needed`` is on each
    rank."""
    error: Exception | None = None
    if needed and comm.rank == 0:
        try:
            calibration(device)
        except Exception as exc:  # reported to every rank below
            error = exc
    barrier_asleep(comm)  # the others sleep while rank 0 measures

    def first() -> None:
        if error is not None:
            raise error
    agree(comm, "calibrating the device (rank 0)", first)
    agree(comm, "reading the device's calibration",
          lambda: calibration(device) if needed and comm.rank != 0 else None)


def weigher(comm: Any, device: Device, partition: str, local_format: str) -> Weigh | None:
    """The row weights of ``partition="time"`` / ``"auto"`` on this rank's device, or None
    (every rank alike) where some rank has no measured calibration: then the rows are balanced
    by entries (with a warning on rank 0 for an explicit ``"time"``)."""
    measure = partition == "time" or local_format == "auto"
    cal = agree(comm, "reading the calibration for partition='time'",
                lambda: partition_calibration(device, measure))
    if all(comm.allgather(cal is not None)):
        return lambda rows: row_weights(rows, device, cal, local_format)
    if partition == "time" and comm.rank == 0:
        warnings.warn("partition='time' needs a measured calibration of every rank's device "
                      "(clspmv calibrate; CLSPMV_CALIBRATE=0 keeps the quick default): the rows "
                      "are balanced by entries instead", ClspmvWarning, stacklevel=3)
    return None


def _least(predictor, cal: Calibration, f, formats: tuple[str, ...]) -> float | None:
    """The least predicted seconds over ``formats`` of the terms that add up over the strips of
    a block: without each format's fixed term (the launch) and its longest-row term (a critical
    path: the block's longest row, not a sum over its strips), which every rank pays once;
    None where all refuse."""
    best = None
    for fmt in formats:
        if fmt == "dia" and f.diagonals > DIAGONAL_CAP:
            continue
        if predictor(fmt, f) is None:
            continue
        t = float(np.dot(np.asarray(cal.kernel[fmt]) * ADDITIVE,
                         cal.terms(fmt, f)))
        best = t if best is None else min(best, t)
    return best


__all__ = ["TIME_STRIPS", "calibrate_in_turn", "check_partition", "partition_calibration",
           "row_weights", "strip_size", "weigher"]
