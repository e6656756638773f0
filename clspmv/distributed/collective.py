"""Collective agreement: a step that may fail (or come out differently) on some ranks ends with
every rank knowing, and no rank waits for ever.

Without it a rank that raises during construction leaves the others waiting in the next
collective call forever. :func:`agree` runs the step, then every rank learns (one bounded
``allgather``) which ranks failed and why, or where their results disagree, and all raise.

The waits of :func:`agree`, :func:`allgather` and :func:`complete` are bounded: a collective
that not every rank of the communicator enters within :func:`timeout` seconds (a rank raised
outside an agreed step, skipped the call, or passed another communicator) raises
:class:`CollectiveTimeout` on the ranks that wait, instead of hanging. The communicator is
unusable afterwards (the collective stays pending). Not bounded: :func:`barrier_asleep` (what
it waits for may take minutes) and :class:`MPISpace`'s sums (one per dot product of a solver,
where polling would add latency).
"""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from ..env_seconds import env_seconds
from ..errors import ClspmvError

T = TypeVar("T")

TIMEOUT_ENV = "CLSPMV_MPI_TIMEOUT"
"""Seconds a rank waits in a collective of construction (and the other bounded collectives of
:mod:`clspmv.distributed`) for the other ranks; ``0``: for ever."""
DEFAULT_TIMEOUT = 300.0
"""The bound without :data:`TIMEOUT_ENV`: long enough for a root rank converting a matrix of
hundreds of millions of entries while the others wait (the same bound as the shared-memory
exchange's waits for a peer)."""
LONGEST_PAUSE = 5e-3
"""Longest sleep between two tests of a pending collective: a waiting rank leaves its core to
the ranks still working (on a shared node), at the cost of up to this delay."""


SPIN_SECONDS = 1e-3
"""A product's wait (:class:`Backoff`) polls without sleeping this long: waits of a product are
mostly shorter, and a sleep overshoots (Linux: by 50 us or more; the 1 ms pauses of the first
window exchange added up to 0.3 ms to a 0.5 ms product at 4 ranks)."""
LONGEST_SLEEP = 2e-4
"""Longest sleep of a product's wait (:class:`Backoff`) once it has polled
:data:`SPIN_SECONDS`."""


class DistributedError(ClspmvError):
    """A step of a distributed operation failed on at least one rank, the ranks disagree on
    something they must share, or not every rank arrived in time; raised on every rank that
    knows, the message names the ranks and what each had (a local error is the ``__cause__``)."""


class CollectiveTimeout(DistributedError):
    """Not every rank of a communicator entered a collective in time (:func:`complete`); the
    collective stays pending, so the communicator is unusable and nothing is freed
    collectively."""


def timeout() -> float | None:
    """Seconds a bounded collective waits (:data:`TIMEOUT_ENV`, default
    :data:`DEFAULT_TIMEOUT`); None for no bound (``0``). A value that is not a number of seconds
    raises :class:`clspmv.errors.SettingError` naming the variable, its value and the fix."""
    return env_seconds(TIMEOUT_ENV, DEFAULT_TIMEOUT, zero_unbounds=True)


def complete(requests: list, what: str, comm: Any, limit: float | None = None) -> None:
    """Wait for non-blocking ``requests`` on ``comm``, testing them with growing sleeps
    (up to :data:`LONGEST_PAUSE`); :class:`CollectiveTimeout` after ``limit`` seconds (None:
    :func:`timeout`; 0: no bound)."""
    from mpi4py import MPI

    limit = timeout() if limit is None else limit
    started = time.monotonic()
    pause = 1e-5
    while not MPI.Request.Testall(requests):
        if limit and time.monotonic() - started > limit:
            raise CollectiveTimeout(
                f"{what}: not every rank of the communicator ({comm.size} ranks) arrived within "
                f"{limit:g} s ({TIMEOUT_ENV}): a rank failed outside a collective step, skipped "
                "this collective call, or passed another communicator; the communicator is "
                "unusable now (run under `mpiexec ... python -m mpi4py` so that an uncaught "
                "error aborts every rank)")
        time.sleep(pause)
        pause = min(2 * pause, LONGEST_PAUSE)


def allgather(comm: Any, value: object, what: str) -> list:
    """``comm.allgather(value)`` bounded in time (:func:`complete`): the sizes of the pickled
    values, then the values (two non-blocking collectives: mpi4py has none for objects)."""
    import numpy as np

    data = np.frombuffer(pickle.dumps(value), np.uint8)
    sizes = np.empty(comm.size, np.int64)
    complete([comm.Iallgather(np.array([data.size], np.int64), sizes)], what, comm)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    every = np.empty(int(sizes.sum()), np.uint8)
    complete([comm.Iallgatherv(data, [every, (sizes, starts)])], what, comm)
    return [pickle.loads(every[s: s + n].tobytes())
            for s, n in zip(starts.tolist(), sizes.tolist(), strict=True)]


