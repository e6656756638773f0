"""Entries read from a Matrix Market body, and their assembly into a scipy matrix.

Memory: the entries are held as they are read, 16 bytes each (int32 row and column, float64
value), in arrays that grow with them; nothing is sized by what the header declares. The
result is assembled once the whole body has been read and checked: :meth:`Collector.coo`
hands those arrays over (no per-row array, as ``scipy.io.mmread`` returns them),
:meth:`Collector.csr` converts them with scipy, whose row pointer is the one array sized by the
row count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from clspmv.io.header import Header


class Entries(NamedTuple):
    """Entries of part of a body: 0-based int32 ``rows`` and ``cols``, float64 ``values``, in
    file order and not mirrored, and ``count``, the data lines they were read from."""

    rows: np.ndarray
    cols: np.ndarray
    values: np.ndarray
    count: int

    @staticmethod
    def empty() -> Entries:
        """No entries, from no data line."""
        return Entries(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0), 0)

    @staticmethod
    def join(parts: list[Entries]) -> Entries:
        """The entries of consecutive parts as one."""
        if len(parts) == 1:
            return parts[0]
        rows, cols, values = (np.concatenate(x) for x in zip(*(p[:3] for p in parts),
                                                              strict=True))
        return Entries(rows, cols, values, sum(p.count for p in parts))


def array_positions(header: Header, found: int, values: np.ndarray) -> Entries:
    """The non-zero ``values`` of an ``array`` file's data lines ``found`` onwards (the file is
    column-major; its zeros are not stored, as in a CSR matrix made from a dense one)."""
    nonzero = np.flatnonzero(values != 0)
    k = found + nonzero
    rows = (k % header.rows).astype(np.int32) if k.size else np.zeros(0, np.int32)
    cols = (k // header.rows).astype(np.int32) if k.size else np.zeros(0, np.int32)
    return Entries(rows, cols, values[nonzero], values.size)


class _Growing:
    """A 1-D array appended to in place: its buffer grows by a quarter with ``realloc`` (no
    copy for large arrays, whose pages the system remaps) and is cut to size when taken."""

    def __init__(self, dtype: type) -> None:
        self._buffer = np.zeros(0, dtype=dtype)
        self.size = 0

    def extend(self, values: np.ndarray) -> None:
        end = self.size + values.size
        if end > self._buffer.size:
            self._buffer.resize(max(end, self._buffer.size * 5 // 4, 1 << 12), refcheck=False)
        self._buffer[self.size:end] = values
        self.size = end

    def take(self) -> np.ndarray:
        """The values appended, in an array of their size; the buffer is handed over."""
        buffer, self._buffer = self._buffer, np.zeros(0, dtype=self._buffer.dtype)
        buffer.resize(self.size, refcheck=False)
        self.size = 0
        return buffer


class Collector:
    """The entries of rows ``start:stop`` of a matrix, gathered piece by piece.

    A symmetric or skew-symmetric file's entry ``(i, j)`` off the diagonal also stands for
    ``(j, i)`` (negated for skew-symmetric). The order is scipy's: the file's own entries in
    file order, then the mirrored ones in file order, so that duplicates are summed in the same
    order as ``scipy.io.mmread(path).tocsr()`` sums them.
    """

    def __init__(self, header: Header, start: int = 0, stop: int | None = None) -> None:
        self.header = header
        self.start = start
        self.stop = header.rows if stop is None else stop
        self._own = [_Growing(np.int32), _Growing(np.int32), _Growing(np.float64)]
        self._mirrored = [_Growing(np.int32), _Growing(np.int32), _Growing(np.float64)]

    def add(self, entries: Entries) -> None:
        """Keep those of ``entries`` (and of their mirrors) that land in the rows."""
        r, c, v = entries.rows, entries.cols, entries.values
        self._keep(self._own, r, c, v)
        if self.header.symmetry != "general":
            off = r != c
            sign = -1.0 if self.header.symmetry == "skew-symmetric" else 1.0
            self._keep(self._mirrored, c[off], r[off], sign * v[off])

    def _keep(self, into: list[_Growing], r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        if self.start != 0 or self.stop != self.header.rows:
            keep = (r >= self.start) & (r < self.stop)
            r, c, v = r[keep] - self.start, c[keep], v[keep]
        for growing, values in zip(into, (r, c, v), strict=True):
            growing.extend(values)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.stop - self.start, self.header.cols)

    def coo(self) -> sp.coo_matrix:
        """The kept entries as a float64 COO matrix (duplicates not summed): the mirrored
        entries are appended to the file's own in place, one array at a time."""
        arrays = []
        for own, mirrored in zip(self._own, self._mirrored, strict=True):
            own.extend(mirrored.take())
            arrays.append(own.take())
        r, c, v = arrays
        return sp.coo_matrix((v, (r, c)), shape=self.shape)

    def csr(self) -> sp.csr_matrix:
        """The kept entries as a float64 CSR matrix: duplicates summed, indices sorted,
        explicit zeros kept (scipy's COO to CSR conversion)."""
        coo = self.coo()
        A = coo.tocsr()
        del coo
        A.sum_duplicates()
        return A
