"""How the ranks of one node exchange halo values: the setting that chooses the paths, the node's
ranks, and who writes which piece of the values where in the node's shared-memory window
(:mod:`.shared_window` holds the window and its protocol; :mod:`.plan` the messages between
nodes).

Each writer's slot of the window holds, for each reader of the node, in rank order, the values
that reader needs (contiguous in the writer's send vector, landing contiguously in the reader's
receive vector), cut into *pieces* of at most ``chunk`` bytes so that a reader copies piece i out
while the writer copies piece i + 1 in. Pieces are numbered per writer and exchange; the
writer's progress word counts those published (``exchange << PIECE_BITS | pieces``).

*Whole slices* (forward direction): a reader that needs at least the share
:data:`WHOLE_ENV` (default :data:`DEFAULT_WHOLE`) of a writer's x slice gets the whole slice
instead, which the writer puts first in its slot, once for all such readers, copied from x as it
is (no gather). Random matrices, whose every rank needs ~92 % of every other's slice at 4 ranks,
so copy their slice down once instead of once per peer; the reader copies the whole slice up and
picks its values on the device (:attr:`.plan.ExchangePlan.whole_index`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SettingError

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
WHOLE_ENV = "CLSPMV_EXCHANGE_WHOLE"
"""The share of a writer's x slice (0 to 1) from which a reader of its node gets the whole slice;
above 1: never."""
DEFAULT_WHOLE = 0.6
PIECE_BITS = 24
"""A writer's progress word holds ``exchange << PIECE_BITS | pieces published``."""

Copy = Callable[[np.ndarray, int, int, bool], Any]
"""``copy(host_view, start, stop, whole)``: move values ``start:stop`` of a send (or receive)
vector into (or out of) ``host_view``; with ``whole``, values ``start:stop`` of this rank's x
slice (or of the whole slices it receives, one after the other) instead; returns the OpenCL
event of an enqueued copy, or None when the copy is done on return."""


@dataclass(frozen=True)
class Setting:
    """How the plan exchanges: ``exchange`` (one of :data:`EXCHANGES`), ``node_split`` (the test
    hook :data:`NODE_SPLIT_ENV`, None when unset), ``chunk`` (bytes of a piece, 0: unchunked),
    ``whole`` (the share of :data:`WHOLE_ENV`)."""

    exchange: str
    node_split: int | None
    chunk: int
    whole: float = DEFAULT_WHOLE


def read_setting(exchange: str | None = None) -> Setting:
    """The setting from ``exchange`` (or :data:`EXCHANGE_ENV`, default ``auto``) and the other
    variables; :class:`clspmv.errors.SettingError` (a ValueError) naming the variable for a bad
    value."""
    value = os.environ.get(EXCHANGE_ENV, "auto") if exchange is None else exchange
    if value not in EXCHANGES:
        raise SettingError(f"the exchange ({EXCHANGE_ENV} or the exchange argument) must be one "
                           f"of {', '.join(map(repr, EXCHANGES))}, got {value!r}; pass one of "
                           f"them, or unset {EXCHANGE_ENV} for auto")
    split = _integer(NODE_SPLIT_ENV, 1)
    chunk = _integer(CHUNK_ENV, 0)
    text = os.environ.get(WHOLE_ENV, "").strip()
    try:
        whole = float(text) if text else DEFAULT_WHOLE
    except ValueError:
        whole = -1.0
    if not whole >= 0:
        raise SettingError(f"{WHOLE_ENV} must be a share >= 0 of a rank's x slice (above 1: "
                           f"never whole slices), got {text!r}; set one, or unset it for "
                           f"{DEFAULT_WHOLE}")
    return Setting(value, split, DEFAULT_CHUNK if chunk is None else chunk, whole)


def setting_facts(setting: Setting) -> dict[str, object]:
    """What every rank of a plan must share about its setting (for
    :func:`.collective.agree`), named by where it comes from."""
    return {f"the exchange ({EXCHANGE_ENV} or the exchange argument)": setting.exchange,
            NODE_SPLIT_ENV: setting.node_split, CHUNK_ENV: setting.chunk,
            WHOLE_ENV: setting.whole}


