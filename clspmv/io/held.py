"""Entries held as they are read, and the sums of their duplicates.

:class:`HeldEntries` appends entries in file order to three arrays (int32 rows and columns,
float64 values: 16 bytes an entry) that grow in place with ``realloc`` (no copy for large
arrays, whose pages the system remaps).

:class:`FoldedEntries` holds one entry per position (row, column): the positions as sorted keys
``row * cols + col`` (int64; ``col * rows + row`` in column-major order, for entries that arrive
so) and each one's sum (float64), 16 bytes a position. Entries are
added to it a batch at a time (:meth:`FoldedEntries.add`): each value is added onto the sum of
its position so far, one at a time in the order given (``numpy.add.at``), a new position's sum
starting from -0.0 (which adds nothing to any value, -0.0 and NaN included), as scipy's
``sum_duplicates`` adds the values of a row. New positions are merged into the sorted keys in
place, from the back, a block at a time, so a batch costs its own sort and a pass over the
positions after its first new one, and memory the positions, exactly, plus about 32 bytes an
entry of the batch.
"""

from __future__ import annotations

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


_BLOCK = 1 << 16
"""Positions moved at a time when new ones are merged in."""


class FoldedEntries:
    """One entry per position of a matrix of ``shape``: ``keys`` (``row * cols + col``, or
    ``col * rows + row`` where ``column_major``; int64, increasing) and ``sums`` (float64),
    arrays of exactly :attr:`size`.

    Entries that arrive in the order of the keys are appended, without a sort or a merge: a
    file written row by row folds fastest in row-major keys, one written column by column (as
    SuiteSparse writes them) in column-major keys.
    """

    def __init__(self, shape: tuple[int, int], *, column_major: bool = False) -> None:
        self.shape = shape
        self.column_major = column_major
        self.keys = np.zeros(0, dtype=np.int64)
        self.sums = np.zeros(0, dtype=np.float64)

    @property
    def size(self) -> int:
        return self.keys.size

    def add(self, entries: list[np.ndarray]) -> None:
        """Add ``[rows, cols, values]`` (emptied: the arrays are freed as they are used), each
        value onto its position's sum in the order given.

        Memory beyond the entries: 8 bytes an entry for their keys, 8 for their order and 8
        for their sorted keys, or later 8 for their group and 8 for their slots; and some 17 to
        33 a distinct position among them (and 17 a new one, for the positions grown).
        """
        rows, columns, values = entries
        entries.clear()
        major, minor = (columns, rows) if self.column_major else (rows, columns)
        keys = major.astype(np.int64)
        keys *= self.shape[0] if self.column_major else self.shape[1]
        keys += minor
        del rows, columns, major, minor
        if not keys.size:
            return
        if (keys[1:] > keys[:-1]).all() and (not self.size or keys[0] > self.keys[-1]):
            self._append(keys, values)  # in order already, every position new
            return
        order = np.argsort(keys)  # the one sort of these entries (equal keys in any order)
        keys = keys[order]
        first = np.empty(keys.size, dtype=bool)
        first[0] = True
        np.not_equal(keys[1:], keys[:-1], out=first[1:])
        distinct = keys[first]
        del keys
        group = np.cumsum(first)
        del first
        group -= 1
        slot = np.empty_like(group)
        slot[order] = group  # the index in distinct of every entry's key, in the order given
        del order, group
        # Where each distinct key is (or goes) among the positions: those before it, and the
        # new keys before it.
        place = np.searchsorted(self.keys, distinct)
        if self.size:
            new = self.keys[np.minimum(place, self.size - 1)] != distinct
        else:
            new = np.ones(distinct.size, dtype=bool)
        place += np.cumsum(new)
        place -= new
        if new.all():  # no copies where every position is new (a file without duplicates)
            self._insert(place, distinct)
        else:
            self._insert(place[new], distinct[new])
        del distinct, new
        for lo in range(0, slot.size, _BLOCK):  # the slots among all positions, in place
            slot[lo:lo + _BLOCK] = place[slot[lo:lo + _BLOCK]]
        del place
        np.add.at(self.sums, slot, values)  # in order, one at a time

    def _append(self, keys: np.ndarray, values: np.ndarray) -> None:
        """Append positions beyond those held, increasing, and their values (each one's sum:
        -0.0 plus the value, as :meth:`add` adds it)."""
        old = self.size
        self.keys.resize(old + keys.size, refcheck=False)
        self.sums.resize(old + keys.size, refcheck=False)
        self.keys[old:] = keys
        np.add(values, -0.0, out=self.sums[old:])

    def _insert(self, at: np.ndarray, keys: np.ndarray) -> None:
        """Grow the positions to hold ``keys`` (new, increasing) at the indices ``at`` (of the
        grown arrays), their sums -0.0; the positions already held move up, a block at a time
        from the back, so nothing is overwritten before it has moved."""
        if not at.size:
            return
        old = self.size
        size = old + at.size
        is_new = np.zeros(size, dtype=bool)
        is_new[at] = True
        self.keys.resize(size, refcheck=False)
        self.sums.resize(size, refcheck=False)
        stop, moved, placed = size, old, at.size  # blocks above stop are done
        first = int(at[0])  # nothing below it moves
        while stop > first:
            start = max(stop - _BLOCK, first)
            here = is_new[start:stop]
            count = int(np.count_nonzero(here))
            kept = ~here
            for array, fresh in ((self.keys, keys[placed - count:placed]), (self.sums, -0.0)):
                block = array[start:stop]
                block[kept] = array[moved - (stop - start - count):moved].copy()
                block[here] = fresh
            moved -= stop - start - count
            placed -= count
            stop = start
