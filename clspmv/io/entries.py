"""Entries read from a Matrix Market body, and what is kept of them for the result.

Memory: the entries are held as they are read, 16 bytes each (int32 row and column, float64
value), in arrays that grow with them (:mod:`clspmv.io.held`); nothing is sized by what the
header declares. A CSR read folds them as it goes (one entry per position, see
:class:`Collector`). The result is assembled once the whole body has been read and checked
(:mod:`clspmv.io.assembly`): :meth:`Collector.coo` joins the entries (no per-row array, as
``scipy.io.mmread`` returns them), :meth:`Collector.csr` makes the CSR arrays; its row pointer
is the one array sized by the row count.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from clspmv.errors import MatrixFormatError
from clspmv.io import assembly
from clspmv.io.header import Header
from clspmv.io.held import FoldedEntries, HeldEntries

FOLD_ENTRIES = 1 << 18
"""Entries held (4 MiB) from which a CSR read sums their duplicates as it goes (see
:class:`Collector`)."""


COLUMN_POINTER_EXTRA = 1 << 22
"""Columns beyond the rows (16 MiB of column pointer) up to which a CSR read may fold
column-major entries column-major (:meth:`Collector._column_major`)."""


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
    entries are held they are folded (:class:`~clspmv.io.held.FoldedEntries`): each value added
    onto its position's sum, the file's own entries (in file order) then the mirrored ones;
    from then on, the entries held since are folded in the same way whenever they reach
    ``fold_at`` or an eighth of the positions, whichever is more. So duplicates never take
    more than that, wherever they are in the file (a matrix written twice, a few positions
    repeated after many distinct ones), and every entry is sorted once, in a batch. The
    positions are kept in row-major order, or in column-major order where the file's first
    entries come column by column (:meth:`_column_major`).
    """

    def __init__(self, header: Header, start: int = 0, stop: int | None = None, *,
                 fold_at: int | None = None, name: str) -> None:
        self.header = header
        self.name = name  # the file's, for errors
        self.start = start
        self.stop = header.rows if stop is None else stop
        self._own = HeldEntries()
        self._mirrored = HeldEntries()
        self._folded: FoldedEntries | None = None
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
        if self._fold_at is not None and self._own.size + self._mirrored.size >= self._fold_at:
            self._fold()

    def _keep(self, into: HeldEntries, r: np.ndarray, c: np.ndarray, v: np.ndarray) -> None:
        if self.start != 0 or self.stop != self.header.rows:
            keep = (r >= self.start) & (r < self.stop)
            r, c, v = r[keep] - self.start, c[keep], v[keep]
        into.extend(r, c, v)

    def _fold(self) -> None:
        own = self._own.size
        batch = self._own.take_after(self._mirrored)  # one batch: own, then mirrored
        if self._folded is None:
            self._folded = FoldedEntries(self.shape, column_major=self._column_major(
                batch[0][:own], batch[1][:own]))
        self._folded.add(batch)
        self._fold_at = max(self._fold_every, self._folded.size // 8)

    def _column_major(self, rows: np.ndarray, cols: np.ndarray) -> bool:
        """Whether to fold in column-major keys: the file's first entries arrive column by
        column but not row by row (so that the entries that follow are appended rather than
        merged into the middle of the positions, see :class:`FoldedEntries`), and the CSC
        column pointer the result is transposed from is at most :data:`COLUMN_POINTER_EXTRA`
        entries longer than the CSR row pointer (within the bound of the read's memory).

        Not for a symmetric or skew-symmetric file: the mirrors of entries that come in one
        order come in the other, so half the entries are merged whichever order is kept (and
        a read took as long either way); row-major keys spare the transposition's memory.
        """
        height, width = self.shape
        if (self.header.symmetry != "general" or width > height + COLUMN_POINTER_EXTRA
                or rows.size < 2):
            return False

        def increasing(major: np.ndarray, minor: np.ndarray, size: int) -> bool:
            keys = major.astype(np.int64) * size + minor
            return bool((keys[1:] >= keys[:-1]).all())

        return increasing(cols, rows, height) and not increasing(rows, cols, width)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.stop - self.start, self.header.cols)

    def coo(self) -> sp.coo_array:
        """The kept entries as a float64 COO array, duplicates not summed (of a collector
        without ``fold_at``)."""
        assert self._folded is None, "folded entries have no COO form"
        return assembly.coo(self._own, self._mirrored, self.shape)

    def csr(self) -> sp.csr_array:
        """The kept entries as a float64 CSR array: duplicates summed, indices sorted,
        explicit zeros kept (as scipy's COO to CSR conversion makes it, where nothing was
        folded).

        Raises:
            MatrixFormatError: the row pointer would be absurd for the entries held, or beyond
                the memory available (:func:`~clspmv.io.assembly.row_pointer_refusal`); it is
                not allocated.
        """
        held = self._own.size + self._mirrored.size
        if self._folded is not None:
            held += self._folded.size
        refusal = assembly.row_pointer_refusal(self.stop - self.start, held)
        if refusal is not None:
            rows = f"{self.header.rows} rows"
            if self.shape[0] != self.header.rows:
                rows += f", of which rows {self.start}:{self.stop} are read"
            raise MatrixFormatError(f"{self.name}: line {self.header.body_line - 1}: the size "
                                    f"line declares {rows}: {refusal}")
        if self._folded is None:
            return assembly.csr(self._own, self._mirrored, self.shape)
        self._fold()
        return assembly.folded_csr(self._folded, self.shape)
