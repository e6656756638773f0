"""Entries held as they are read, and the folding of their duplicates.

The entries are appended in file order to three arrays (int32 rows and columns, float64
values: 16 bytes an entry) that grow in place with ``realloc`` (no copy for large arrays,
whose pages the system remaps).

A fold (:meth:`HeldEntries.fold`) replaces the entries by one per (row, column), sorted, each
the sum of that position's values in the order they were appended: a sum that starts from -0.0
(which adds nothing to any value, -0.0 and NaN included) and adds them one at a time
(``numpy.add.at``), as scipy's ``sum_duplicates`` adds the values of a row.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class _Growing:
    """A 1-D array appended to in place: its buffer grows by a quarter with ``realloc``."""

    def __init__(self, dtype: type) -> None:
        self.buffer = np.zeros(0, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        end = self.size + values.size
        if end > self.buffer.size:
            self.buffer.resize(max(end, self.buffer.size * 5 // 4, 1 << 12), refcheck=False)
        self.buffer[self.size:end] = values
        self.size = end

    def take(self) -> np.ndarray:
        """The values appended, in an array of their size; the buffer is handed over."""
        buffer, self.buffer = self.buffer, np.zeros(0, dtype=self.buffer.dtype)
        buffer.resize(self.size, refcheck=False)
        self.size = 0
        return buffer


class FoldPlan(NamedTuple):
    """What a fold of held entries makes of them: ``positions``, the distinct keys
    ``row * cols + col`` in increasing order, and ``slot``, for every entry in order, the index
    in ``positions`` of its key."""

    positions: np.ndarray
    slot: np.ndarray


class HeldEntries:
    """Entries (0-based int32 rows and columns, float64 values) in the order appended."""

    def __init__(self) -> None:
        self._arrays = (_Growing(np.int32), _Growing(np.int32), _Growing(np.float64))

    @property
    def size(self) -> int:
        return self._arrays[0].size

    def extend(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> None:
        """Append entries."""
        for growing, array in zip(self._arrays, (rows, cols, values), strict=True):
            growing.extend(array)

    def take(self) -> list[np.ndarray]:
        """``[rows, cols, values]``, handed over: nothing is held here any more."""
        return [growing.take() for growing in self._arrays]

    def take_after(self, other: HeldEntries) -> list[np.ndarray]:
        """``[rows, cols, values]`` of these entries then those of ``other``, handed over; one
        array at a time is appended to (in place) and ``other``'s freed."""
        joined = []
        for mine, theirs in zip(self._arrays, other._arrays, strict=True):
            mine.extend(theirs.take())
            joined.append(mine.take())
        return joined

    def _keys(self, cols: int) -> np.ndarray:
        """``row * cols + col`` of every entry, in order (8 bytes an entry)."""
        rows, columns = (growing.buffer[:growing.size] for growing in self._arrays[:2])
        keys = rows.astype(np.int64)
        keys *= cols
        keys += columns
        return keys

    def positions(self, cols: int) -> int:
        """The number of distinct positions of the entries in a matrix of ``cols`` columns
        (memory: 9 bytes an entry)."""
        keys = self._keys(cols)
        keys.sort()
        return int(np.count_nonzero(keys[1:] != keys[:-1])) + (keys.size > 0)

    def plan_fold(self, cols: int) -> FoldPlan:
        """The positions of the entries in a matrix of ``cols`` columns, and each one's slot.

        Memory: 8 bytes an entry for the keys, 8 for their order, then 4 for the slots and 8 a
        distinct position.
        """
        keys = self._keys(cols)
        order = np.argsort(keys)  # equal keys in any order: only the groups count
        keys.sort()
        first = np.empty(keys.size, dtype=bool)
        first[:1] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        positions = keys[first]
        del keys
        slot = np.empty(first.size, dtype=np.int32 if first.size < 2**31 else np.int64)
        group = np.cumsum(first, dtype=slot.dtype)
        del first
        group -= 1
        slot[order] = group
        return FoldPlan(positions, slot)

    def fold(self, plan: FoldPlan, cols: int) -> None:
        """Replace the entries by one per position of ``plan`` (from :meth:`plan_fold`, nothing
        appended since): the sum of its values in the order they were appended."""
        _, _, values = self.take()
        sums = np.full(plan.positions.size, -0.0)
        np.add.at(sums, plan.slot, values)  # in order, one at a time
        del values
        rows, columns = np.divmod(plan.positions, cols)
        self.extend(rows.astype(np.int32), columns.astype(np.int32), sums)
