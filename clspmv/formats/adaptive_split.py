"""csr-adaptive's partition with rows split at tile boundaries (``split_rows=True``).

The entries are cut into tiles of ``CAP`` consecutive entries whatever the rows, one work-group
each, so every tile but the last is full (the greedy blocks of :func:`.csr_adaptive.block_starts`
keep rows whole and were 42-45 % full on power-law and R-MAT matrices). A tile that holds
entries of one row only is a chunk (its sum in registers and a tree, as a long row's chunk); the
others are blocks (products staged in local memory, each row summed there). A row that crosses
a tile boundary is a split row: each tile it touches writes its part of the row's sum to
``partial`` (a piece), and a second kernel adds each split row's pieces in order and stores y
(no atomics, the same result on every run).
"""

from __future__ import annotations

import numpy as np

from .base import INDEX_DTYPE
from .conversion import positions_in_runs

SHORT_SPLIT = 32
"""Split rows of at most this many pieces are combined one work-item each; longer ones one
work-group each (a tree)."""


def split_partition(row_ptr: np.ndarray, cap: int) -> dict[str, np.ndarray]:
    """Tiles of ``cap`` entries of the CSR rows of ``row_ptr`` (see the module docstring).

    Returns int32 arrays: ``blocks`` (first row, end row, first entry, end entry, head piece,
    tail piece of each block tile, interleaved; a piece of -1: that row is not split there),
    ``chunks`` (first entry, end entry, piece of each chunk tile), ``long_rows``/``long_ptr``
    (split rows of more than :data:`SHORT_SPLIT` pieces; row l's pieces are ``long_ptr[l] ..
    long_ptr[l+1]-1``), ``split_rows``/``split_ptr`` (the others, likewise); and for the lanes
    ``clipped`` (the entries of each block's rows within the block, block after block) and
    ``block_counts`` (rows per block); ``pieces`` (int): the size of ``partial``.
    """
    row_ptr = np.asarray(row_ptr, np.int64)
    m = row_ptr.size - 1
    nnz = int(row_ptr[-1])
    tiles = max(1, -(-nnz // cap)) if m else 0
    t = np.arange(tiles, dtype=np.int64)
    start = t * cap
    end = np.minimum(start + cap, nnz)
    starts = row_ptr[:-1]
    begun = np.searchsorted(starts, start, "left")  # first row starting in the tile (or later)
    stop = np.searchsorted(starts, start + cap, "left")  # rows starting before the next tile
    if tiles:
        stop[-1] = m  # the last tile also takes the empty rows at the end
    head = (begun > 0) & (row_ptr[np.minimum(begun, m)] > start)
    first = np.where(head, begun - 1, begun)
    # split rows: nonempty rows whose first and last entries lie in different tiles; their
    # pieces numbered row after row, the rows of more than SHORT_SPLIT pieces first
    lengths = np.diff(row_ptr)
    tf, tl = row_ptr[:-1] // cap, (row_ptr[1:] - 1) // cap
    split = (lengths > 0) & (tl > tf)
    rows_split = np.flatnonzero(split)
    long = (tl - tf + 1)[rows_split] > SHORT_SPLIT
    order = np.concatenate([rows_split[long], rows_split[~long]])
    piece_ptr = np.zeros(order.size + 1, np.int64)
    np.cumsum((tl - tf + 1)[order], out=piece_ptr[1:])
    index = np.full(m, -1, np.int64)  # position of each split row in order
    index[order] = np.arange(order.size)
    n_long = int(long.sum())

    def piece(rows: np.ndarray, tile: np.ndarray) -> np.ndarray:
        return piece_ptr[index[rows]] + tile - tf[rows]

    last = stop - 1
    single = (stop - first == 1) & split[np.minimum(first, m - 1)]
    head_piece = np.where(head, piece(np.minimum(first, m - 1), t), -1)
    tail = (last >= first) & (row_ptr[np.minimum(last + 1, m)] > end) & ~(head & (last == first))
    tail_piece = np.where(tail, piece(np.maximum(last, 0), t), -1)
    b = ~single
    blocks = np.stack([first[b], stop[b], start[b], end[b], head_piece[b], tail_piece[b]], axis=1)
    c = ~b
    chunks = np.stack([start[c], end[c], piece(first[c], t[c])], axis=1)
    # each block's rows' entries within the block (clipped at the tile's ends)
    counts = stop[b] - first[b]
    rows = np.repeat(first[b], counts) + positions_in_runs(counts)
    clipped = (np.minimum(row_ptr[rows + 1], np.repeat(end[b], counts))
               - np.maximum(row_ptr[rows], np.repeat(start[b], counts)))
    return {"blocks": blocks.ravel().astype(INDEX_DTYPE),
            "chunks": chunks.ravel().astype(INDEX_DTYPE),
            "clipped": clipped, "block_counts": counts,
            "long_rows": order[:n_long].astype(INDEX_DTYPE),
            "long_ptr": piece_ptr[:n_long + 1].astype(INDEX_DTYPE),
            "split_rows": order[n_long:].astype(INDEX_DTYPE),
            "split_ptr": piece_ptr[n_long:].astype(INDEX_DTYPE),
            "pieces": int(piece_ptr[-1])}
