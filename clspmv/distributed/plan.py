"""The communication pattern of a distributed product, built once with collective calls.

Each rank knows the columns its non-local part reads (its *halo*, sorted global indices). The
plan asks their owners for them: one ``Alltoall`` of counts, one ``Alltoallv`` of the requested
indices. Afterwards every product only moves values. The forward exchange fills the halo
(owners send ``x_local[send_index]``); the reverse exchange of the transposed product sends halo
contributions back to the owners, which add them at ``send_index``.

Each peer is reached by one of two paths (:attr:`ExchangePlan.window_peers`,
:attr:`ExchangePlan.message_peers`):

* peers of the same node: through the node's MPI shared-memory window (:mod:`.shared_window`,
  laid out by :mod:`.node_exchange`), written and read straight from and to the devices;
* the others: persistent point-to-point requests (``Send_init``/``Recv_init``) between the host
  buffers :attr:`ExchangePlan.send_buffer` and :attr:`ExchangePlan.halo_buffer`, each message
  with one of the product's :mod:`.product_stamp` beside it.

Every exchange compares the stamps of the values received with the rank's own before it uses
them, and every wait for a peer gives up after ``CLSPMV_MPI_TIMEOUT`` seconds
(:func:`.collective.timeout`) with a :class:`.collective.DistributedError` naming the peer.

The choice: the ``exchange`` argument, else the environment variable ``CLSPMV_EXCHANGE``:
``auto`` (default: the window for peers of the same node where one can be allocated),
``messages`` or ``window`` (an error where the window cannot be allocated). For tests,
``CLSPMV_NODE_SPLIT=k`` makes each group of ``k`` consecutive ranks a node of its own, so that
one machine exercises both paths. ``CLSPMV_EXCHANGE_CHUNK`` sets the bytes of a piece of the
window's pipeline (default 4 MiB).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import product_stamp
from .collective import Backoff, DistributedError, timeout
from .node_exchange import Copy, Route, node_comm, plan_routes, read_setting, setting_facts
from .partition import owners
from .shared_window import open_window
from .timeline import UNTIMED, Timeline

FORWARD_TAG = 12
REVERSE_TAG = 13
STAMP_TAG_SHIFT = 2
"""A direction's stamps travel with tag ``FORWARD_TAG`` or ``REVERSE_TAG`` plus this."""


@dataclass
class _Direction:
    """The traffic of one direction: values sent from ``send`` (host, per peer at
    ``send_displs``) and received into ``recv``; the message peers' runs of consecutive
    values, their requests (values and stamps) with the peer of each, the stamps received
    (one row per peer in ``stamp_peers``), and the window's route."""

    send: np.ndarray
    recv: np.ndarray
    send_runs: list[tuple[int, int]]
    recv_runs: list[tuple[int, int]]
    route: Route | None
    requests: list = field(default_factory=list)
    request_peers: list[int] = field(default_factory=list)
    stamp_peers: list[int] = field(default_factory=list)
    stamps: np.ndarray = field(default_factory=lambda: np.zeros((0, product_stamp.VALUES)))


