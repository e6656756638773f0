"""Each rank's row block of the matrix, from one of three sources: the whole matrix on every
rank, the whole matrix on one root rank (scattered from there), or a Matrix Market file each
rank reads only its own rows of (:func:`clspmv.io.read_rows`).

Every step that can fail on one rank runs under :func:`.collective.agree`, so the others raise too;
the ranks reading a file also agree on the shape in its header (the same path may name different
files on different nodes).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from .. import io
from ..matrix import canonical_csr
from .collective import agree
from .partition import balanced_offsets, check_offsets, non_local_span, row_offsets


@dataclass
class Block:
    """This rank's rows ``offsets[rank]:offsets[rank + 1]`` of an ``shape`` matrix, as CSR."""

    shape: tuple[int, int]
    offsets: np.ndarray
    rows: sp.csr_matrix


Weigh = Callable[[sp.csr_matrix], np.ndarray]
"""Weights of the rows of a row block (e.g. :func:`.predicted.row_weights`): what
``partition="time"`` balances."""


def is_path(A: object) -> bool:
    """True where ``A`` is the path of a Matrix Market file."""
    return isinstance(A, (str, os.PathLike))


def row_block(comm: Any, A: object, dtype: object, partition: object, offsets: object,
              root: int | None, weigh: Weigh | None = None) -> Block:
    """This rank's :class:`Block` (collective over ``comm``), from ``A`` as
    :func:`.agreement.check_arguments` left it: the canonical CSR matrix on every rank, the
    path, or the matrix on the ``root`` rank (None on the others). ``weigh``: rows are balanced
    by its weights instead of ``partition``, weighed in equal shares of the rows (one per rank;
    all of them on the ``root`` where there is one), so that every source gives the same
    blocks."""
    if weigh is not None and offsets is None:
        partition = weigh
    if is_path(A):
        return _from_file(comm, os.fspath(A), dtype, partition, offsets)
    if root is None:
        csr = A
        if callable(partition):
            partition = _shared_weights(comm, partition, lambda lo, hi: csr[lo:hi], csr.shape[0])
        o = agree(comm, "partitioning the rows",
                  lambda: _offsets(np.diff(csr.indptr), comm.size, partition, offsets))
        return Block(csr.shape, o, csr[int(o[comm.rank]): int(o[comm.rank + 1])])

    def prepare() -> tuple:
        if comm.rank != root:
            return None
        csr = canonical_csr(A, dtype)
        weights = partition
        if callable(partition):  # the shares the ranks weigh without a root, one by one
            share = balanced_offsets(np.ones(csr.shape[0]), comm.size)
            weights = np.concatenate([partition(csr[int(a): int(b)])
                                      for a, b in zip(share[:-1], share[1:], strict=True)])
        o = _offsets(np.diff(csr.indptr), comm.size, weights, offsets)
        return csr, o

    prepared = agree(comm, "converting the matrix on the root rank", prepare)
    blocks = None
    head = None
    if comm.rank == root:
        csr, o = prepared
        blocks = [csr[int(o[k]): int(o[k + 1])] for k in range(comm.size)]
        head = (csr.shape, o)
    shape, o = comm.bcast(head, root=root)
    return Block(shape, o, comm.scatter(blocks, root=root))


def _shared_weights(comm: Any, weigh: Weigh, rows: Callable[[int, int], sp.csr_matrix],
                    m: int) -> np.ndarray:
    """The weights of all ``m`` rows: each rank weighs an equal share (``rows(lo, hi)``), all
    share them (one ``allgather``)."""
    share = balanced_offsets(np.ones(m), comm.size)
    lo, hi = int(share[comm.rank]), int(share[comm.rank + 1])
    mine = agree(comm, f"weighing rows {lo}:{hi}", lambda: weigh(rows(lo, hi)))
    return np.concatenate(comm.allgather(mine))


def _offsets(row_nnz: np.ndarray, parts: int, partition: object, offsets: object) -> np.ndarray:
    if offsets is not None:
        return check_offsets(offsets, row_nnz.size, parts)
    return row_offsets(row_nnz, parts, partition)


def _from_file(comm: Any, path: str, dtype: object, partition: object,
               offsets: object) -> Block:
    """Rows read by each rank from the file; ``"nnz"`` needs the row lengths first: each rank
    counts those of an equal share of the rows, and all share them (one ``allgather``)."""
    def header() -> tuple[int, int]:
        return io.read_header(path).shape

    shape = agree(comm, f"reading the header of {path}", header,
                  facts=lambda shape: {"shape": shape})
    m = shape[0]
    row_nnz = np.zeros(m, np.int64)
    if offsets is None and callable(partition):
        partition = _shared_weights(comm, partition, lambda lo, hi: canonical_csr(
            io.read_rows(path, lo, hi), dtype), m)
    elif offsets is None and isinstance(partition, str) and partition == "nnz":
        share = balanced_offsets(np.ones(m), comm.size)
        lo, hi = int(share[comm.rank]), int(share[comm.rank + 1])
        counts = agree(comm, f"reading rows {lo}:{hi} of {path}",
                       lambda: np.diff(io.read_rows(path, lo, hi).indptr))
        row_nnz = np.concatenate(comm.allgather(counts))
    o = agree(comm, "partitioning the rows",
              lambda: _offsets(row_nnz, comm.size, partition, offsets))
    lo, hi = int(o[comm.rank]), int(o[comm.rank + 1])
    rows = agree(comm, f"reading rows {lo}:{hi} of {path}",
                 lambda: canonical_csr(io.read_rows(path, lo, hi), dtype))
    return Block(shape, o, rows)


def split_columns(rows: sp.csr_matrix, lo: int, hi: int
                  ) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray]:
    """(local part: columns ``lo:hi`` renumbered from 0; non-local part: the other columns
    renumbered 0.. in the order of the sorted halo; the halo: those columns' global indices)."""
    m = rows.shape[0]
    cols = rows.indices.astype(np.int64)
    row_of = np.repeat(np.arange(m), np.diff(rows.indptr))
    mine = (cols >= lo) & (cols < hi)
    halo = np.unique(cols[~mine])

    def part(keep: np.ndarray, new_cols: np.ndarray, n: int) -> sp.csr_matrix:
        indptr = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=m))])
        return sp.csr_matrix((rows.data[keep], new_cols.astype(np.int32),
                              indptr.astype(np.int32)), shape=(m, n))

    local = part(mine, cols[mine] - lo, hi - lo)
    non_local = part(~mine, np.searchsorted(halo, cols[~mine]), halo.size)
    return local, non_local, halo


def split_block(rows: sp.csr_matrix, lo: int, hi: int
                ) -> tuple[sp.csr_matrix, sp.csr_matrix, np.ndarray, np.ndarray]:
    """:func:`split_columns`, with the non-local part cut down to the rows it stores: (local
    part, non-local part, halo, the block's rows that the non-local part's rows are: a range
    around the rows with non-local entries where :func:`.partition.non_local_span` takes one,
    else those rows)."""
    local, non_local, halo = split_columns(rows, lo, hi)
    nl_rows = np.flatnonzero(np.diff(non_local.indptr))
    span = non_local_span(nl_rows)
    if span is not None:
        nl_rows = np.arange(*span)
    if nl_rows.size < non_local.shape[0]:
        non_local = non_local[nl_rows]
    return local, non_local, halo, nl_rows
