"""The host timeline of one distributed product: when each step ran, on which thread, and when
its OpenCL commands ran on the device.

:class:`.product.Product` keeps one per product (its ``timeline``) where the matrix records
them (:attr:`.matrix.DistributedMatrix.record_timeline`; otherwise :data:`UNTIMED`, which
records nothing: a record costs about a microsecond of host time, twenty of them a product); the
exchange plan adds its own steps to it (copies of the values, messages started and waited for,
window pieces published and waited for). Host times are ``time.perf_counter`` seconds since the
product began; a device command's start and end are placed on the same clock by adding its
profiling delays (start and end after its ``queued`` time) to the host time at which it was
enqueued: an estimate within the delay between the host's enqueue call and the driver's
``queued`` stamp.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass
from threading import current_thread
from typing import NamedTuple

import pyopencl as cl


class Span(NamedTuple):
    """One host step: ``name``, ``start`` and ``stop`` (seconds since the product began) and the
    host thread that ran it (``"MainThread"``, ``"clspmv-mpi"`` in task mode)."""

    name: str
    start: float
    stop: float
    thread: str


@dataclass(frozen=True)
class DeviceSpan:
    """One OpenCL command: ``enqueued`` (host time of the enqueue call), ``start`` and ``stop``
    (its profiling times placed on the host clock, see the module), seconds since the product
    began."""

    name: str
    enqueued: float
    start: float
    stop: float


class Timeline:
    """Host spans and OpenCL events of one product, in the order they were recorded."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        """``time.perf_counter()`` when the product began."""
        self.spans: list[Span] = []
        """The host steps (appended from every thread; list appends are atomic)."""
        self._events: list[tuple[str, float, cl.Event]] = []

    def now(self) -> float:
        """Seconds since the product began."""
        return time.perf_counter() - self.origin

    def span(self, name: str) -> _Step:
        """A context manager recording the enclosed host step as ``name`` (also when it
        raises)."""
        return _Step(self, name)

    def mark(self, name: str) -> None:
        """Record an instant (e.g. a window piece published) as a span of no length."""
        at = self.now()
        self.spans.append(Span(name, at, at, current_thread().name))

    def event(self, name: str, event: cl.Event | None) -> cl.Event | None:
        """Record an OpenCL command enqueued just now; returns ``event``."""
        if event is not None:
            self._events.append((name, self.now(), event))
        return event

    def device_spans(self) -> list[DeviceSpan]:
        """The OpenCL commands (waiting for each to complete); commands without profiling
        information (a queue without profiling, a user event) are left out."""
        out = []
        for name, enqueued, event in self._events:
            event.wait()
            try:
                queued, start, end = (event.profile.queued, event.profile.start,
                                      event.profile.end)
            except cl.Error:
                continue
            out.append(DeviceSpan(name, enqueued, enqueued + (start - queued) * 1e-9,
                                  enqueued + (end - queued) * 1e-9))
        return out

    def summary(self) -> list[dict[str, object]]:
        """The product in a few numbers per step (for a bench record): per host step and per
        kind of OpenCL command (``where``: ``"host"`` or ``"device"``), its ``first`` start, its
        ``last`` stop, its ``busy`` time (lengths added) in ms since the product began, and its
        ``count``; in order of first start."""
        steps: dict[tuple[str, str], list[float]] = {}
        spans = ([("host", s.name, s.start, s.stop) for s in self.spans]
                 + [("device", s.name, s.start, s.stop) for s in self.device_spans()])
        for where, name, start, stop in spans:
            row = steps.setdefault((where, name), [start, stop, 0.0, 0])
            row[0], row[1] = min(row[0], start), max(row[1], stop)
            row[2] += stop - start
            row[3] += 1
        return sorted(({"where": where, "name": name, "first": 1e3 * first, "last": 1e3 * last,
                        "busy": 1e3 * busy, "count": int(count)}
                       for (where, name), (first, last, busy, count) in steps.items()),
                      key=lambda row: row["first"])


class Untimed(Timeline):
    """A timeline that records nothing (:data:`UNTIMED`): the products of a matrix that keeps no
    timeline (:attr:`.matrix.DistributedMatrix.record_timeline` False, the default) spend no host
    time on their steps' records."""

    def span(self, name: str) -> nullcontext[None]:  # type: ignore[override]
        return _NOTHING

    def mark(self, name: str) -> None:
        return None

    def event(self, name: str, event: cl.Event | None) -> cl.Event | None:
        return event


_NOTHING: nullcontext[None] = nullcontext()
"""The context of every :meth:`Untimed.span` (it holds no state)."""

UNTIMED = Untimed()
"""The one :class:`Untimed` timeline (it holds no state)."""


class _Step:
    """One host step being recorded (:meth:`Timeline.span`); a class rather than a generator
    context manager: a product records about twenty steps, a third of the host time of the
    latter's."""

    __slots__ = ("timeline", "name", "start")

    def __init__(self, timeline: Timeline, name: str) -> None:
        self.timeline, self.name = timeline, name

    def __enter__(self) -> None:
        self.start = self.timeline.now()

    def __exit__(self, *exc: object) -> None:
        t = self.timeline
        t.spans.append(Span(self.name, self.start, t.now(), current_thread().name))
