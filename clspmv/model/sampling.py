"""Sampled features of a matrix's gathers from x: the cache lines of x its row blocks read
(:func:`x_locality`), the share of entries near the previous one of their row, the column
spread, and its occupied diagonals (sampled, or exact), for :mod:`.features`.

A few evenly spaced blocks of rows (and the block before each, whose lines are still cached)
stand for the matrix; a row longer than :data:`ROW_SAMPLE_ENTRIES` gives a window of them."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..formats.conversion import occupied_diagonals

LINE_BYTES = 64
"""Bytes of the cache line the gather estimate counts in."""
ROW_BLOCK = 256
"""Rows per block for the distinct-cache-lines-of-x estimate."""
SAMPLE_BLOCKS = 64
"""Most row blocks sampled (evenly spaced) for the gather estimate; all of them when fewer."""
SAMPLE_ENTRIES = 1 << 16
"""Entries the sample should hold: as many blocks are sampled as hold about this many entries,
with the block before each, at the matrix's mean row length (:func:`sample_blocks`). The sample
costs time in proportion to its entries: of every block up to 64, the sample of a matrix of
0.1-1 M entries was most of the matrix, and the selection 10-90 times a conversion to CSR. On
21 matrices of 49 to 4.5 M entries the budget moved the x lines by at most 18 % from those of
up to 64 blocks (median 1 %), every predicted kernel time by at most 3 %, no choice."""
MIN_SAMPLE_BLOCKS = 16
"""Fewest row blocks sampled (all of them when fewer), however long the rows."""

ROW_SAMPLE_ENTRIES = 4096
"""Most entries a sampled row contributes (a contiguous window from its middle, its lines of x
scaled by its length over the window's): a few rows of millions of entries in the sampled
blocks would otherwise make the sample, and the selection, cost as much as the matrix (on a
matrix of 41 M entries with 64 rows of 200 k, 13 M sampled entries and 4.4 s of selection
before, 0.2 s after)."""


def sample_rows(csr: sp.csr_matrix) -> tuple[np.ndarray, ...]:
    """(block, row, column, counted, weight) of the entries of :func:`sample_blocks` evenly
    spaced blocks of :data:`ROW_BLOCK` rows and of the block before each (``counted`` False for
    the entries of a block taken only as the one before: the x lines it leaves in the cache). A
    row longer than :data:`ROW_SAMPLE_ENTRIES` gives the window of that many entries in its
    middle, each of weight length / window (1 for the others)."""
    m = csr.shape[0]
    blocks = -(-m // ROW_BLOCK)
    picked = distinct(np.linspace(0, blocks - 1, min(blocks, sample_blocks(m, csr.nnz))
                                  ).astype(np.int64))
    taken = distinct(np.concatenate([picked, picked[picked > 0] - 1]))
    starts = taken * ROW_BLOCK
    stops = np.minimum(starts + ROW_BLOCK, m)
    sizes = stops - starts
    rows = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    indptr = csr.indptr.astype(np.int64)
    full = indptr[rows + 1] - indptr[rows]
    lengths = np.minimum(full, ROW_SAMPLE_ENTRIES)
    begin = indptr[rows] + (full - lengths) // 2
    first = np.repeat(begin - np.cumsum(lengths) + lengths, lengths)
    where = first + np.arange(int(lengths.sum()))
    counted = np.zeros(blocks, bool)
    counted[picked] = True
    weight = np.repeat(full / np.maximum(lengths, 1), lengths)
    return (np.repeat(rows // ROW_BLOCK, lengths), np.repeat(rows, lengths),
            csr.indices[where].astype(np.int64), np.repeat(counted[rows // ROW_BLOCK], lengths),
            weight)


def sample_blocks(rows: int, entries: int) -> int:
    """Row blocks to sample of a matrix of ``rows`` and ``entries``: those holding about
    :data:`SAMPLE_ENTRIES` with the block before each, between :data:`MIN_SAMPLE_BLOCKS` and
    :data:`SAMPLE_BLOCKS`."""
    pair = 2 * ROW_BLOCK * entries / max(rows, 1)
    return min(SAMPLE_BLOCKS, max(MIN_SAMPLE_BLOCKS, int(SAMPLE_ENTRIES / max(pair, 1.0))))


def member(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """``values`` in ``sorted_set`` (sorted, distinct), by binary search: numpy's hashing
    ``isin`` / ``unique`` are slow on these keys."""
    if sorted_set.size == 0:
        return np.zeros(values.shape, bool)
    at = np.minimum(np.searchsorted(sorted_set, values), sorted_set.size - 1)
    return sorted_set[at] == values


def distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct ``values``."""
    v = np.sort(values)
    return v[np.r_[True, v[1:] != v[:-1]]] if v.size else v


DENSE_KEYS = 16
"""Keys in ``range(size)`` are told apart by a table of ``size`` flags when ``size`` is at most
this many times the keys (a pass over the table costs less than a sort of the keys)."""


def distinct_keys(keys: np.ndarray, size: int) -> np.ndarray:
    """The sorted distinct ``keys`` (integers in ``range(size)``): marked in a table of flags
    when it is small enough (:data:`DENSE_KEYS`), else sorted (:func:`distinct`)."""
    if size > DENSE_KEYS * keys.size:
        return distinct(keys)
    present = np.zeros(size, bool)
    present[keys] = True
    return np.flatnonzero(present)


def block_numbers(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(number, first) for the sorted block indices ``block`` of sampled entries: the blocks
    numbered from 0 in order, consecutive blocks by consecutive numbers and a number left out
    between blocks that are not (the block before of block number k is number k - 1 when it
    was sampled), and whether each entry is the first of its block."""
    first = np.ones(block.size, bool)
    first[1:] = block[1:] != block[:-1]
    heads = block[first]
    step = np.where(np.diff(heads) == 1, 1, 2)
    return np.repeat(np.r_[0, np.cumsum(step)], np.diff(np.r_[np.flatnonzero(first),
                                                                block.size])), first


def x_locality(csr: sp.csr_matrix, line_entries: int, sample: tuple[np.ndarray, ...]
                ) -> tuple[float, float, float, float]:
    """(x lines gathered, summed over row blocks; the scattered ones among them; near fraction;
    mean |col - row|), from the :func:`sample_rows` ``sample`` scaled to the whole matrix. A
    block gathers the distinct lines of x it reads that the block before it did not read (those
    are still in the cache: the rows of a band or a stencil share most of their lines with the
    rows just before them). A gathered line is scattered when the line before it in x is read
    neither by its block nor by the block before: the lines of a band or a stencil's planes
    follow each other (a stream, which hardware prefetches and which the x streamed once
    covers), those of random columns do not (each a separate trip to memory once x outgrows
    the cache: the model's ``far xbytes``). The rows longer than :data:`ROW_SAMPLE_ENTRIES`
    are a stratum of their own (:func:`long_row_lines`): scaled with the others, the one long
    row a sample may hold would stand for as many more as the sample is smaller than the matrix
    (on a matrix of 4 M rows with 16 rows of 400 k entries, 30 times the lines of x there
    are)."""
    if csr.nnz == 0 or csr.shape[0] == 0:
        return 0.0, 0.0, 1.0, 0.0
    block, rows, cols, counted, weight = sample
    if not counted.any():
        return 0.0, 0.0, 1.0, 0.0
    lengths = np.diff(csr.indptr)
    long_entries = int(lengths[lengths > ROW_SAMPLE_ENTRIES].sum())
    unit = weight <= 1
    windowed = not unit.all()  # the sample holds windows of long rows (weights above 1)
    short = counted & unit if windowed else counted
    lines = scattered = 0.0
    if short.any():
        lines_per_block = csr.shape[1] // line_entries + 1
        s_block, s_cols, s_counted = ((block[unit], cols[unit], counted[unit]) if windowed
                                      else (block, cols, counted))
        number, first = block_numbers(s_block)
        keys = distinct_keys(number * lines_per_block + s_cols // line_entries,
                             (int(number[-1]) + 1) * lines_per_block)
        picked = np.zeros(int(number[-1]) + 1, bool)
        picked[number[first][s_counted[first]]] = True
        mine = picked[keys // lines_per_block]
        cached = member(keys - lines_per_block, keys)  # the same line in the block before
        new = mine & ~cached
        follows = member(keys - 1, keys) | member(keys - 1 - lines_per_block, keys)
        scale = (csr.nnz - long_entries) / np.count_nonzero(short)
        lines = float(np.count_nonzero(new)) * scale
        scattered = float(np.count_nonzero(new & ~follows)) * scale
    if long_entries:
        long_lines, long_scattered = long_row_lines(csr, lengths, line_entries)
        lines += long_lines
        scattered += long_scattered
    if not counted.all():
        rows, cols, weight = rows[counted], cols[counted], weight[counted]
    new_row = np.ones(cols.size, bool)
    new_row[1:] = rows[1:] != rows[:-1]
    near = np.ones(cols.size, bool)
    near[1:] = np.abs(np.diff(cols)) < line_entries
    if windowed:
        total_weight = float(weight.sum())
        return (lines, scattered, float(weight[near | new_row].sum()) / total_weight,
                float((weight * np.abs(cols - rows)).sum()) / total_weight)
    # weights of 1: the same sums, counted
    return (lines, scattered, np.count_nonzero(near | new_row) / cols.size,
            float(np.abs(cols - rows).sum()) / cols.size)


LONG_ROW_SAMPLE = 16
"""Long rows (beyond :data:`ROW_SAMPLE_ENTRIES`) whose lines of x are counted, evenly spaced
among them; the others are counted as their mean."""


def long_row_lines(csr: sp.csr_matrix, lengths: np.ndarray, line_entries: int
                   ) -> tuple[float, float]:
    """(lines of x, scattered lines) the rows longer than :data:`ROW_SAMPLE_ENTRIES` gather: of
    up to :data:`LONG_ROW_SAMPLE` of them, the distinct lines of the window of that many entries
    in their middle (scattered: the line before not among them), times their length over the
    window; the rest at the mean per entry."""
    long_rows = np.flatnonzero(lengths > ROW_SAMPLE_ENTRIES)
    picked = long_rows[np.linspace(0, long_rows.size - 1,
                                   min(long_rows.size, LONG_ROW_SAMPLE)).astype(np.int64)]
    picked = distinct(picked)
    total = scattered = 0.0
    for r in picked:
        begin = int(csr.indptr[r]) + (int(lengths[r]) - ROW_SAMPLE_ENTRIES) // 2
        window = distinct(csr.indices[begin:begin + ROW_SAMPLE_ENTRIES] // line_entries)
        total += window.size * int(lengths[r]) / ROW_SAMPLE_ENTRIES
        scattered += (np.count_nonzero(~member(window - 1, window)) * int(lengths[r])
                      / ROW_SAMPLE_ENTRIES)
    scale = float(lengths[long_rows].sum()) / float(lengths[picked].sum())
    return total * scale, scattered * scale


def diagonal_rows(offsets: np.ndarray, rows: int, cols: int) -> int:
    """Rows of a ``rows`` x ``cols`` matrix that the diagonals of ``offsets`` (column - row)
    cross inside it: the slots of those diagonals that DIA's kernel reads (it skips the stretch
    of a diagonal that lies beyond the matrix, padding that costs no memory traffic)."""
    o = np.asarray(offsets, np.int64)
    return int(np.maximum(np.minimum(rows, cols - o) - np.maximum(0, -o), 0).sum())


def sampled_diagonals(csr: sp.csr_matrix, sample: tuple[np.ndarray, ...]
                      ) -> tuple[int, int, bool]:
    """(occupied diagonals of the sampled rows, the rows they cross (:func:`diagonal_rows`),
    whether the sample is the whole matrix): lower bounds, exact for banded and stencil
    matrices; :func:`exact_diagonals` counts them all."""
    if csr.nnz == 0:
        return 0, 0, True
    _, rows, cols, _, _ = sample
    m, n = csr.shape
    seen = distinct_keys(cols - rows + (m - 1), m + n - 1)
    return seen.size, diagonal_rows(seen - (m - 1), m, n), cols.size == csr.nnz


def exact_diagonals(csr: sp.csr_matrix) -> tuple[int, int]:
    """(occupied diagonals of ``csr``, the rows they cross (:func:`diagonal_rows`)): a pass over
    all entries, as DIA's conversion makes."""
    offsets = occupied_diagonals(csr)
    return int(offsets.size), diagonal_rows(offsets, *csr.shape)


def x_lines(csr: sp.csr_matrix, rows: slice | None = None) -> float:
    """:attr:`Features.x_lines` of ``csr`` (or of its block of ``rows``) alone: the estimate of
    :func:`features` without the rest of its work."""
    if rows is not None:
        csr = csr[rows]
    if csr.nnz == 0:
        return 0.0
    return x_locality(csr, max(1, LINE_BYTES // csr.dtype.itemsize), sample_rows(csr))[0]
