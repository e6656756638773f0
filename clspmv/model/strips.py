"""Row strips chosen by dynamic programming (``spmv-model-autoselect.txt`` section 3.3,
equations 1-2): the plan of the composite format ``strips`` (:mod:`clspmv.formats.strips`).

The rows are cut into N strips of :func:`strip_rows` rows (a multiple of the SIMD width and of
the work-group size, at most :data:`MAX_STRIPS` strips, of :data:`MIN_STRIP_ENTRIES` entries or
more on average). ``E[i, j]`` is the least predicted time
of the block of strips ``i .. j-1`` over the formats that accept it, plus ``launch_cost`` (the
extra cost of one more block: its kernels' launches); with ``T[0] = 0``::

    T[j] = min over 0 <= i < j of  T[i] + E[i, j]                      (equations 1-2)

and ``T[N]`` is the plan's predicted time, its blocks found by walking back the minimising
``i``. The single-block plan ``E[0, N]`` is among the candidates, so the plan is never predicted
slower than the best single format. O(N^2) block evaluations of every format: with N <= 32
at most 528 blocks (:func:`plan_strips` reports its cost in :attr:`StripsPlan.cost_ms`).

Block features come from per-strip summaries (:mod:`.strip_summaries`), computed once (one pass
over the matrix) and combined per block without touching the entries again. A block is
predicted with its share of the device's cache (:func:`block_calibration`): every product
streams all the blocks.

**The rule for ``format="auto"``** (:attr:`StripsPlan.worthwhile`): take ``strips`` when the plan
has at least two blocks and its predicted time is at most ``1 - AUTO_MARGIN`` (0.9) times the
best single format's: the 10 % margin covers what the plan's prediction leaves out (the block
features are combined, not measured, and every block is a kernel launch and a cache of x of its
own), so that a plan is taken only where the model sees a clear gain. Where a trial is due,
a plan predicted :data:`TRIAL_MARGIN` (0.05) faster is measured as well, and the measurement
may overturn the model's choice (:mod:`clspmv.model.strips_trial`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
import scipy.sparse as sp

from ..device import Device
from ..formats import SINGLE_FORMATS, format_class
from ..formats.base import round_up
from .features import Features, diagonal_formats, refusal
from .predict import kernel_time
from .strip_summaries import DIAGONAL_CAP, StripSummaries
from .timemodel import Calibration

MAX_STRIPS = 32
"""Most strips a matrix is cut into: the DP evaluates N (N + 1) / 2 blocks in every format, 528
for 32 strips (64 strips, 2 080 blocks, took four times as long for the same plans on the
stacked matrices)."""
MIN_STRIP_ENTRIES = 1 << 15
"""Fewest entries (on average) a strip holds: a smaller matrix is cut into fewer strips, since a
block of fewer entries saves less than the launch it costs, and the plan itself costs time per
strip (features) and per block (predictions)."""
AUTO_MARGIN = 0.10
"""``format="auto"`` takes a strips plan only when predicted at least this much faster than the
best single format."""
TRIAL_MARGIN = 0.05
"""Where a trial will measure the plan (:mod:`clspmv.model.strips_trial`), ``format="auto"``
tries a plan predicted at least this much faster than the best single format, and takes it
where it measured clearly faster (:data:`clspmv.model.trial.MARGIN`). On the H200 a plan
predicted 9.3 % faster (a 27-point stencil above an R-MAT graph; the model puts the stencil in
``hyb``, the trial in ``dia``) measured 1.14 times as fast as the best single format
(``reports/2026-11-26-h200-strips``)."""
Predictor = Callable[[str, Features], "float | None"]
"""Predicted kernel seconds of a format for a block's features, or None where it refuses."""


def calibration_predictor(cal: Calibration, work_group_size: int = 256,
                          total_entries: int = 0) -> Predictor:
    """A :data:`Predictor` from a calibration's time models: None for a format that refuses the
    block (:func:`clspmv.model.features.refusal`) or that the calibration has no model of.
    ``total_entries``: those of the matrix the blocks are cut from, whose products run every
    block (each block then has its share of the cache: :func:`block_calibration`); 0: each
    block is a product of its own."""
    def predict(fmt: str, f: Features) -> float | None:
        if fmt not in cal.kernel or refusal(fmt, f, work_group_size) is not None:
            return None
        return kernel_time(block_calibration(cal, f.entries, total_entries), fmt, f)
    return predict