class ExchangePlan:
    """Who sends which x entries to whom, with the buffers, requests and window that move them.

    ``halo_columns``: sorted global columns this rank's non-local part reads; ``col_offsets``: the
    column blocks (rank k owns columns ``col_offsets[k]:col_offsets[k + 1]``); ``alloc(n)`` returns
    a host array of ``n`` values (pinned memory for GPUs, see :mod:`.staging`); ``exchange``:
    ``"auto"``, ``"messages"`` or ``"window"`` (None: ``CLSPMV_EXCHANGE``, see the module).
    Collective over ``comm``: every rank must build its plan at the same point.
    """

    def __init__(self, comm: Any, halo_columns: np.ndarray, col_offsets: np.ndarray,
                 alloc: Callable[[int], np.ndarray], exchange: str | None = None) -> None:
        from mpi4py import MPI

        from .collective import agree

        self._MPI = MPI
        rank, size = comm.rank, comm.size
        halo = np.asarray(halo_columns, dtype=np.int64)
        owner = owners(halo, col_offsets)
        if (owner == rank).any():
            raise ValueError("the halo must not contain columns this rank owns")
        self.recv_counts = np.bincount(owner, minlength=size).astype(np.int64)
        self.send_counts = np.zeros(size, np.int64)
        comm.Alltoall(self.recv_counts, self.send_counts)
        self.recv_displs = _displacements(self.recv_counts)
        self.send_displs = _displacements(self.send_counts)
        requested = np.empty(int(self.send_counts.sum()), np.int64)
        comm.Alltoallv([halo, (self.recv_counts, self.recv_displs), MPI.INT64_T],
                       [requested, (self.send_counts, self.send_displs), MPI.INT64_T])
        self.send_index = requested - int(col_offsets[rank])
        """Local x indices to send, peer after peer (length :attr:`send_size`)."""
        n_local = int(col_offsets[rank + 1] - col_offsets[rank])
        if self.send_index.size and (self.send_index.min() < 0 or
                                     self.send_index.max() >= n_local):
            raise ValueError("a rank asked for columns this rank does not own")
        self.send_buffer = alloc(self.send_index.size)
        """Host values sent to the message peers (forward) or received from every peer
        (reverse, before :meth:`scatter_add`)."""
        self.halo_buffer = alloc(halo.size)
        """Host values received from the message peers (forward) or sent to them (reverse)."""
        self.seconds = 0.0
        """Wall seconds of the latest exchange (start to completion)."""
        self._started = 0.0
        self._seq = 0
        """Exchanges started so far (the window's sequence number, alike on every rank)."""
        self._rank = rank
        self._stamp = product_stamp.stamp(0, False, 0.0, 0.0)
        """The stamp of the exchange in progress (sent to the message peers from here)."""
        self._timeout = timeout() or float("inf")
        setting = agree(comm, "reading the exchange setting", lambda: read_setting(exchange),
                        facts=setting_facts)
        self.exchange = setting.exchange
        """``"auto"``, ``"messages"`` or ``"window"``: how the plan was asked to exchange."""
        self._node = self._window = None
        node_ranks: dict[int, int] = {}
        directions = [(self.send_counts, self.send_displs, self.recv_counts, self.recv_displs),
                      (self.recv_counts, self.recv_displs, self.send_counts, self.send_displs)]
        routes: list[Route | None] = [None, None]
        if setting.exchange != "messages":  # the same on every rank: collective calls follow
            self._node = node_comm(comm, setting.node_split)
            try:
                node_ranks = {r: k for k, r in enumerate(self._node.allgather(rank))
                              if r != rank}
                itemsize = self.send_buffer.dtype.itemsize
                planned = plan_routes(comm, node_ranks, directions, itemsize, setting.chunk,
                                      n_local, setting.whole)
                values = max(route.slot_values for route in planned)
                self._window = open_window(comm, self._node, values, self.send_buffer.dtype,
                                           required=setting.exchange == "window",
                                           timeout_s=self._timeout)
            finally:
                if self._window is None:  # no window (or an error): the node's group unused
                    self._node.Free()
                    self._node = None
            if self._window is not None:
                routes = planned
                if getattr(alloc, "pinned", False):  # a GPU: copies at pinned speed
                    self._window.register(alloc.device.context)
        window = set(node_ranks) if self._window is not None else set()
        self.window_peers = np.array(
            sorted(p for p in window if self.send_counts[p] or self.recv_counts[p]), np.int64)
        """Ranks this rank exchanges values with through the node's shared-memory window."""
        self.message_peers = np.setdiff1d(
            np.flatnonzero((self.send_counts > 0) | (self.recv_counts > 0)),
            self.window_peers).astype(np.int64)
        """Ranks this rank exchanges values with through MPI messages."""
        self._directions = (
            self._direction(comm, FORWARD_TAG, self.send_buffer, self.halo_buffer,
                            directions[0], window, routes[0]),
            self._direction(comm, REVERSE_TAG, self.halo_buffer, self.send_buffer,
                            directions[1], window, routes[1]))
        wholes = () if routes[0] is None else routes[0].wholes
        self.whole_size = sum(values for _, _, values in wholes)
        """Values of the whole x slices this rank receives (forward, see :mod:`.node_exchange`),
        one after the other."""
        picked: list[np.ndarray] = []
        self.whole_runs: list[tuple[int, int]] = []
        """(first halo value, values) of each writer whose whole slice this rank receives, in
        the order of :attr:`whole_index`."""
        for p, at, _values in wholes:
            lo, n = int(self.recv_displs[p]), int(self.recv_counts[p])
            picked.append(halo[lo: lo + n] - int(col_offsets[p]) + at)
            self.whole_runs.append((lo, n))
        self.whole_index = np.concatenate(picked) if picked else np.zeros(0, np.int64)
        """Per halo value that comes from a whole slice, in halo order of those: its index in
        the whole slices received (the receiver gathers them, :attr:`whole_runs`)."""
        forward = self._directions[0]
        self.sends_by_index = bool(forward.send_runs) or (
            forward.route is not None and any(not w.whole for w in forward.route.writes))
        """Whether this rank sends values picked by :attr:`send_index` (else only whole x
        slices, or nothing): whether the product gathers them first."""

    # -- facts ------------------------------------------------------------------------------
    @property
    def send_size(self) -> int:
        """Values this rank sends per product."""
        return int(self.send_index.size)

    @property
    def halo_size(self) -> int:
        """Values this rank receives per product."""
        return int(self.halo_buffer.size)

    @property
    def window_copies(self) -> tuple[int, int, int]:
        """(values copied device -> window, values copied window -> device, pieces of the
        direction with more of them) per product A x, as :mod:`.window_model` predicts them;
        (0, 0, 0) without window."""
        route = self._directions[0].route
        if route is None:
            return 0, 0, 0
        reads = [p for pieces in route.reads.values() for p in pieces]
        return (route.slot_values, sum(p.stop - p.start for p in reads),
                max(len(route.writes), len(reads)))

    @property
    def bytes_by_path(self) -> dict[str, tuple[int, int]]:
        """(bytes sent, bytes received) per product A x through each path, ``"window"`` and
        ``"messages"`` (the transposed product's are the same, sent and received swapped)."""
        itemsize = self.send_buffer.dtype.itemsize
        out = {}
        for path, peers in (("window", self.window_peers), ("messages", self.message_peers)):
            out[path] = (int(self.send_counts[peers].sum()) * itemsize,
                         int(self.recv_counts[peers].sum()) * itemsize)
        return out

    @property
    def timeout(self) -> float:
        """Seconds a wait for a peer (its messages, or its values in the window) may take
        before it raises :class:`.collective.DistributedError` (inf: no bound)."""
        return self._timeout

    @timeout.setter
    def timeout(self, seconds: float) -> None:
        self._timeout = float(seconds)
        if self._window is not None:
            self._window.timeout = self._timeout

    # -- construction -------------------------------------------------------------------------
    def _direction(self, comm: Any, tag: int, send: np.ndarray, recv: np.ndarray,
                   counts: tuple[np.ndarray, ...], window: set[int],
                   route: Route | None) -> _Direction:
        """The messages of one direction (persistent requests, receives first so that a matching
        send finds them posted; each message's stamp beside it) for the peers outside
        ``window``."""
        send_counts, send_displs, recv_counts, recv_displs = counts
        by_message = np.array([p not in window for p in range(comm.size)], bool)
        d = _Direction(send, recv, _runs(send_counts, send_displs, by_message),
                       _runs(recv_counts, recv_displs, by_message), route)
        sources = [int(p) for p in np.flatnonzero(recv_counts * by_message)]
        d.stamp_peers = sources
        d.stamps = np.zeros((len(sources), product_stamp.VALUES))
        for row, peer in enumerate(sources):
            lo = int(recv_displs[peer])
            d.requests += [comm.Recv_init(recv[lo: lo + int(recv_counts[peer])], peer, tag),
                           comm.Recv_init(d.stamps[row], peer, tag + STAMP_TAG_SHIFT)]
            d.request_peers += [peer, peer]
        for peer in map(int, np.flatnonzero(send_counts * by_message)):
            lo = int(send_displs[peer])
            d.requests += [comm.Send_init(send[lo: lo + int(send_counts[peer])], peer, tag),
                           comm.Send_init(self._stamp, peer, tag + STAMP_TAG_SHIFT)]
            d.request_peers += [peer, peer]
        return d

    # -- exchanges --------------------------------------------------------------------------
    def start(self, put: Copy | None = None, reverse: bool = False,
              timeline: Timeline | None = None, stamp: np.ndarray | None = None) -> None:
        """Start the forward (x values -> halo) or reverse (halo -> owners) exchange of the
        product ``stamp`` (:mod:`.product_stamp`; None: the exchange's number stands for it).

        ``put(host_view, start, stop)`` fills ``host_view`` with the values ``start:stop`` of
        what this rank sends (forward: ``x_local[send_index]``; reverse: the halo contributions)
        and returns the OpenCL event of its copy, or None when done; it is called for the
        message peers' runs (views of the host send buffer, before the messages start) and for
        the window's pieces (views of the window). None: the values are in the plan's host
        buffer already (:attr:`send_buffer` forward, :attr:`halo_buffer` reverse). Every rank
        starts one exchange per product, in the same order, and completes it with :meth:`wait`.
        The window's copies are only enqueued here: :meth:`wait` publishes each piece once its
        copy completed while it copies the peers' pieces out, so both directions move at once.
        """
        timeline = UNTIMED if timeline is None else timeline
        self._started = time.perf_counter()
        self._seq += 1
        self._stamp[:] = (product_stamp.stamp(self._seq, reverse, 0.0, 0.0) if stamp is None
                          else stamp)
        d = self._directions[reverse]
        if d.requests:
            if put is not None:
                with timeline.span("copy down"):
                    for event in [put(d.send[a:b], a, b, False) for a, b in d.send_runs]:
                        if event is not None:
                            event.wait()
            with timeline.span("messages start"):
                self._MPI.Prequest.Startall(d.requests)
        if d.route is not None and d.route.writes:  # enqueued; published by wait
            self._window.write(self._seq, d.route, put or _from_host(d.send), timeline,
                               self._stamp)

    def wait(self, get: Copy | None = None, reverse: bool = False,
             timeline: Timeline | None = None) -> list:
        """Complete the exchange started by :meth:`start`: ``get(host_view, start, stop)`` moves
        the received values ``start:stop`` (forward: of the halo; reverse: of the contributions,
        at the send buffer's positions) out of ``host_view`` (the window, or the host receive
        buffer for the message peers) and returns the event of its copy or None. None: into the
        plan's host buffer (:attr:`halo_buffer` forward, :attr:`send_buffer` reverse). Returns
        the events of the copies out of the window still running (whoever reads what they
        write waits for them; the window learns they are done at the next exchange); the
        copies of the message peers' values are done on return. Raises
        :class:`.collective.DistributedError` where a peer's stamp differs from this rank's,
        or a peer is later than :attr:`timeout`."""
        timeline = UNTIMED if timeline is None else timeline
        d = self._directions[reverse]
        copying: list = []
        if d.route is not None and (d.route.reads or d.route.writes):
            poll = (lambda: self._MPI.Request.Testall(d.requests)) if d.requests else None
            copying = self._window.complete(self._seq, d.route, get or _to_host(d.recv), poll,
                                            timeline, self._stamp)
        if d.requests:
            with timeline.span("messages wait"):
                self._await_messages(d)
            for peer, theirs in zip(d.stamp_peers, d.stamps, strict=True):
                product_stamp.check(self._stamp, theirs, peer, self._rank)
            if get is not None:
                with timeline.span("copy up"):
                    for event in [get(d.recv[a:b], a, b, False) for a, b in d.recv_runs]:
                        if event is not None:
                            event.wait()
        self.seconds = time.perf_counter() - self._started
        return copying

    def _await_messages(self, d: _Direction) -> None:
        """Complete ``d``'s requests, testing them (MPI progresses them meanwhile, as in
        ``MPI_Waitall``) with yields of the core; :class:`.collective.DistributedError` naming
        the peers still pending after :attr:`timeout` seconds."""
        backoff = Backoff(self._timeout, spin_only=True)
        while not self._MPI.Request.Testall(d.requests):
            if not backoff.pause():
                late = sorted({peer for peer, request in zip(d.request_peers, d.requests,
                                                             strict=True) if not request.Test()})
                raise DistributedError(
                    f"the halo exchange waited {self._timeout:g} s for the MPI messages of "
                    f"rank{'s' if len(late) > 1 else ''} {', '.join(map(str, late))}: every "
                    "product is collective: a rank that skipped one or failed in it leaves the "
                    "others waiting; this matrix cannot exchange any more")

    def scatter_add(self, y_local: np.ndarray) -> None:
        """After a reverse exchange: add the received contributions to ``y_local``."""
        if self.send_index.size:
            y_local += np.bincount(self.send_index, weights=self.send_buffer,
                                   minlength=y_local.size).astype(y_local.dtype)

    def free(self) -> None:
        """Free the persistent requests and the window (collective; the plan cannot exchange
        afterwards)."""
        for d in self._directions:
            for request in d.requests:
                request.Free()
            d.requests.clear()
        if self._window is not None:
            self._window.free()
            self._window = None
        if self._node is not None:
            self._node.Free()
            self._node = None


def _from_host(values: np.ndarray) -> Copy:
    def put(view: np.ndarray, a: int, b: int, whole: bool) -> None:
        _no_whole(whole)
        view[...] = values[a:b]
    return put


def _to_host(values: np.ndarray) -> Copy:
    def get(view: np.ndarray, a: int, b: int, whole: bool) -> None:
        _no_whole(whole)
        values[a:b] = view
    return get


def _no_whole(whole: bool) -> None:
    if whole:
        raise ValueError("the plan's host buffers hold no whole x slices: pass the forward "
                         "exchange copies that move them (put and get)")


def _runs(counts: np.ndarray, displs: np.ndarray, chosen: np.ndarray) -> list[tuple[int, int]]:
    """The ranges of values of the ``chosen`` peers with values, consecutive ones merged."""
    runs: list[tuple[int, int]] = []
    for peer in np.flatnonzero((counts > 0) & chosen):
        a, b = int(displs[peer]), int(displs[peer] + counts[peer])
        if runs and runs[-1][1] == a:
            runs[-1] = (runs[-1][0], b)
        else:
            runs.append((a, b))
    return runs


def _displacements(counts: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
