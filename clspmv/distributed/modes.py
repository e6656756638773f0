"""The three schedules of a distributed product (pjds-multigpu.txt, section 3.1).

* ``"vector"``: exchange the halo, then the whole product (local and non-local parts).
* ``"overlap"``: enqueue the local part, then, while the device computes it, copy the values to
  send down (on another queue: they do not wait for the local part), exchange them (through
  the node's shared-memory window or non-blocking messages, see :mod:`.plan`) and copy the
  halo up (on a second queue);
  then the non-local part ("naive overlap": the host thread waits for the window's flags, and
  tests the messages, which the MPI library progresses inside the tests).
* ``"task"``: as ``"overlap"``, but a dedicated host thread drives the exchange (copy down,
  window and messages, halo up) while the main thread drives the device, so the exchange
  progresses even when the main thread is busy; the non-local part follows both. MPI must allow
  calls from that thread (``MPI_THREAD_SERIALIZED`` or better): where it does not, ``"task"``
  falls back to ``"overlap"`` with a warning.
  Where every peer is reached through the node's window (no messages to progress), a matrix
  runs ``"task"`` as ``"overlap"``: the thread would only add two hand-offs per product (about
  0.1 ms together at 4 ranks in ``reports/2026-11-28-h100x4-exchange``).

For pyopencl vectors the values to send are gathered first in every mode (a kernel, or nothing
where they are consecutive in x), ahead of the local kernel; numpy x is read on the host as
the values are sent.
"""

from __future__ import annotations

import queue
import threading
import warnings
from collections.abc import Callable
from typing import Protocol

from ..errors import ClspmvWarning

MODES = ("vector", "overlap", "task")


class Steps(Protocol):
    """The steps of one product, as the matrix provides them."""

    def gather(self) -> None: ...  # enqueue the device gather (pyopencl x)
    def start(self) -> None: ...  # send values down / from x to buffer and window, start
    def wait(self) -> None: ...  # complete the exchange, the halo uploaded
    def local(self) -> None: ...  # enqueue x upload and the local part
    def non_local(self) -> None: ...  # enqueue the non-local part (after the halo upload)


def check_mode(mode: str) -> str:
    """``mode`` after checking it, ``"overlap"`` for ``"task"`` where MPI lacks thread support."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(map(repr, MODES))}, got {mode!r}")
    if mode == "task" and not threads_allowed():
        warnings.warn("MPI was initialised without thread support (MPI_THREAD_SERIALIZED or "
                      "better), which task mode needs; using mode='overlap'", ClspmvWarning,
                      stacklevel=3)
        return "overlap"
    return mode


def threads_allowed() -> bool:
    """True when MPI may be called from a thread other than the main one."""
    from mpi4py import MPI

    return MPI.Query_thread() >= MPI.THREAD_SERIALIZED


def run(mode: str, steps: Steps, worker: CommThread | None) -> None:
    """One product in ``mode``."""
    if mode == "vector":
        steps.gather()
        steps.start()
        steps.wait()
        steps.local()
    elif mode == "overlap":
        steps.gather()
        # the local part first: its enqueue costs the host tens of microseconds, which delay
        # the kernel that everything else hides behind (exchange first was 2-5 % slower on 4
        # H200s: reports/2026-11-28-h200x4-product-order)
        steps.local()
        steps.start()
        steps.wait()
    else:
        assert worker is not None
        steps.gather()  # enqueued ahead of the local part; the thread waits for it
        steps.local()
        worker.submit(_exchange(steps))
        worker.join()
    steps.non_local()


def _exchange(steps: Steps) -> Callable[[], None]:
    def exchange() -> None:
        steps.start()
        steps.wait()
    return exchange


class CommThread:
    """A host thread that runs one job at a time (the communication of task mode); an exception
    in the job is raised again by :meth:`join`."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue = queue.SimpleQueue()
        self._done: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="clspmv-mpi", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            try:
                job()
            except BaseException as exc:  # handed to the main thread
                self._done.put(exc)
            else:
                self._done.put(None)

    def submit(self, job: Callable[[], None]) -> None:
        self._jobs.put(job)

    def join(self) -> None:
        error = self._done.get()
        if error is not None:
            raise error

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()
