"""Entries read from a Matrix Market body, and what is kept of them for the result.

Memory: the entries are held as they are read, 16 bytes each (int32 row and column, float64
value), in chunks (:mod:`clspmv.io.held`); nothing is sized by what the header declares. The
result is assembled once the whole body has been read and checked (:mod:`clspmv.io.assembly`):
:meth:`Collector.coo` joins the entries (no per-row array, as ``scipy.io.mmread`` returns
them), :meth:`Collector.csr` places them into CSR arrays chunk by chunk; its row pointer is the
one array sized by the row count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from clspmv.io import assembly
from clspmv.io.header import Header
from clspmv.io.held import HeldEntries

FOLD_ENTRIES = 1 << 18
"""Entries held (4 MiB) from which a CSR read sums their duplicates (see :class:`Collector`)."""


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


class Collector:
    """The entries of rows ``start:stop`` of a matrix, gathered piece by piece.

    A symmetric or skew-symmetric file's entry ``(i, j)`` off the diagonal also stands for
    ``(j, i)`` (negated for skew-symmetric). The order is scipy's: the file's own entries in
    file order, then the mirrored ones in file order, so that duplicates are summed in the same
    order as ``scipy.io.mmread(path).tocsr()`` sums them.

    With ``fold_at`` (for a CSR result, whose duplicates are summed anyway), once ``fold_at``
    entries or more are held, the number of distinct positions among them is counted (a sort);
    where that is half of them or fewer, they are folded: each part (the file's own entries,
    the mirrored ones) becomes one entry per position, the sum of its values in file order
    (:meth:`HeldEntries.fold`), and the next fold comes ``fold_at`` entries later; else
    nothing changes and folding stops. So a file of mostly duplicates holds at most about
    ``2.5 * fold_at`` entries, not one a line, and one with few pays one sort of ``fold_at``.
    """

    def __init__(self, header: Header, start: int = 0, stop: int | None = None, *,
                 fold_at: int | None = None) -> None:
        self.header = header
        self.start = start
        self.stop = header.rows if stop is None else stop
        self._own = HeldEntries()
        self._mirrored = HeldEntries()
        self._fold_at = fold_at  # the entries held that start the next fold; None: no folding
        self._fold_every = fold_at or 0
        self._step = max(self._fold_every // 4, 1)  # entries added at a time while folding

    def add(self, entries: Entries) -> None:
        """Keep those of ``entries`` (and of their mirrors) that land in the rows."""
        r, c, v = entries.rows, entries.cols, entries.values
        if self._fold_at is not None and r.size > self._step:  # so that a fold comes in time
            for at in range(0, r.size, self._step):
                self.add(Entries(r[at:at + self._step], c[at:at + self._step],
                                 v[at:at + self._step], 0))
            return
        self._keep(self._own, r, c, v)
        if self.header.symmetry != "general":
            off = r != c
            sign = -1.0 if self.header.symmetry == "skew-symmetric" else 1.0
            self._keep(self._mirrored, c[off], r[off], sign * v[off])
        if self._fold_at is not None and self._held >= self._fold_at:
            self._fold()

    def _keep(self, into: HeldEntries, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        if self.start != 0 or self.stop != self.header.rows:
            keep = (r >= self.start) & (r < self.stop)
            r, c, v = r[keep] - self.start, c[keep], v[keep]
        into.extend(r, c, v)

    @property
    def _held(self) -> int:
        return self._own.size + self._mirrored.size

    def _fold(self) -> None:
        parts = (self._own, self._mirrored)
        if 2 * sum(part.positions(self.header.cols) for part in parts) > self._held:
            self._fold_at = None  # too few duplicates for folding to pay
            return
        for part in parts:
            part.fold(part.plan_fold(self.header.cols), self.header.cols)
        self._fold_at = self._held + self._fold_every

    @property
    def shape(self) -> tuple[int, int]:
        return (self.stop - self.start, self.header.cols)

    def coo(self) -> sp.coo_matrix:
        """The kept entries as a float64 COO matrix (duplicates not summed, unless folded)."""
        return assembly.coo(self._own, self._mirrored, self.shape)

    def csr(self) -> sp.csr_matrix:
        """The kept entries as a float64 CSR matrix: duplicates summed, indices sorted,
        explicit zeros kept (as scipy's COO to CSR conversion makes it)."""
        return assembly.csr(self._own, self._mirrored, self.shape)
