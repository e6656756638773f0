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

Block features come from per-strip summaries, computed once (one pass over the matrix), combined
per block without touching the entries again: counts, sums and maxima exactly; the gathers from x
(:attr:`Features.x_lines`) as sums over the strips, the scattered ones as the strips' own; HYB's
width and the pJDS / SELL padding from per-strip histograms of the row lengths (exact: widths
up to :data:`HYB_WIDTH_CAP` from the histograms, longer rows kept as they are; SELL as
:mod:`.features` estimates it from pJDS); DIA's diagonals as the union of the strips', with the
rows of the block they cross (exact; a block of more than :data:`DIAGONAL_CAP` diagonals counts as
refused by DIA). A block is predicted with its share of the device's cache
(:func:`block_calibration`): every product streams all the blocks.

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
from ..formats import FORMAT_CLASSES, SINGLE_FORMATS
from ..formats.base import round_up
from ..formats.ell import ellr_t_threads
from ..formats.sell import SIGMA_PADDING_SLACK
from .features import Features, features, refusal
from .predict import kernel_time
from .sampling import ROW_BLOCK, diagonal_rows, x_lines
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
HYB_WIDTH_CAP = 1024
"""Widest HYB ELL part the block features count exactly (wider ones count as this width)."""
DIAGONAL_CAP = 4096
"""Most occupied diagonals a block may have for DIA to be considered."""

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
    every block: its cache scaled to the block's share of the entries. The blocks of a strips
    product stream one after another, so a block's data stays in the cache from one product
    to the next only as far as the whole matrix's does; predicted as a product of its own, a
    block small enough for the cache counted as cached (on the 2-core CPU a matrix of 16 M
    entries was cut into seven ``csr-blocks`` blocks predicted 9 % faster than one, which
    measured 20 % slower: ``reports/2026-11-26-cpu-2core-zen4-strips``)."""
    if total_entries <= 0 or entries >= total_entries:
        return cal
    return replace(cal, cache_bytes=int(cal.cache_bytes * entries / total_entries))


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


class StripSummaries:
    """Per-strip summaries of a canonical CSR matrix, and the features of any block of
    consecutive strips combined from them (see the module docstring)."""

    def __init__(self, csr: sp.csr_matrix, simd_width: int, rows_per_strip: int) -> None:
        m = csr.shape[0]
        self.csr_shape = csr.shape
        self.itemsize = csr.dtype.itemsize
        self.simd = simd_width
        self.bounds = np.append(np.arange(0, m, rows_per_strip), m) if m else np.zeros(2, int)
        lengths = np.diff(csr.indptr).astype(np.int64)
        strips = [features(csr, simd_width, rows=slice(int(a), int(b)))
                  for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
        self.count = len(strips)

        def cum(values: Sequence[float]) -> np.ndarray:
            return np.concatenate([[0.0], np.cumsum(np.asarray(values, np.float64))])

        self.rows = cum([f.rows for f in strips])
        self.entries = cum([f.entries for f in strips])
        self.empty = cum([f.empty_rows for f in strips])
        # x lines: a block's first strip gathers all of its own (features of the block alone
        # count them so), every later strip only those its predecessor rows left uncached: its
        # own less the lines of its first row block that the row block before it read (counted
        # on those two row blocks alone, not on a second sample of the strip)
        self.x_alone = np.array([f.x_lines for f in strips])
        pairs = list(zip(self.bounds[:-1], self.bounds[1:], strict=True))
        self.x_lines = cum([self.x_alone[0] if strips else 0.0] + [
            self.x_alone[s] - _seam_lines(csr, int(a), int(b))
            for s, (a, b) in enumerate(pairs) if s])
        # scattered lines: each strip's own (a stream crossing a strip's edge is rare)
        self.scattered = cum([f.x_scattered for f in strips])
        self.near = cum([f.near_fraction * f.entries for f in strips])
        self.distance = cum([f.mean_distance * f.entries for f in strips])
        self.slots = {"csr-aligned": cum([f.slots_of("csr-aligned") for f in strips])}
        self.lanes = cum([f.lane_padding for f in strips])  # strips: whole SIMD-width groups
        self.max_row = np.array([f.max_row for f in strips], np.int64)
        self.min_row = np.array([lengths[a:b].min() if b > a else 0
                                 for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)],
                                np.int64)
        squares = np.concatenate([[0], np.cumsum(lengths * lengths)])
        self.squares = squares[self.bounds].astype(np.float64)
        # HYB: rows of each strip reaching width w (w = 0 .. cap), summed over strips
        self.cap = cap = int(min(lengths.max(initial=0), HYB_WIDTH_CAP))
        # the rows longer than cap, per strip (at most entries / cap of them)
        self.long_rows = [lengths[a:b][lengths[a:b] > cap]
                          for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True)]
        reach = np.zeros((self.count + 1, cap + 2), np.int64)
        for s, (a, b) in enumerate(zip(self.bounds[:-1], self.bounds[1:], strict=True)):
            hist = np.bincount(np.minimum(lengths[a:b], cap + 1), minlength=cap + 2)
            reach[s + 1] = np.cumsum(hist[::-1])[::-1]  # rows with length >= w
        self.reach = np.cumsum(reach, axis=0)
        # DIA: the occupied diagonals of each strip (None beyond DIAGONAL_CAP), from a presence
        # table over the m + n diagonals, cleared after each strip: O(entries + strips (m + n))
        present = np.zeros(m + csr.shape[1], bool)
        self.diagonals: list[np.ndarray | None] = []
        for a, b in zip(self.bounds[:-1], self.bounds[1:], strict=True):
            lo, hi = int(csr.indptr[a]), int(csr.indptr[b])
            where = csr.indices[lo:hi] - np.repeat(np.arange(a, b, dtype=np.int64),
                                                    lengths[a:b]) + m
            present[where] = True
            occupied = np.flatnonzero(present)
            present[where] = False
            self.diagonals.append(occupied if occupied.size <= DIAGONAL_CAP else None)

    def rows_of(self, i: int, j: int) -> tuple[int, int]:
        """First row and end row of the block of strips ``i .. j-1``."""
        return int(self.bounds[i]), int(self.bounds[j])

    def block(self, i: int, j: int, diagonals: tuple[int, int]) -> Features:
        """Features of the block of strips ``i .. j-1`` whose occupied diagonals and the rows
        they cross are ``diagonals`` (:meth:`diagonal_counts`)."""
        occupied, crossed = diagonals
        rows = int(self.rows[j] - self.rows[i])
        nnz = int(self.entries[j] - self.entries[i])
        longest = int(self.max_row[i:j].max()) if j > i else 0
        mean = nnz / rows if rows else 0.0
        var = (self.squares[j] - self.squares[i]) / rows - mean * mean if rows else 0.0
        n_pad = round_up(rows, self.simd)
        reach = self.reach[j] - self.reach[i]  # rows reaching width w
        k = int(np.count_nonzero(3 * reach[1:-1] >= rows)) if rows else 0
        beyond = nnz - int(reach[1:k + 1].sum())
        slots = {fmt: int(c[j] - c[i]) for fmt, c in self.slots.items()}
        pjds = self.sorted_slots(reach, [self.long_rows[s] for s in range(i, j)])
        constant = rows == 0 or int(self.min_row[i:j].min()) == longest
        slots["pjds"] = pjds
        lines = float(self.x_alone[i] + self.x_lines[j] - self.x_lines[i + 1])
        slots["sell"] = pjds if constant else pjds + int(SIGMA_PADDING_SLACK * nnz / 2)
        slots.update({
            "ell": n_pad * longest, "ellr": n_pad * longest,
            "ellr-t": n_pad * round_up(longest, ellr_t_threads(mean)),
            "hyb": n_pad * k + beyond, "dia": occupied * n_pad})
        return Features(
            rows=rows, cols=self.csr_shape[1], entries=nnz, itemsize=self.itemsize,
            simd_width=self.simd, empty_rows=int(self.empty[j] - self.empty[i]),
            mean_row=mean, max_row=longest, std_row=float(np.sqrt(max(var, 0.0))),
            x_lines=lines, x_scattered=min(lines, float(self.scattered[j] - self.scattered[i])),
            near_fraction=float((self.near[j] - self.near[i]) / nnz) if nnz else 1.0,
            mean_distance=float((self.distance[j] - self.distance[i]) / nnz) if nnz else 0.0,
            slots=slots, diagonals=occupied, diagonal_rows=crossed, diagonals_exact=True,
            hyb_width=k,
            lane_padding=int(self.lanes[j] - self.lanes[i]))

    def sorted_slots(self, reach: np.ndarray, long_rows: list[np.ndarray]) -> int:
        """Slots of pJDS (all rows sorted by length, slices of C rows padded to their longest)
        for a block whose rows reaching each width w are ``reach[w]`` (w <= cap) and whose rows
        longer than cap are ``long_rows``: slice s pads to the length of rank s C, so the slots
        are C times the sum over w of ceil(rows reaching w / C), the widths above cap counted
        from the long rows themselves (exact, without sorting the block's rows)."""
        c = self.simd
        total = int((-(-reach[1:self.cap + 1] // c)).sum())
        longest = np.concatenate(long_rows) if long_rows else np.zeros(0, np.int64)
        if longest.size:
            ranked = -np.sort(-longest)
            total += int((ranked[::c] - self.cap).sum())
        return c * total

    def _crossing(self, keys: np.ndarray, r0: int, r1: int) -> tuple[int, int]:
        """(diagonals, rows of ``r0 .. r1-1`` they cross) of the diagonal keys ``keys``
        (column - row + m, as :attr:`diagonals` holds them)."""
        m, n = self.csr_shape
        return int(keys.size), diagonal_rows(keys - m + r0, r1 - r0, n)

    def strip_diagonals(self, s: int) -> tuple[int, int]:
        """:meth:`diagonal_counts` of strip ``s`` alone."""
        where = self.diagonals[s]
        if where is None:
            return DIAGONAL_CAP + 1, 0
        return self._crossing(where, *self.rows_of(s, s + 1))

    def diagonal_counts(self, i: int) -> list[tuple[int, int]]:
        """Occupied diagonals of the blocks ``i .. j-1`` for j = i+1 .. N (beyond
        :data:`DIAGONAL_CAP`: that cap plus one) and the block's rows they cross
        (:func:`clspmv.model.sampling.diagonal_rows`; 0 beyond the cap)."""
        m, n = self.csr_shape
        present = np.zeros(m + n, bool)
        union: list[np.ndarray] = []
        count = 0
        out = []
        r0 = int(self.bounds[i])
        for j in range(i, self.count):
            where = self.diagonals[j]
            if where is None:
                count = DIAGONAL_CAP + 1
            elif count <= DIAGONAL_CAP:
                new = where[~present[where]]
                count += new.size
                present[new] = True
                union.append(new)
            if count > DIAGONAL_CAP:
                out.append((DIAGONAL_CAP + 1, 0))
                continue
            keys = np.concatenate(union) if union else np.zeros(0, np.int64)
            out.append(self._crossing(keys, r0, int(self.bounds[j + 1])))
        return out


def _seam_lines(csr: sp.csr_matrix, start: int, stop: int) -> float:
    """Lines of x that the first row block of the strip ``start .. stop`` reads and the row
    block before it already read (:func:`clspmv.model.sampling.x_lines` of the two blocks)."""
    first = min(start + ROW_BLOCK, stop)
    before = start - ROW_BLOCK
    chained = x_lines(csr, slice(before, first)) - x_lines(csr, slice(before, start))
    return max(0.0, x_lines(csr, slice(start, first)) - chained)


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

    def cost(i: int, j: int, only: Sequence[str] = names) -> tuple[float, str | None]:
        d = diags[i][j - i - 1]
        f = summary.block(i, j, d)
        best: tuple[float, str | None] = (np.inf, None)
        for fmt in only:
            if fmt == "dia" and d[0] > DIAGONAL_CAP:
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
        preferred = FORMAT_CLASSES[fmt].preferred_work_group_size(device)
        params.append({"work_group_size": preferred} if preferred not in (None, wg) else {})
    return tuple(params)


__all__ = ["AUTO_MARGIN", "MAX_STRIPS", "MIN_STRIP_ENTRIES", "TRIAL_MARGIN", "Predictor",
           "StripSummaries", "StripsPlan", "block_calibration", "block_params",
           "calibration_predictor", "partition", "plan_for_device", "plan_strips", "strip_rows"]
