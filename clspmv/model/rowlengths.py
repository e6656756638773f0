"""The row-length statistics the features need (:mod:`.features`), all from one histogram of the
row lengths: the padding of pJDS (the rows sorted by length), HYB's width and overflow, the
rows aligned to a multiple, the longest row, the spread. One counting pass over the rows
instead of a sort of them per statistic (on 1.5 M rows, 50 ms of features before, a few ms
after); the answers are those of the sorts (:func:`clspmv.formats.sell.slice_padding`,
:func:`clspmv.row_stats.hyb_width`)."""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property

import numpy as np

from ..row_stats import THIRD, reach_share


class LengthHistogram:
    """The occupied row lengths (``values``, ascending) of a matrix or row block and the rows of
    each (``counts``): operations cost the distinct lengths, not the longest row."""

    def __init__(self, values: np.ndarray, counts: np.ndarray) -> None:
        self.values = values.astype(np.int64)
        self.counts = counts.astype(np.int64)
        self.rows = int(self.counts.sum())
        self.entries = int((self.counts * self.values).sum())
        # at_least[i]: rows of values[i] entries or more
        self.at_least = np.cumsum(self.counts[::-1])[::-1]

    @classmethod
    def of(cls, lengths: np.ndarray) -> LengthHistogram:
        """The histogram of these (non-negative integer) row lengths."""
        counts = np.bincount(lengths) if lengths.size else np.zeros(0, np.int64)
        values = np.flatnonzero(counts)
        return cls(values, counts[values])

    @property
    def empty_rows(self) -> int:
        """Rows without entries."""
        return int(self.counts[0]) if self.values.size and self.values[0] == 0 else 0

    @property
    def longest(self) -> int:
        """The longest row (0 without rows)."""
        return int(self.values[-1]) if self.values.size else 0

    @property
    def constant(self) -> bool:
        """Whether every row has the same length (True without rows)."""
        return self.values.size <= 1

    def std(self) -> float:
        """Standard deviation of the row lengths (0 without rows)."""
        if not self.rows:
            return 0.0
        mean = self.entries / self.rows
        return float(np.sqrt((self.counts * (self.values - mean) ** 2).sum() / self.rows))

    def largest(self, positions: np.ndarray) -> np.ndarray:
        """The lengths at these 0-based positions of the rows sorted longest first."""
        return self.values[::-1][np.searchsorted(self.at_least[::-1], positions, side="right")]

    def sorted_padding(self, c: int) -> int:
        """Padding slots of the rows sorted longest first in slices of ``c``, each padded to its
        longest row (pJDS; :func:`~clspmv.formats.sell.slice_padding` with sigma = rows)."""
        if not self.rows:
            return 0
        heads = self.largest(np.arange(0, self.rows, c, dtype=np.int64))
        return int(heads.sum()) * c - self.entries

    def hyb_width(self, share: Fraction = THIRD) -> int:
        """HYB's ELL width (:func:`clspmv.row_stats.hyb_width`): the largest k that at least
        ``share`` of the rows reach (at_least is constant between occupied lengths)."""
        reached = self.values[reach_share(self.at_least, self.rows, share)]
        return int(reached[-1]) if reached.size else 0

    def beyond(self, k: int) -> int:
        """Entries beyond the first ``k`` of their row (HYB's COO part for width ``k``)."""
        over = self.values > k
        return int((self.counts[over] * (self.values[over] - k)).sum())

    def aligned(self, alignment: int) -> int:
        """Slots of the rows each padded to a multiple of ``alignment``."""
        return int((self.counts * (-(-self.values // alignment) * alignment)).sum())

    def rows_beyond(self, limit: int) -> tuple[int, int]:
        """(rows, entries) of the rows longer than ``limit``."""
        over = self.values > limit
        return int(self.counts[over].sum()), int((self.counts[over] * self.values[over]).sum())

    def without_beyond(self, limit: int) -> LengthHistogram:
        """The histogram with the rows longer than ``limit`` emptied."""
        keep = (self.values <= limit) & (self.values > 0)
        emptied = self.rows - int(self.counts[keep].sum())
        return LengthHistogram(np.r_[0, self.values[keep]], np.r_[emptied, self.counts[keep]])


def lane_padding(lengths: np.ndarray, c: int, entries: int) -> int:
    """Padding slots of the rows (of ``entries`` in all) in order in groups of ``c``, each
    padded to its longest row (:func:`~clspmv.formats.sell.slice_padding` with sigma = 1)."""
    m = lengths.size
    if m == 0:
        return 0
    whole = m - m % c
    heads = int(lengths[:whole].reshape(-1, c).max(axis=1).sum()) if whole else 0
    if whole < m:
        heads += int(lengths[whole:].max())
    return heads * c - entries


def length_changes(lengths: np.ndarray) -> int:
    """Rows whose length differs from the lengths of both rows before them: the rows at whose
    end a kernel walking rows in order with a loop per row takes a branch its CPU's predictor
    cannot foresee (a constant length, or lengths alternating between two values, it learns)."""
    if lengths.size < 3:
        return 0
    return int(np.count_nonzero((lengths[2:] != lengths[1:-1]) & (lengths[2:] != lengths[:-2])))


class HistogramShape:
    """The :class:`~clspmv.formats.costs.RowShape` of a :class:`LengthHistogram` (rows of a
    matrix, or of a block of them) on a device of SIMD width ``simd_width``: what the formats'
    slot formulas read, each part computed once when first read."""

    def __init__(self, hist: LengthHistogram, simd_width: int, hyb_share: Fraction,
                 diagonals: int) -> None:
        self.hist = hist
        self.rows = hist.rows
        self.entries = hist.entries
        self.simd_width = simd_width
        self.longest = hist.longest
        self.constant = hist.constant
        self.diagonals = diagonals
        self.share = hyb_share
        """The share of the rows HYB's ELL width must reach."""
        self._sorted: int | None = None

    @cached_property
    def hyb_width(self) -> int:
        """HYB's ELL width for the histogram's rows."""
        return self.hist.hyb_width(self.share)

    @cached_property
    def hyb_beyond(self) -> int:
        """Entries beyond :attr:`hyb_width`."""
        return self.hist.beyond(self.hyb_width)

    def sorted_slots(self) -> int:
        """pJDS's slots: the entries plus :meth:`LengthHistogram.sorted_padding`."""
        if self._sorted is None:
            self._sorted = self.entries + self.hist.sorted_padding(self.simd_width)
        return self._sorted

    def aligned_slots(self, alignment: int) -> int:
        """:meth:`LengthHistogram.aligned`."""
        return self.hist.aligned(alignment)
