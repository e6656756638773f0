"""How the ranks of one node exchange halo values: the setting that chooses the paths, the node's
ranks, and who writes which piece of the values where in the node's shared-memory window
(:mod:`.shared_window` holds the window and its protocol; :mod:`.plan` the messages between
nodes).

Each writer's slot of the window holds, for each reader of the node, in rank order, the values
that reader needs (contiguous in the writer's send vector, landing contiguously in the reader's
receive vector), cut into *pieces* of at most ``chunk`` bytes so that a reader copies piece i out
while the writer copies piece i + 1 in. Pieces are numbered per writer and exchange; the
writer's progress word counts those published (``exchange << PIECE_BITS | pieces``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

EXCHANGES = ("auto", "messages", "window")
"""Values of :data:`EXCHANGE_ENV`: ``auto`` (the window for peers of the same node where one can
be allocated, messages otherwise), ``messages`` (MPI messages to every peer) or ``window`` (the
window for peers of the same node; an error where it cannot be allocated)."""
EXCHANGE_ENV = "CLSPMV_EXCHANGE"
NODE_SPLIT_ENV = "CLSPMV_NODE_SPLIT"
"""For tests: ``k`` cuts every node into nodes of ``k`` consecutive ranks (one machine then acts
as several nodes, whose ranks exchange messages)."""
CHUNK_ENV = "CLSPMV_EXCHANGE_CHUNK"
"""Bytes of one piece of the window's pipeline (default :data:`DEFAULT_CHUNK`; 0: one piece per
peer)."""
DEFAULT_CHUNK = 4 << 20
PIECE_BITS = 24
"""A writer's progress word holds ``exchange << PIECE_BITS | pieces published``."""

Copy = Callable[[np.ndarray, int, int], Any]
"""``copy(host_view, start, stop)``: move values ``start:stop`` of a send (or receive) vector
into (or out of) ``host_view``; returns the OpenCL event of an enqueued copy, or None when the
copy is done on return."""


@dataclass(frozen=True)
class Setting:
    """How the plan exchanges: ``exchange`` (one of :data:`EXCHANGES`), ``node_split`` (the test
    hook :data:`NODE_SPLIT_ENV`, None when unset), ``chunk`` (bytes of a piece, 0: unchunked)."""

    exchange: str
    node_split: int | None
    chunk: int


def read_setting(exchange: str | None = None) -> Setting:
    """The setting from ``exchange`` (or :data:`EXCHANGE_ENV`, default ``auto``) and the other
    variables; ValueError naming the variable for a bad value."""
    value = os.environ.get(EXCHANGE_ENV, "auto") if exchange is None else exchange
    if value not in EXCHANGES:
        raise ValueError(f"the exchange ({EXCHANGE_ENV} or the exchange argument) must be one "
                         f"of {', '.join(map(repr, EXCHANGES))}, got {value!r}")
    split = _integer(NODE_SPLIT_ENV, 1)
    chunk = _integer(CHUNK_ENV, 0)
    return Setting(value, split, DEFAULT_CHUNK if chunk is None else chunk)


def _integer(name: str, least: int) -> int | None:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {text!r}")
    return value


def node_comm(comm: Any, split: int | None) -> Any:
    """The ranks of ``comm`` on this node (ordered as in ``comm``); with ``split`` (the test
    hook), only those of this node's group of ``split`` consecutive ranks of ``comm``."""
    from mpi4py import MPI

    shared = comm.Split_type(MPI.COMM_TYPE_SHARED, key=comm.rank)
    if split is None:
        return shared
    try:
        return shared.Split(comm.rank // split, comm.rank)
    finally:
        shared.Free()


@dataclass(frozen=True)
class Piece:
    """Values ``start:stop`` of this rank's send (or receive) vector, at ``offset`` in the
    writer's slot; published once the writer's piece count reaches ``count``."""

    start: int
    stop: int
    offset: int
    count: int


@dataclass(frozen=True)
class Route:
    """One direction's window traffic of this rank: the pieces it writes (in order), the node
    ranks that read them, and the pieces it reads per writer (node rank)."""

    writes: tuple[Piece, ...]
    readers: tuple[int, ...]
    reads: dict[int, tuple[Piece, ...]]

    @property
    def slot_values(self) -> int:
        """Values this rank writes into a slot."""
        return sum(p.stop - p.start for p in self.writes)


Counts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(send counts, send displacements, receive counts, receive displacements) per rank of comm."""


def plan_routes(comm: Any, node_ranks: dict[int, int], directions: list[Counts],
                itemsize: int, chunk: int) -> list[Route]:
    """The :class:`Route` of each direction for the peers in ``node_ranks`` (rank of ``comm`` ->
    rank of the node); collective over ``comm`` (one ``Alltoall`` tells each reader where its
    values lie in each writer's slot and how the writer cut them)."""
    table = np.zeros((comm.size, 3 * len(directions)), np.int64)
    writes = []
    for d, (send_counts, send_displs, _, _) in enumerate(directions):
        peers = [p for p in sorted(node_ranks) if send_counts[p]]
        per = _piece_values(int(sum(send_counts[p] for p in peers)), itemsize, chunk)
        offset = count = 0
        mine: list[Piece] = []
        for p in peers:
            table[p, 3 * d: 3 * d + 3] = offset, count, per
            first = int(send_displs[p])
            for a, b in _cut(int(send_counts[p]), per):
                count += 1
                mine.append(Piece(first + a, first + b, offset + a, count))
            offset += int(send_counts[p])
        writes.append(mine)
    told = np.empty_like(table)
    comm.Alltoall(table, told)
    routes = []
    for d, (send_counts, _, recv_counts, recv_displs) in enumerate(directions):
        reads = {}
        for p in sorted(node_ranks):
            if not recv_counts[p]:
                continue
            offset, count, per = (int(v) for v in told[p, 3 * d: 3 * d + 3])
            first = int(recv_displs[p])
            reads[node_ranks[p]] = tuple(
                Piece(first + a, first + b, offset + a, count + i + 1)
                for i, (a, b) in enumerate(_cut(int(recv_counts[p]), per)))
        readers = tuple(node_ranks[p] for p in sorted(node_ranks) if send_counts[p])
        routes.append(Route(tuple(writes[d]), readers, reads))
    return routes


def _piece_values(total: int, itemsize: int, chunk: int) -> int:
    """Values per piece: ``chunk`` bytes' worth (all of them for 0), enough that an exchange's
    pieces fit below ``2**PIECE_BITS``."""
    per = max(1, chunk // itemsize) if chunk else max(1, total)
    return max(per, -(-total // ((1 << PIECE_BITS) - 1)))


def _cut(count: int, per: int) -> list[tuple[int, int]]:
    return [(a, min(a + per, count)) for a in range(0, count, per)]
