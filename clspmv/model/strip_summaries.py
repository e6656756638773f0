"""Per-strip summaries of a matrix cut into row strips, and the features of any block of
consecutive strips combined from them: what the strips plan (:mod:`.strips`) and the distributed
row split (:mod:`clspmv.distributed.predicted`) predict blocks from.

Block features come from per-strip summaries, computed once (one pass over the matrix), combined
per block without touching the entries again: counts, sums and maxima exactly; the gathers from x
(:attr:`Features.x_lines`) as sums over the strips, the scattered ones as the strips' own; HYB's
width and the pJDS / SELL padding from per-strip histograms of the row lengths (exact: widths
up to :data:`HYB_WIDTH_CAP` from the histograms, longer rows kept as they are; SELL as
:mod:`.features` estimates it from pJDS); DIA's diagonals as the union of the strips', with the
rows of the block they cross (exact; a block of more than :data:`DIAGONAL_CAP` diagonals counts as
refused by DIA).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from ..formats.hyb import ell_share
from ..formats.layout import LOCKSTEP_SIMD
from ..row_stats import reach_share
from .features import Features, features, padded_slots
from .sampling import ROW_BLOCK, diagonal_rows, x_lines

HYB_WIDTH_CAP = 1024
"""Widest HYB ELL part the block features count exactly (wider ones count as this width)."""
DIAGONAL_CAP = 4096
"""Most occupied diagonals a block may have for DIA to be considered."""


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
        self.lengths = lengths
        self._aligned: dict[int, np.ndarray] = {}
        self.lanes = cum([f.lane_padding for f in strips])  # strips: whole SIMD-width groups
        self.changes = cum([f.length_changes for f in strips])  # a strip's first two rows: 0
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
        shape = BlockShape(self, i, j, occupied)
        rows, nnz, longest = shape.rows, shape.entries, shape.longest
        mean = nnz / rows if rows else 0.0
        var = (self.squares[j] - self.squares[i]) / rows - mean * mean if rows else 0.0
        lines = float(self.x_alone[i] + self.x_lines[j] - self.x_lines[i + 1])
        return Features(
            rows=rows, cols=self.csr_shape[1], entries=nnz, itemsize=self.itemsize,
            simd_width=self.simd, empty_rows=int(self.empty[j] - self.empty[i]),
            mean_row=mean, max_row=longest, std_row=float(np.sqrt(max(var, 0.0))),
            x_lines=lines, x_scattered=min(lines, float(self.scattered[j] - self.scattered[i])),
            near_fraction=float((self.near[j] - self.near[i]) / nnz) if nnz else 1.0,
            mean_distance=float((self.distance[j] - self.distance[i]) / nnz) if nnz else 0.0,
            slots=padded_slots(shape), diagonals=occupied, diagonal_rows=crossed,
            diagonals_exact=True, hyb_width=shape.hyb_width,
            lane_padding=int(self.lanes[j] - self.lanes[i]),
            length_changes=int(self.changes[j] - self.changes[i]))

    def aligned_slots(self, i: int, j: int, alignment: int) -> int:
        """Slots of the rows of the block of strips ``i .. j-1`` each padded to a multiple of
        ``alignment`` (from running sums over the rows, made once per alignment)."""
        if alignment not in self._aligned:
            padded = -(-self.lengths // alignment) * alignment
            self._aligned[alignment] = np.concatenate([[0], np.cumsum(padded)])[self.bounds]
        sums = self._aligned[alignment]
        return int(sums[j] - sums[i])

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


class BlockShape:
    """The :class:`~clspmv.formats.costs.RowShape` of the block of strips ``i .. j-1`` of
    ``summary`` whose occupied diagonals are ``diagonals``: what the formats' slot formulas read,
    combined from the strips' summaries, each part computed once when first read."""

    def __init__(self, summary: StripSummaries, i: int, j: int, diagonals: int) -> None:
        self.summary, self.i, self.j = summary, i, j
        self.rows = int(summary.rows[j] - summary.rows[i])
        self.entries = int(summary.entries[j] - summary.entries[i])
        self.simd_width = summary.simd
        self.longest = int(summary.max_row[i:j].max()) if j > i else 0
        self.constant = self.rows == 0 or int(summary.min_row[i:j].min()) == self.longest
        self.diagonals = diagonals
        self.reach = summary.reach[j] - summary.reach[i]  # rows reaching width w
        self._sorted: int | None = None

    @cached_property
    def hyb_width(self) -> int:
        """HYB's ELL width: the widths (up to the summaries' cap) that its share of the rows
        reach."""
        if not self.rows:
            return 0
        share = ell_share(self.simd_width >= LOCKSTEP_SIMD, self.summary.itemsize)
        return int(np.count_nonzero(reach_share(self.reach[1:-1], self.rows, share)))

    @cached_property
    def hyb_beyond(self) -> int:
        """Entries beyond :attr:`hyb_width`."""
        return self.entries - int(self.reach[1:self.hyb_width + 1].sum())

    def sorted_slots(self) -> int:
        """pJDS's slots (:meth:`StripSummaries.sorted_slots`)."""
        if self._sorted is None:
            self._sorted = self.summary.sorted_slots(
                self.reach, [self.summary.long_rows[s] for s in range(self.i, self.j)])
        return self._sorted

    def aligned_slots(self, alignment: int) -> int:
        """:meth:`StripSummaries.aligned_slots` of the block."""
        return self.summary.aligned_slots(self.i, self.j, alignment)


def _seam_lines(csr: sp.csr_matrix, start: int, stop: int) -> float:
    """Lines of x that the first row block of the strip ``start .. stop`` reads and the row
    block before it already read (:func:`clspmv.model.sampling.x_lines` of the two blocks)."""
    first = min(start + ROW_BLOCK, stop)
    before = start - ROW_BLOCK
    chained = x_lines(csr, slice(before, first)) - x_lines(csr, slice(before, start))
    return max(0.0, x_lines(csr, slice(start, first)) - chained)


__all__ = ["DIAGONAL_CAP", "HYB_WIDTH_CAP", "BlockShape", "StripSummaries"]
