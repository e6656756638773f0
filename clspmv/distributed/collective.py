"""Collective agreement: a step that may fail on some ranks ends with every rank knowing.

Without it a rank that raises during construction leaves the others waiting in the next
collective call forever. :func:`agree` runs the step, then every rank learns (one ``allgather``)
which ranks failed and why, and all raise.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ClspmvError

T = TypeVar("T")


class DistributedError(ClspmvError):
    """A step of a distributed operation failed on at least one rank; raised on every rank, the
    message names the failing ranks and their errors (the local one is the ``__cause__``)."""


def agree(comm: Any, what: str, step: Callable[[], T]) -> T:
    """``step()`` on every rank of ``comm``; its result, or, if it raised anywhere, an error on
    every rank: the original one where every rank raised the same (a bad argument, say), else
    :class:`DistributedError` naming each failing rank and its error."""
    error: BaseException | None = None
    result = None
    try:
        result = step()
    except Exception as exc:  # every failure must be reported to the other ranks
        error = exc
    message = None if error is None else f"{type(error).__name__}: {error}"
    messages = comm.allgather(message)
    failed = [(rank, m) for rank, m in enumerate(messages) if m is not None]
    if len(failed) == comm.size and len(set(messages)) == 1:
        raise error  # the same error everywhere (a bad argument): as it is, on every rank
    if failed:
        lines = "; ".join(f"rank {rank}: {m}" for rank, m in failed)
        raise DistributedError(f"{what} failed on {len(failed)} of {comm.size} ranks: "
                               f"{lines}") from error
    return result


def barrier_asleep(comm: Any, poll_seconds: float = 0.005) -> None:
    """A barrier whose waiting ranks sleep (an ``Ibarrier`` polled with sleeps) instead of
    spinning in MPI: they take no CPU from a rank still working on a shared node (a calibration,
    a measurement)."""
    import time

    request = comm.Ibarrier()
    while not request.Test():
        time.sleep(poll_seconds)


class MPISpace:
    """The vector space of a distributed matrix for :mod:`clspmv.solvers`: vectors of ``size``
    entries per rank, whose dot products are summed over the ranks (``Allreduce``)."""

    def __init__(self, comm: Any, size: int) -> None:
        self.comm = comm
        self.size = size

    def reduce(self, queue: Any, values: Any, start: int, count: int) -> None:
        """Replace ``values[start:start + count]`` (a device array of partial sums) by their sum
        over the ranks."""
        import numpy as np
        import pyopencl as cl

        host = np.empty(count, values.dtype)
        offset = start * values.dtype.itemsize
        cl.enqueue_copy(queue, host, values.data, src_offset=offset, is_blocking=True)
        total = np.empty_like(host)
        self.comm.Allreduce(host, total)
        cl.enqueue_copy(queue, values.data, total, dst_offset=offset, is_blocking=True)
