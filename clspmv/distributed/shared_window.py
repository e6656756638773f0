"""The node's MPI shared-memory window and the protocol of the halo exchange through it.

The ranks of a node (``comm.Split_type(MPI.COMM_TYPE_SHARED)``) allocate one window
(``MPI.Win.Allocate_shared``): host memory that every rank of the node maps
(``mmap(MAP_SHARED)``), which OpenCL drivers copy to and from at pinned-memory speed (NVIDIA's on
an H100 node: 53 GB/s, against 3.6-4.3 GB/s for MPI's own shared-memory transport). A *writer*
copies the values its peers need from its device straight into its own segment; each *reader*
copies its values from the writer's segment straight to its device. No value passes through MPI.

Segment of each rank: ``flags | slot 0 | slot 1``. Flags are int64, one per 128 bytes (no two in
a cache line): ``progress`` (written by the segment's rank alone) and ``consumed[j]`` for every
rank j of the node (written by j alone), then per slot the :mod:`.product_stamp` of the product
whose values it holds (written by the segment's rank). A slot holds what the rank writes in one
exchange, in the pieces :func:`.node_exchange.plan_routes` cut.

Protocol of exchange number ``s`` (every rank numbers its exchanges alike: products are
collective, and each starts exactly one exchange):

* writer k: slot ``s % 2``; wait until every reader of the exchange s' that last used the slot
  has ``consumed[j] >= s'``; store its product's stamp beside the slot; then per piece i: copy it
  in, wait for the copy to complete, ``Win.Sync``, ``progress = s << 24 | i + 1``.
* reader j, for each writer k and each of its pieces i: wait for ``progress_k >= s << 24 | i + 1``,
  ``Win.Sync``, compare k's stamp with its own (first piece; a difference raises), copy the
  piece out; once its copies from k completed, ``Win.Sync``,
  ``consumed_k[j] = s``. The copies out are only enqueued (the device's kernels wait for them,
  not the host): j learns that they completed, and tells k, when it begins its next exchange.

A rank is writer and reader at once: it enqueues all its copies in (:meth:`NodeWindow.write`,
one queue), then one loop (:meth:`NodeWindow.complete`) publishes each piece whose copy has
completed and copies out, on another queue, each piece its writers have published, so that
copies in and out move at once (both directions of the bus) instead of one after the other.

Why this is correct: a reader copies a piece only after the writer published it, which it did
after its copy in completed (and a later exchange's larger ``progress`` implies that all of
``s`` was written); the slot still holds exchange ``s``: the writer puts exchange ``s + 2``
there only after ``consumed[j] >= s``, which j stores after its copies out completed, and
exchange ``s + 1`` goes to the other slot. No wait is circular: j stores ``consumed[j] = s`` at
the beginning of exchange ``s + 1``, before it waits for anything of it. Every flag has a single
writer, and is an aligned 8-byte word (loads and stores of it are atomic); ``Win.Sync`` (a
memory barrier in MPICH and Open MPI, inside the one passive-target epoch ``Lock_all`` opens)
orders the accesses to values and flags. Nobody waits for a rank it does not exchange with: no
barrier per product, and a writer waits only for a reader two exchanges behind. Every wait spins
for :data:`.collective.SPIN_SECONDS` (yielding its core), then sleeps with a growing pause
(from 20 us to :data:`.collective.LONGEST_SLEEP`: :class:`.collective.Backoff`), and gives up
after ``timeout`` seconds with a :class:`.collective.DistributedError` naming the peer.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from ..errors import ClspmvWarning
from . import product_stamp
from .collective import Backoff, DistributedError, agree
from .node_exchange import EXCHANGE_ENV, PIECE_BITS, Copy, Piece, Route
from .timeline import Timeline

SLOTS = 2
IN_FLIGHT = 3
"""Copies into the window a writer keeps enqueued at once; it enqueues the next as one completes
and is published: enqueueing every piece first (an H200's host: 36 µs each) left the first one
unpublished, and the readers idle, for 0.4-0.6 ms of 10-20 pieces."""
FLAG_STRIDE = 16
"""int64 per flag: 128 bytes, so that no two flags share a cache line (nor its pair)."""
PAGE = 4096
MADV_POPULATE_WRITE = 23
"""Linux (5.14 and later): back the pages now, failing with an error where a SIGBUS would come."""


def open_window(comm: Any, node: Any, slot_values: int, dtype: np.dtype,
                required: bool, timeout_s: float) -> NodeWindow | None:
    """The node's window with slots of ``slot_values`` values for this rank, or None where no
    rank of the node writes any or (``required`` false) where it cannot be allocated, with a
    warning on the node's first rank; collective over ``comm``. Where ``required`` and the
    allocation fails on any rank of a node, every rank raises (:class:`DistributedError`).
    Its waits give up after ``timeout_s`` seconds (:attr:`NodeWindow.timeout`)."""
    from mpi4py import MPI

    dtype = np.dtype(dtype)
    flag_bytes = _round_up(FLAG_STRIDE * 8 * (1 + node.size + SLOTS), PAGE)
    nbytes = flag_bytes + SLOTS * _round_up(slot_values * dtype.itemsize, PAGE)

    def step() -> NodeWindow | None:
        if not node.allreduce(slot_values > 0, op=MPI.LOR):
            return None
        win = error = None
        try:
            win = MPI.Win.Allocate_shared(nbytes, 1, comm=node)
            prefault(_segment(win, node.rank))
        except (MPI.Exception, OSError) as exc:
            error = f"rank {comm.rank} ({nbytes} bytes): {type(exc).__name__}: {exc}"
        outcomes = node.allgather((win is not None, error))
        failed = [e for _, e in outcomes if e is not None]
        if not failed:
            return NodeWindow(node, win, dtype, flag_bytes, node.allgather(comm.rank),
                              timeout_s)
        if all(allocated for allocated, _ in outcomes):
            win.Free()
        why = ("the shared-memory window of the halo exchange could not be allocated: "
               + "; ".join(failed))
        if required:
            raise DistributedError(f"{why}; is the shared-memory file system (/dev/shm) large "
                                   f"enough? Or set {EXCHANGE_ENV}=messages or auto")
        if node.rank == 0:
            warnings.warn(f"{why}; ranks of this node exchange MPI messages instead",
                          ClspmvWarning, stacklevel=5)
        return None

    return agree(comm, "opening the shared-memory window of the halo exchange", step)


def prefault(memory: np.ndarray) -> None:
    """Back every page of ``memory`` now (``MADV_POPULATE_WRITE``) so that a shared-memory file
    system too small for it fails here with OSError, not later with a SIGBUS at first touch;
    where the kernel lacks it, the pages are written once (the best other check there is)."""
    if not memory.size:
        return
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        if libc.madvise(memory.ctypes.data, memory.nbytes, MADV_POPULATE_WRITE) == 0:
            return
        code = ctypes.get_errno()
        if code != errno.EINVAL:  # EINVAL: a kernel before 5.14
            raise OSError(code, f"cannot back {memory.nbytes} bytes of shared memory: "
                                f"{os.strerror(code)}")
    memory.fill(0)


def _segment(win: Any, rank: int) -> np.ndarray:
    buffer, _unit = win.Shared_query(rank)
    return np.frombuffer(buffer, np.uint8)


def _round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


class NodeWindow:
    """The window of one node's ranks and the protocol of the module (build it with
    :func:`open_window`). ``ranks[k]``: the rank in the plan's communicator of node rank k, for
    error messages. Waits give up after :attr:`timeout` seconds."""

    def __init__(self, node: Any, win: Any, dtype: np.dtype, flag_bytes: int,
                 ranks: list[int], timeout_s: float) -> None:
        from mpi4py import MPI

        self.win = win
        self.me = node.rank
        self.ranks = ranks
        self.timeout = timeout_s
        """Seconds a wait for a peer may take before it raises :class:`DistributedError`: the
        plan's (:attr:`clspmv.distributed.plan.ExchangePlan.timeout`, which keeps them equal)."""
        self._flags, self._stamps, self._slots = [], [], []
        self._registered: list[Any] = []
        """OpenCL buffers over the slots (:meth:`register`), released before the window."""
        for k in range(node.size):
            segment = _segment(win, k)
            slot_bytes = (segment.size - flag_bytes) // SLOTS // PAGE * PAGE  # as allocated
            self._flags.append(segment[:flag_bytes].view(np.int64))
            self._stamps.append([segment[:flag_bytes].view(np.float64)[
                _stamp_at(node.size, i): _stamp_at(node.size, i) + product_stamp.VALUES]
                for i in range(SLOTS)])
            self._slots.append([segment[flag_bytes + i * slot_bytes:
                                        flag_bytes + (i + 1) * slot_bytes].view(dtype)
                                for i in range(SLOTS)])
        self._flags[self.me][:] = 0
        self._last_write: list[tuple[int, tuple[int, ...]] | None] = [None] * SLOTS
        """Per slot: (exchange, readers) of its latest content."""
        self._pending: list[tuple[int, Any]] = []
        """The pieces :meth:`write` copied in and :meth:`complete` has not published yet:
        (progress word, the event of the copy or None), in order."""
        self._unconsumed: list[tuple[int, dict[int, list]]] = []
        """Exchanges whose copies out were enqueued and not yet reported consumed: (exchange,
        per writer the events of its copies), settled at the beginning of the next exchange
        (:meth:`_settle`)."""
        self._unwritten: list[Callable[[], tuple[int, Any]]] = []
        """The pieces of the exchange in progress not copied in yet (:data:`IN_FLIGHT`): each a
        call that enqueues its copy and returns (progress word, event or None), in order."""
        node.Barrier()  # every flag zeroed before anyone reads one
        win.Lock_all(MPI.MODE_NOCHECK)

    def write(self, seq: int, route: Route, put: Copy, timeline: Timeline,
              stamp: np.ndarray) -> None:
        """Writer side of exchange ``seq`` of the product ``stamp``, started: every piece of
        ``route`` copied in (copies done on return published at once, the others enqueued and
        published by :meth:`complete` as they finish, without waiting here)."""
        self._settle(timeline)
        slot = seq % SLOTS
        last = self._last_write[slot]
        if last is not None:
            used, readers = last
            with timeline.span("window wait consumed"):
                for j in readers:
                    self._wait(lambda j=j: self._flags[self.me][_consumed(j)] >= used, j,
                               f"to finish reading exchange {used}")
            self.win.Sync()
        area = self._slots[self.me][slot]
        base = seq << PIECE_BITS
        self._stamps[self.me][slot][:] = stamp  # ordered before the pieces by _publish's Sync
        self._pending.clear()
        self._unwritten = [partial(_copy_in, put, area, piece, base) for piece in route.writes]
        with timeline.span("window copy in"):
            self._write_more(timeline)
        self._last_write[slot] = (seq, route.readers)

    def _write_more(self, timeline: Timeline) -> bool:
        """Copy pieces in while fewer than :data:`IN_FLIGHT` copies are in flight (copies done on
        return published at once); True when one was enqueued or published."""
        moved = False
        while self._unwritten and len(self._pending) < IN_FLIGHT:
            progress, event = self._unwritten.pop(0)()
            moved = True
            if event is None and not self._pending:
                self._publish(progress, timeline)
            else:
                self._pending.append((progress, event))
        return moved

    def _write_all(self, timeline: Timeline) -> None:
        """Copy in and publish every piece of the exchange left (blocking)."""
        while self._pending or self._unwritten:
            self._publish_copied(timeline, block=True)
            self._write_more(timeline)

    def _publish(self, progress: int, timeline: Timeline) -> None:
        self.win.Sync()
        self._flags[self.me][0] = progress
        timeline.mark("window piece published")

    def _publish_copied(self, timeline: Timeline, block: bool = False) -> bool:
        """Publish the pieces of :meth:`write` whose copies completed, in order (``block``:
        waiting for the first one); True when one was published."""
        moved = False
        while self._pending:
            progress, event = self._pending[0]
            if event is not None and not _complete(event):
                if not block:
                    break
                event.wait()
            self._pending.pop(0)
            self._publish(progress, timeline)
            moved = True
        return moved

    def complete(self, seq: int, route: Route, get: Copy, poll: Callable[[], object] | None,
                 timeline: Timeline, stamp: np.ndarray) -> list:
        """Complete exchange ``seq`` of the product ``stamp`` on this rank, both sides
        interleaved: publish each piece :meth:`write` copied in as soon as its copy completed,
        and copy each piece of ``route`` out as soon as its writer published it (so copies in
        and out run at once, on two queues; a writer whose stamp differs raises
        :class:`DistributedError`); ``poll`` is called while waiting (MPI progress for the
        messages in flight).
        Returns the events of the copies out still running: whoever reads their values waits
        for them; each writer is told at this rank's next exchange (:meth:`_settle`), or now
        where nothing is left running."""
        self._settle(timeline)
        slot = seq % SLOTS
        base = seq << PIECE_BITS
        done = dict.fromkeys(route.reads, 0)
        events: dict[int, list] = {k: [] for k in route.reads}
        backoff = Backoff(self.timeout)
        with timeline.span("window wait and copy out"):
            while (self._pending or self._unwritten
                   or any(done[k] < len(route.reads[k]) for k in done)):
                moved = self._publish_copied(timeline)
                moved = self._write_more(timeline) or moved
                for k, pieces in route.reads.items():
                    i = done[k]
                    if i == len(pieces):
                        continue
                    published = int(self._flags[k][0]) - base
                    if published < pieces[i].count:
                        continue
                    self.win.Sync()
                    if i == 0:
                        try:
                            product_stamp.check(stamp, self._stamps[k][slot], self.ranks[k],
                                                self.ranks[self.me])
                        except DistributedError:
                            self._write_all(timeline)  # the readers in step get their values
                            raise
                    area = self._slots[k][slot]
                    while i < len(pieces) and pieces[i].count <= published:
                        p = pieces[i]
                        event = get(area[p.offset: p.offset + p.stop - p.start], p.start, p.stop,
                                    p.whole)
                        if event is not None:
                            events[k].append(event)
                        i += 1
                    done[k] = i
                    moved = True
                if moved:
                    backoff.reset()
                    continue
                if all(done[k] == len(route.reads[k]) for k in done):
                    self._write_all(timeline)  # only own copies left
                    continue
                if poll is not None:
                    poll()
                if not backoff.pause():
                    late = [k for k in done if done[k] < len(route.reads[k])]
                    raise self._late(late[0], f"to publish its values of exchange {seq}")
        self._unconsumed.append((seq, events))
        running = [e for waiting in events.values() for e in waiting if not _complete(e)]
        if not running:
            self._settle(timeline)
        return running

    def _settle(self, timeline: Timeline) -> None:
        """Tell the writers of the exchanges read so far that their values were copied out
        (waiting for the copies that still run: by now they are mostly done)."""
        if not self._unconsumed:
            return
        with timeline.span("window consumed"):
            for seq, events in self._unconsumed:
                for k, waiting in events.items():
                    for event in waiting:
                        event.wait()
                    self.win.Sync()
                    self._flags[k][_consumed(self.me)] = seq
            self._unconsumed.clear()

    def _wait(self, ready: Callable[[], bool], k: int, what: str) -> None:
        backoff = Backoff(self.timeout)
        while not ready():
            if not backoff.pause():
                raise self._late(k, what)

    def _late(self, k: int, what: str) -> DistributedError:
        return DistributedError(
            f"the halo exchange waited {self.timeout:g} s for rank {self.ranks[k]} {what} "
            "through the shared-memory window; every product is collective: a rank that "
            "skipped one or failed in it leaves the others waiting")

    def register(self, context: Any) -> None:
        """Keep a ``USE_HOST_PTR`` buffer of ``context`` over every slot of the window for as
        long as the window lives: NVIDIA's OpenCL then pins the slots, and its copies between
        them and the GPU run at pinned speed (an H100: 53 GB/s, against 4-10 GB/s from shared
        memory it has not seen; 31-39 GB/s with four ranks copying at once:
        ``reports/2026-11-28-h100x4-exchange``). The copies still name the numpy views."""
        import pyopencl as cl

        flags = cl.mem_flags.USE_HOST_PTR | cl.mem_flags.READ_WRITE
        self._registered = [cl.Buffer(context, flags, hostbuf=slot)
                            for slots in self._slots for slot in slots if slot.nbytes]

    def free(self) -> None:
        """End the epoch and free the window (collective over the node)."""
        for buffer in self._registered:
            buffer.release()  # before the memory it covers goes
        self._registered = []
        self.win.Unlock_all()
        self.win.Free()


def _complete(event: Any) -> bool:
    """Whether an OpenCL command finished (without waiting for it)."""
    import pyopencl as cl

    return event.command_execution_status == cl.command_execution_status.COMPLETE


def _consumed(j: int) -> int:
    """Index of ``consumed[j]`` in the flags."""
    return FLAG_STRIDE * (1 + j)


def _stamp_at(ranks: int, slot: int) -> int:
    """Index (of the flags as float64) of the stamp of ``slot`` in a node of ``ranks``."""
    return FLAG_STRIDE * (1 + ranks + slot)


def _copy_in(put: Copy, area: np.ndarray, piece: Piece, base: int) -> tuple[int, Any]:
    """Enqueue (or do) the copy of ``piece`` into a slot's ``area``: (its progress word, its
    event or None)."""
    return base | piece.count, put(area[piece.offset: piece.offset + piece.stop - piece.start],
                                   piece.start, piece.stop, piece.whole)
