"""Contiguous row blocks for a distributed matrix: one block per rank, balanced by stored entries
(``"nnz"``), by rows (``"rows"``) or by a weight per row (e.g. the predicted time of each row,
which ``"time"`` and ``"auto"`` weigh: :mod:`.predicted`).

Pure numpy, no MPI: every rank computes the same offsets from the same inputs.
"""

from __future__ import annotations

import numpy as np

PARTITIONS = ("auto", "time", "nnz", "rows", "graph")
"""Names ``DistributedMatrix.from_scipy`` takes besides a weight vector: ``"time"`` balances the
predicted kernel time of the blocks (:mod:`.predicted`; by entries without a measured
calibration), ``"auto"`` is ``"time"`` where the device has a calibration, else ``"nnz"``;
``"graph"`` renumbers the rows by a graph partitioner first (:mod:`.graph`)."""
TIME_PARTITIONS = ("auto", "time")
"""The partitions that need the predicted time per row (:func:`row_offsets` takes the weights)."""


def balanced_offsets(weights: np.ndarray, parts: int) -> np.ndarray:
    """Offsets ``o`` (``parts + 1`` of them, ``o[0] = 0``, ``o[-1] = len(weights)``) of contiguous
    blocks whose summed weights are as close as possible to ``total / parts`` each: block k is
    rows ``o[k]:o[k + 1]``. All-zero weights fall back to equal row counts."""
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1:
        raise ValueError(f"weights must be 1-D, got shape {w.shape}")
    if w.size and (not np.isfinite(w).all() or (w < 0).any()):
        raise ValueError("weights must be finite and >= 0")
    m = w.size
    prefix = np.concatenate([[0.0], np.cumsum(w)])
    total = prefix[-1]
    if total <= 0:
        return np.linspace(0, m, parts + 1).round().astype(np.int64)
    targets = total * np.arange(parts + 1) / parts
    right = np.searchsorted(prefix, targets, side="left").clip(0, m)
    left = (right - 1).clip(0, m)
    # the boundary whose prefix sum is nearest the target
    nearer_left = np.abs(prefix[left] - targets) <= np.abs(prefix[right] - targets)
    offsets = np.where(nearer_left, left, right)
    offsets[0], offsets[-1] = 0, m
    return np.maximum.accumulate(offsets).astype(np.int64)


def row_offsets(row_nnz: np.ndarray, parts: int, partition: object = "nnz") -> np.ndarray:
    """Row offsets of ``parts`` blocks for a matrix with ``row_nnz[i]`` entries in row i.

    ``partition`` is ``"nnz"`` (balance stored entries, plus one per row for the row's y
    traffic), ``"rows"`` (equal row counts) or a vector of one non-negative weight per row.
    """
    row_nnz = np.asarray(row_nnz)
    if isinstance(partition, str):
        if partition == "nnz":
            return balanced_offsets(row_nnz.astype(np.float64) + 1.0, parts)
        if partition == "rows":
            return balanced_offsets(np.ones(row_nnz.size), parts)
        if partition in TIME_PARTITIONS:
            raise ValueError(f"partition={partition!r} needs the predicted time of each row: "
                             "pass those weights (clspmv.distributed.predicted.row_weights)")
        raise ValueError(f"partition must be one of {', '.join(map(repr, PARTITIONS))} or a "
                         f"weight per row, got {partition!r}")
    weights = np.asarray(partition, dtype=np.float64)
    if weights.shape != row_nnz.shape:
        raise ValueError(f"partition weights have shape {weights.shape}, expected one weight per "
                         f"row {row_nnz.shape}")
    return balanced_offsets(weights, parts)


def check_offsets(offsets: object, rows: int, parts: int) -> np.ndarray:
    """``offsets`` as int64 after checking it describes ``parts`` contiguous blocks of ``rows``."""
    o = np.asarray(offsets, dtype=np.int64)
    if o.shape != (parts + 1,) or o[0] != 0 or o[-1] != rows or (np.diff(o) < 0).any():
        raise ValueError(f"row_offsets must be {parts + 1} non-decreasing numbers from 0 to "
                         f"{rows}, got {np.asarray(offsets).tolist()}")
    return o


def owners(columns: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """The block (rank) that owns each column under ``offsets``."""
    return np.searchsorted(offsets, columns, side="right") - 1


SPAN_SLACK = 2
"""The non-local part is stored over the contiguous range of rows from its first to its last row
with non-local entries when that range holds at most this many times as many rows as have such
entries (:func:`non_local_span`)."""


def non_local_span(rows: np.ndarray) -> tuple[int, int] | None:
    """How a rank stores its non-local part, given ``rows``, the rows of its block (sorted) that
    have non-local entries: ``(first, stop)`` to store the part over the rows
    ``first:stop`` (at most :data:`SPAN_SLACK` times ``len(rows)`` of them; its product adds into
    y at a row offset, one kernel), or None to store only ``rows`` (its product goes into a
    scratch vector that a second kernel adds into y at those rows) or for no rows at all.

    On banded, stencil and block matrices cut into contiguous blocks, the rows with non-local
    entries are a layer at the block's edges: a contiguous range for a block with one neighbour.
    """
    rows = np.asarray(rows)
    if rows.size == 0:
        return None
    first, stop = int(rows[0]), int(rows[-1]) + 1
    return (first, stop) if stop - first <= SPAN_SLACK * rows.size else None