def agree(comm: Any, what: str, step: Callable[[], T], *,
          facts: Callable[[T], Mapping[str, object]] | None = None) -> T:
    """``step()`` on every rank of ``comm``; its result, or, if it raised anywhere, an error on
    every rank: the original one where every rank raised the same (a bad argument, say), else
    :class:`DistributedError` naming each failing rank and its error.

    ``facts(result)``: what the ranks must share about the result (name -> a value compared with
    ``==`` and shown with ``repr``); where they differ every rank raises
    :class:`DistributedError` naming each differing fact and its value per rank. One bounded
    :func:`allgather` (:class:`CollectiveTimeout` where not every rank enters it in time)."""
    error: BaseException | None = None
    result = None
    shared = None
    try:
        result = step()
        shared = None if facts is None else dict(facts(result))
    except Exception as exc:  # every failure must be reported to the other ranks
        error = exc
    message = None if error is None else f"{type(error).__name__}: {error}"
    try:
        gathered = allgather(comm, (message, shared), what)
    except CollectiveTimeout as late:
        raise late from error
    messages = [m for m, _ in gathered]
    failed = [(rank, m) for rank, m in enumerate(messages) if m is not None]
    if len(failed) == comm.size and len(set(messages)) == 1:
        raise error  # the same error everywhere (a bad argument): as it is, on every rank
    if failed:
        lines = "; ".join(f"rank {rank}: {m}" for rank, m in failed)
        raise DistributedError(f"{what} failed on {len(failed)} of {comm.size} ranks: "
                               f"{lines}") from error
    differing = _disagreements([s for _, s in gathered])
    if differing:
        raise DistributedError(f"{what}: the ranks disagree on {differing}; make them the same "
                               "on every rank")
    return result


def _disagreements(every: list[dict[str, object] | None]) -> str:
    """The facts whose values differ between ranks, each with its values and their ranks
    (``name: 'a' on ranks 0, 2; 'b' on rank 1``), joined; empty where all agree."""
    if every[0] is None:
        return ""
    parts = []
    for name in every[0]:
        values = [facts.get(name) for facts in every]
        if all(v == values[0] for v in values):
            continue
        groups: list[tuple[object, list[int]]] = []
        for rank, value in enumerate(values):
            for seen, ranks in groups:
                if seen == value:
                    ranks.append(rank)
                    break
            else:
                groups.append((value, [rank]))
        shown = "; ".join(f"{value!r} on rank{'s' if len(ranks) > 1 else ''} "
                          f"{', '.join(map(str, ranks))}" for value, ranks in groups)
        parts.append(f"{name} ({shown})")
    return ", ".join(parts)


class Backoff:
    """Pauses of a product's waiting loop: for :data:`SPIN_SECONDS` only a yield of the core
    (``sched_yield``), then sleeps doubling from 20 us to :data:`LONGEST_SLEEP` (a waiting rank
    leaves its core to others, at the cost of up to about a pause's delay), or only yields where
    ``spin_only`` (a wait for MPI messages, which progress only while MPI is called);
    :meth:`pause` returns False once ``timeout`` seconds have passed."""

    def __init__(self, timeout: float, spin_only: bool = False) -> None:
        self.deadline = time.perf_counter() + timeout
        self.spin_only = spin_only
        self.reset()

    def reset(self) -> None:
        self.spin_until = time.perf_counter() + SPIN_SECONDS
        self.sleep = 20e-6

    def pause(self) -> bool:
        now = time.perf_counter()
        if now > self.deadline:
            return False
        if self.spin_only or now < self.spin_until:
            os.sched_yield()
        else:
            time.sleep(self.sleep)
            self.sleep = min(2 * self.sleep, LONGEST_SLEEP)
        return True


def barrier_asleep(comm: Any) -> None:
    """A barrier whose waiting ranks sleep (an ``Ibarrier`` tested with sleeps) instead of
    spinning in MPI: they take no CPU from a rank still working on a shared node (a calibration,
    a measurement). Not bounded in time: what the others wait for may take minutes."""
    complete([comm.Ibarrier()], "a barrier", comm, limit=0.0)


class MPISpace:
    """The vector space of a distributed matrix for :mod:`clspmv.solvers`: vectors of ``size``
    entries per rank, whose dot products are summed over the ranks (``Allreduce``)."""

    def __init__(self, comm: Any, size: int) -> None:
        self.comm = comm
        self.size = size
        self._totals: dict[Any, Any] = {}
        """Per dtype, the host array the sums are copied up from: it outlives the copy, which
        is not waited for (the next reduction's read, on the same queue, comes after it)."""

    def reduce(self, queue: Any, values: Any, start: int, count: int) -> Any:
        """Replace ``values[start:start + count]`` (a device array of partial sums) by their sum
        over the ranks, and return the sums (a numpy array): the host has them already, so a
        solver need not read them back. The copy up is enqueued, not waited for (the kernels
        that read the sums follow it on ``queue``)."""
        import numpy as np
        import pyopencl as cl

        host = np.empty(count, values.dtype)
        offset = start * values.dtype.itemsize
        cl.enqueue_copy(queue, host, values.data, src_offset=offset, is_blocking=True)
        total = self._totals.get(values.dtype)
        if total is None or total.size < count:
            total = self._totals[values.dtype] = np.empty(max(count, 16), values.dtype)
        self.comm.Allreduce(host, total[:count])
        cl.enqueue_copy(queue, values.data, total[:count], dst_offset=offset, is_blocking=False)
        return total[:count].copy()