def _integer(name: str, least: int) -> int | None:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        value = int(text)
    except ValueError:
        value = least - 1
    if value < least:
        raise SettingError(f"{name} must be an integer >= {least}, got {text!r}; set one, or "
                           "unset it for the default")
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
    """Values ``start:stop`` of this rank's send (or receive) vector (``whole``: of its x slice,
    or of the whole slices it receives), at ``offset`` in the writer's slot; published once the
    writer's piece count reaches ``count``."""

    start: int
    stop: int
    offset: int
    count: int
    whole: bool = False


@dataclass(frozen=True)
class Route:
    """One direction's window traffic of this rank: the pieces it writes (in order), the node
    ranks that read them, the pieces it reads per writer (node rank), and the writers whose
    whole slice it reads (``(rank of comm, first value in the whole slices received, values)``,
    in rank order)."""

    writes: tuple[Piece, ...]
    readers: tuple[int, ...]
    reads: dict[int, tuple[Piece, ...]]
    wholes: tuple[tuple[int, int, int], ...] = ()

    @property
    def slot_values(self) -> int:
        """Values this rank writes into a slot."""
        return sum(p.stop - p.start for p in self.writes)


Counts = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]
"""(send counts, send displacements, receive counts, receive displacements) per rank of comm."""


def plan_routes(comm: Any, node_ranks: dict[int, int], directions: list[Counts],
                itemsize: int, chunk: int, slice_values: int = 0, whole: float = 2.0
                ) -> list[Route]:
    """The :class:`Route` of each direction for the peers in ``node_ranks`` (rank of ``comm`` ->
    rank of the node); collective over ``comm`` (one ``Alltoall`` tells each reader where its
    values lie in each writer's slot, how the writer cut them and whether it reads the whole
    slice). ``slice_values``: this rank's x slice; readers that ask for at least ``whole`` of
    it get all of it (the first direction only: the forward exchange)."""
    fields = 4
    table = np.zeros((comm.size, fields * len(directions)), np.int64)
    writes = []
    for d, (send_counts, send_displs, _, _) in enumerate(directions):
        peers = [p for p in sorted(node_ranks) if send_counts[p]]
        wholes = [p for p in peers if d == 0 and takes_whole(send_counts[p], slice_values, whole)]
        parts = [p for p in peers if p not in wholes]
        total = int(sum(send_counts[p] for p in parts)) + (slice_values if wholes else 0)
        per = piece_values(total, itemsize, chunk)
        offset = count = 0
        mine: list[Piece] = []
        if wholes:
            for a, b in _cut(slice_values, per):
                count += 1
                mine.append(Piece(a, b, a, count, whole=True))
            table[wholes, fields * d: fields * d + fields] = 0, 0, per, slice_values
            offset = slice_values
        for p in parts:
            table[p, fields * d: fields * d + fields] = offset, count, per, 0
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
        received: list[tuple[int, int, int]] = []
        at = 0
        for p in sorted(node_ranks):
            if not recv_counts[p]:
                continue
            offset, count, per, values = (int(v) for v in told[p, fields * d: fields * (d + 1)])
            first, n = (at, values) if values else (int(recv_displs[p]), int(recv_counts[p]))
            reads[node_ranks[p]] = tuple(
                Piece(first + a, first + b, offset + a, count + i + 1, whole=bool(values))
                for i, (a, b) in enumerate(_cut(n, per)))
            if values:
                received.append((p, at, values))
                at += values
        readers = tuple(node_ranks[p] for p in sorted(node_ranks) if send_counts[p])
        routes.append(Route(tuple(writes[d]), readers, reads, tuple(received)))
    return routes


def takes_whole(values: Any, slice_values: Any, whole: float) -> Any:
    """Whether a reader that needs ``values`` of a writer's x slice of ``slice_values`` gets the
    whole slice (it needs some, and at least the share ``whole`` of it); elementwise on numpy
    arrays (the model, :mod:`.window_model`, asks for every pair of ranks at once)."""
    return (values > 0) & (slice_values > 0) & (values >= whole * slice_values)


def piece_values(total: int, itemsize: int, chunk: int) -> int:
    """Values per piece of a writer that puts ``total`` values into its slot: ``chunk`` bytes'
    worth (all of them for 0), enough that an exchange's pieces fit below ``2**PIECE_BITS``."""
    per = max(1, chunk // itemsize) if chunk else max(1, total)
    return max(per, -(-total // ((1 << PIECE_BITS) - 1)))




def _cut(count: int, per: int) -> list[tuple[int, int]]:
    return [(a, min(a + per, count)) for a in range(0, count, per)]
