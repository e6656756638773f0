"""``partition="graph"``: rows assigned to the ranks by a graph partitioner, so that fewer
entries of each row block read x entries of other ranks (less halo) than contiguous blocks do on
matrices whose numbering hides their locality.

The partitioner is METIS through ``pymetis`` (an optional dependency: ``pip install pymetis``;
chosen over KaHIP's ``kahip`` because it is kept by pyopencl's maintainer, has wheels for every
CPython from 3.9 and Linux, macOS and Windows, and takes CSR arrays as they are). Its graph: the
pattern of ``A + A.T`` without the diagonal, each vertex weighted by its row's entries plus one
(what ``"nnz"`` balances).

The library permutes: rows (and, the matrix being square, columns) are renumbered so that each
rank's rows are consecutive (``B = A[p][:, p]``, each part's rows in their original order), and
the permuted matrix is distributed in contiguous blocks as usual. :attr:`DistributedMatrix
.permutation` holds ``p``; :meth:`DistributedMatrix.matvec_global` permutes x in and y out, so
its results are in the user's numbering; a rank's ``x_local`` and ``y_local`` are the entries
``p[row_range]`` of x and y (:attr:`DistributedMatrix.global_rows`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from .collective import agree

GRAPH = "graph"
"""The name of this partition (``DistributedMatrix.from_scipy(partition=...)``)."""


def graph_parts(csr: sp.csr_matrix, parts: int) -> np.ndarray:
    """The part (0..parts-1) of every row of the square ``csr`` by METIS (see the module);
    all zeros for one part or no rows. ValueError for a matrix that is not square; ImportError
    naming the package where pymetis is missing."""
    m, n = csr.shape
    if m != n:
        raise ValueError(f"partition='graph' needs a square matrix (rows and columns numbered "
                         f"alike), got shape {csr.shape}; use partition='nnz' or 'rows'")
    if parts == 1 or m == 0:
        return np.zeros(m, np.int64)
    pymetis = partitioner()
    pattern = sp.csr_matrix((np.ones(csr.nnz, np.int8), csr.indices, csr.indptr), shape=(m, m))
    graph = (pattern + pattern.T).tocsr()
    graph.setdiag(0)
    graph.eliminate_zeros()
    if graph.nnz == 0:  # no edges: METIS has nothing to cut; balance the entries in blocks
        from .partition import row_offsets

        offsets = row_offsets(np.diff(csr.indptr), parts)
        return np.repeat(np.arange(parts), np.diff(offsets)).astype(np.int64)
    weights = (np.diff(csr.indptr) + 1).astype(np.int64)
    adjacency = pymetis.CSRAdjacency(graph.indptr.astype(np.int64),
                                     graph.indices.astype(np.int64))
    result = pymetis.part_graph(parts, adjacency=adjacency, vweights=weights)
    return np.asarray(result[1], np.int64)


def partitioner() -> Any:
    """The ``pymetis`` module; ImportError naming the package and the fix where it is
    missing."""
    try:
        import pymetis
    except ImportError as err:
        raise ImportError("partition='graph' needs the graph partitioner pymetis: pip install "
                          "pymetis (or use partition='nnz')") from err
    return pymetis


def order(membership: np.ndarray, parts: int) -> tuple[np.ndarray, np.ndarray]:
    """(the permutation ``p``: rows of part 0 first, each part in its original order; the row
    offsets of the parts in the permuted numbering)."""
    p = np.argsort(membership, kind="stable").astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(np.bincount(membership, minlength=parts))])
    return p, offsets.astype(np.int64)


def permute(csr: sp.csr_matrix, p: np.ndarray) -> sp.csr_matrix:
    """``csr[p][:, p]`` with sorted column indices (canonical CSR)."""
    out = csr[p][:, p].tocsr()
    out.sort_indices()
    return out


def graph_source(comm: Any, source: Any, root: int | None
                 ) -> tuple[Any, np.ndarray, np.ndarray]:
    """(the permuted source, ``p``, the row offsets of the ranks) for ``partition="graph"``
    (collective): rank 0 (or the root) partitions, every rank learns ``p``; ``source`` as
    :func:`.agreement.check_arguments` left it (a path is refused: the whole matrix is needed
    to partition it)."""
    from .source import is_path

    if is_path(source):
        raise ValueError("partition='graph' needs the matrix in memory (on every rank or on "
                         "the root), not a path: read it first (clspmv.io.read)")
    home = 0 if root is None else root

    def partition() -> np.ndarray | None:
        partitioner()  # its absence, and a matrix not square, raise alike on every rank
        if source is not None and source.shape[0] != source.shape[1]:
            graph_parts(source, comm.size)
        return graph_parts(source, comm.size) if comm.rank == home else None

    found = agree(comm, "partitioning the rows' graph (pymetis)", partition)
    membership = comm.bcast(found, root=home)
    p, offsets = order(membership, comm.size)
    if root is None or comm.rank == root:
        source = agree(comm, "permuting the matrix", lambda: permute(source, p))
    else:
        agree(comm, "permuting the matrix", lambda: None)
    return source, p, offsets