def block_calibration(cal: Calibration, entries: int, total_entries: int) -> Calibration:
    """``cal`` for a block of ``entries`` of a matrix of ``total_entries`` whose products run
    every block: its cache scaled to the block's share of the entries, and so the sizes of its
    stream miss curve (which a CPU's calibration reads instead of the cache, and its quick
    calibration's correction beyond the cache too:
    :meth:`~clspmv.model.timemodel.Calibration.large_factor`). The blocks of a strips
    product stream one after another, so a block's data stays in the cache from one product
    to the next only as far as the whole matrix's does; predicted as a product of its own, a
    block small enough for the cache counted as cached (on the 2-core CPU a matrix of 16 M
    entries was cut into seven ``csr-blocks`` blocks predicted 9 % faster than one, which
    measured 20 % slower: ``reports/2026-11-26-cpu-2core-zen4-strips``)."""
    if total_entries <= 0 or entries >= total_entries:
        return cal
    share = entries / total_entries
    return replace(cal, cache_bytes=int(cal.cache_bytes * share),
                   stream_miss=[[size * share, miss] for size, miss in cal.stream_miss])


def strip_rows(rows: int, simd_width: int, work_group_size: int,
               max_strips: int = MAX_STRIPS, entries: int = 0,
               min_entries: int = MIN_STRIP_ENTRIES) -> int:
    """Rows per strip: a multiple of ``lcm(8 * simd_width, work_group_size)``, the smallest that
    cuts ``rows`` into at most ``max_strips`` strips of about ``min_entries`` of the matrix's
    ``entries`` or more each."""
    base = math.lcm(8 * simd_width, work_group_size)
    strips = max(1, min(max_strips, entries // min_entries if entries else max_strips))
    return max(base, round_up(-(-rows // strips), base))


def partition(block_cost: Callable[[int, int], tuple[float, str | None]], strips: int,
              launch_cost: float = 0.0) -> tuple[float, list[tuple[int, int, str]]]:
    """The dynamic programme (equations 1-2) over ``strips`` strips: ``block_cost(i, j)`` is
    ``(least time, its format)`` of the block of strips ``i .. j-1`` (``(inf, None)`` where every
    format refuses it). Returns the least total time, ``launch_cost`` counted once per block, and
    the blocks ``(i, j, format)`` in order; ValueError when no partition is possible."""
    if strips < 1:
        raise ValueError(f"strips must be at least 1, got {strips}")
    best = np.full(strips + 1, np.inf)
    best[0] = 0.0
    split = np.zeros(strips + 1, np.int64)
    chosen: dict[tuple[int, int], str] = {}
    for i in range(strips):
        if not np.isfinite(best[i]):
            continue
        for j in range(i + 1, strips + 1):
            t, fmt = block_cost(i, j)
            if fmt is None or not np.isfinite(t):
                continue
            total = best[i] + t + launch_cost
            if total < best[j]:
                best[j], split[j] = total, i
                chosen[i, j] = fmt
    if not np.isfinite(best[strips]):
        raise ValueError("every format refuses some strip of this matrix: no strips plan")
    blocks = []
    j = strips
    while j > 0:
        i = int(split[j])
        blocks.append((i, j, chosen[i, j]))
        j = i
    return float(best[strips]), blocks[::-1]


@dataclass(frozen=True)
class StripsPlan:
    """A strips plan and what it was chosen against."""

    strip_rows: int
    blocks: tuple[tuple[int, int, str], ...]
    """``(row_start, row_stop, format)`` of every block."""
    predicted_s: float
    """Predicted seconds of one product with the plan (launch costs included)."""
    single_format: str
    single_s: float
    """The best single format and its predicted seconds (one launch cost included)."""
    cost_ms: float
    """Milliseconds the plan took (strip summaries, block predictions, the DP)."""
    margin: float = AUTO_MARGIN
    block_params: tuple[dict[str, object], ...] = ()
    """Parameters of every block's format (e.g. its preferred ``work_group_size`` on the
    device: :func:`plan_for_device`); empty: the formats' defaults."""

    @property
    def gain(self) -> float:
        """Predicted saving against the best single format, as a fraction of its time."""
        return 1.0 - self.predicted_s / self.single_s if self.single_s > 0 else 0.0

    @property
    def worth_a_trial(self) -> bool:
        """At least two blocks and a predicted time of at most ``1 - TRIAL_MARGIN`` times the
        best single format's: worth measuring where a trial is due."""
        return len(self.blocks) > 1 and self.predicted_s <= (1.0 - TRIAL_MARGIN) * self.single_s

    @property
    def worthwhile(self) -> bool:
        """The rule of ``format="auto"``: at least two blocks and a predicted time of at most
        ``1 - margin`` (:data:`AUTO_MARGIN`) times the best single format's."""
        return len(self.blocks) > 1 and self.predicted_s <= (1.0 - self.margin) * self.single_s

    def params(self) -> dict[str, object]:
        """The parameters of ``format="strips"`` that store this plan
        (``DeviceMatrix.from_scipy(A, format="strips", **plan.params())``)."""
        params = self.block_params or ({},) * len(self.blocks)
        return {"blocks": [[*b, dict(p)] for b, p in zip(self.blocks, params, strict=True)],
                "strip_rows": self.strip_rows}


def plan_strips(csr: sp.csr_matrix, predictor: Calibration | Predictor, simd_width: int,
                work_group_size: int = 256, launch_cost: float | None = None,
                formats: Sequence[str] | None = None, max_strips: int = MAX_STRIPS,
                margin: float = AUTO_MARGIN, min_strip_entries: int = MIN_STRIP_ENTRIES
                ) -> StripsPlan:
    """The strips plan of least predicted time for the canonical CSR matrix ``csr`` on a device
    of ``simd_width`` and ``work_group_size`` (see the module docstring).

    ``predictor``: a :class:`Calibration` (its models, :func:`calibration_predictor`) or any
    :data:`Predictor`. ``launch_cost``: seconds added per block (default: the calibration's
    launch overhead, else 0). ``formats``: the formats a block may take (default
    :data:`clspmv.formats.SINGLE_FORMATS`). ``max_strips``, ``min_strip_entries``: see
    :func:`strip_rows`. Raises ValueError when every format refuses a strip.
    """
    t0 = time.perf_counter()
    if isinstance(predictor, Calibration):
        if launch_cost is None:
            launch_cost = predictor.launch_s
        predictor = calibration_predictor(predictor, work_group_size, csr.nnz)
    launch_cost = launch_cost or 0.0
    names = tuple(formats or SINGLE_FORMATS)
    size = strip_rows(csr.shape[0], simd_width, work_group_size, max_strips, csr.nnz,
                      min_strip_entries)
    summary = StripSummaries(csr, simd_width, size)
    n = summary.count
    diags = [summary.diagonal_counts(i) for i in range(n)]
    diagonal = diagonal_formats(names)

    def cost(i: int, j: int, only: Sequence[str] = names) -> tuple[float, str | None]:
        d = diags[i][j - i - 1]
        f = summary.block(i, j, d)
        best: tuple[float, str | None] = (np.inf, None)
        for fmt in only:
            if fmt in diagonal and d[0] > DIAGONAL_CAP:
                continue
            t = predictor(fmt, f)
            if t is not None and t < best[0]:
                best = (t, fmt)
        return best

    total, blocks = partition(cost, n, launch_cost)
    single_t, single_fmt = cost(0, n)
    rows = tuple((*summary.rows_of(i, j), fmt) for i, j, fmt in blocks)
    return StripsPlan(size, rows, total, single_fmt or "", single_t + launch_cost,
                      (time.perf_counter() - t0) * 1e3, margin)


def plan_for_device(csr: sp.csr_matrix, device: Device, calibration_: Calibration,
                    **options: object) -> StripsPlan:
    """:func:`plan_strips` for ``device`` with its calibration: its SIMD width, the work-group
    size :func:`clspmv.model.select` predicts with, and every block launched with its format's
    preferred work-group size there (as the calibration measured the formats). ``options``:
    those of :func:`plan_strips`."""
    wg = min(256, device.max_work_group_size)
    plan = plan_strips(csr, calibration_, device.simd_width, wg, **options)  # type: ignore[arg-type]
    return replace(plan, block_params=block_params([fmt for _, _, fmt in plan.blocks], device))


def block_params(formats: Sequence[str], device: Device) -> tuple[dict[str, object], ...]:
    """Parameters of blocks in ``formats`` on ``device``: each launched with its format's
    preferred work-group size there (``{}`` where that is the plan's own, the work-group size
    :func:`clspmv.model.select` predicts with), as the calibration measured the formats."""
    wg = min(256, device.max_work_group_size)
    params = []
    for fmt in formats:
        preferred = format_class(fmt).preferred_work_group_size(device)
        params.append({"work_group_size": preferred} if preferred not in (None, wg) else {})
    return tuple(params)


__all__ = ["AUTO_MARGIN", "MAX_STRIPS", "MIN_STRIP_ENTRIES", "TRIAL_MARGIN", "Predictor",
           "StripsPlan", "block_calibration", "block_params",
           "calibration_predictor", "partition", "plan_for_device", "plan_strips", "strip_rows"]
