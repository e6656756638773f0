"""The row-length statistics the features need (:mod:`.features`), all from one histogram of the
row lengths: the padding of pJDS (the rows sorted by length), HYB's width and overflow, the
rows aligned to a multiple, the longest row, the spread. One counting pass over the rows
instead of a sort of them per statistic (on 1.5 M rows, 50 ms of features before, a few ms
after); the answers are those of the sorts (:func:`clspmv.formats.sell.slice_padding`,
:func:`clspmv.stats.hyb_width`)."""

from __future__ import annotations

import numpy as np


class LengthHistogram:
    """Rows per length (``counts[v]``: the rows of ``v`` entries) of a matrix or row block."""

    def __init__(self, counts: np.ndarray) -> None:
        self.counts = counts.astype(np.int64)
        self.values = np.arange(self.counts.size, dtype=np.int64)
        self.rows = int(self.counts.sum())
        self.entries = int((self.counts * self.values).sum())
        # at_least[k]: rows of k entries or more (non-increasing)
        self.at_least = np.cumsum(self.counts[::-1])[::-1]

    @classmethod
    def of(cls, lengths: np.ndarray) -> LengthHistogram:
        """The histogram of these (non-negative integer) row lengths."""
        return cls(np.bincount(lengths) if lengths.size else np.zeros(1, np.int64))

    @property
    def longest(self) -> int:
        """The longest row (0 without rows)."""
        occupied = np.flatnonzero(self.counts)
        return int(occupied[-1]) if occupied.size else 0

    @property
    def constant(self) -> bool:
        """Whether every row has the same length (True without rows)."""
        return np.count_nonzero(self.counts) <= 1

    def std(self) -> float:
        """Standard deviation of the row lengths (0 without rows)."""
        if not self.rows:
            return 0.0
        mean = self.entries / self.rows
        return float(np.sqrt((self.counts * (self.values - mean) ** 2).sum() / self.rows))

    def largest(self, positions: np.ndarray) -> np.ndarray:
        """The lengths at these 0-based positions of the rows sorted longest first."""
        # the length at position p is the count of k >= 1 with at_least[k] > p
        return np.searchsorted(-self.at_least[1:], -positions, side="left")

    def sorted_padding(self, c: int) -> int:
        """Padding slots of the rows sorted longest first in slices of ``c``, each padded to its
        longest row (pJDS; :func:`~clspmv.formats.sell.slice_padding` with sigma = rows)."""
        if not self.rows:
            return 0
        heads = self.largest(np.arange(0, self.rows, c, dtype=np.int64))
        return int(heads.sum()) * c - self.entries

    def hyb_width(self) -> int:
        """HYB's ELL width (:func:`clspmv.stats.hyb_width`): the largest k that at least a
        third of the rows reach."""
        return int(np.count_nonzero(3 * self.at_least[1:] >= self.rows)) if self.rows else 0

    def beyond(self, k: int) -> int:
        """Entries beyond the first ``k`` of their row (HYB's COO part for width ``k``)."""
        return int((self.counts[k + 1:] * (self.values[k + 1:] - k)).sum())

    def aligned(self, alignment: int) -> int:
        """Slots of the rows each padded to a multiple of ``alignment``."""
        return int((self.counts * (-(-self.values // alignment) * alignment)).sum())

    def rows_beyond(self, limit: int) -> tuple[int, int]:
        """(rows, entries) of the rows longer than ``limit``."""
        tail = slice(limit + 1, None)
        return int(self.counts[tail].sum()), int((self.counts[tail] * self.values[tail]).sum())

    def without_beyond(self, limit: int) -> LengthHistogram:
        """The histogram with the rows longer than ``limit`` emptied."""
        counts = self.counts[:limit + 1].copy()
        counts[0] += int(self.counts[limit + 1:].sum())
        return LengthHistogram(counts)


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
