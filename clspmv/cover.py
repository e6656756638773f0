"""Kernel time without the host's time: each timed product is queued behind a spin kernel.

A product of several kernels is timed from its first kernel's start to its last kernel's end
(:func:`clspmv.device.events_ns`). When a kernel ends before the host has enqueued the next one
(pyopencl sets a kernel's arguments and enqueues it in tens of microseconds), the gap between
them is the host's time, not the device's: fitted into the calibration as a cost per launch, it
made ``format="auto"`` take slow formats on GPUs (docs/measurements.md, "Evidence behind the
code").

So a timed product is queued behind :func:`spin`'s kernel: one work-item looping on registers
(it touches one int, so the caches keep what the product before left in them, which a copy
would not). The device starts the product's first kernel when the spin ends, by when the host
has enqueued the rest. The spin must still be running once the product is enqueued (its event
not complete); otherwise its rounds double and the product is timed again, up to a spin of
:data:`SPIN_LIMIT_NS`. A sample that is still not covered then is kept and counted; a device
whose spins never covered a product up to the limit (a runtime that completes each command
before the enqueue returns, such as a simulator) is timed without the spin from then on, every
sample counted.
The rounds a device needs are kept (per device, for the process), so the doubling happens once;
a spin far longer than the host's enqueue of the product it covered is halved
(:data:`SHRINK_RATIO`), so that a stall does not lengthen every later product's wait.

CPU devices get no spin: their kernels run on the cores the host enqueues from, so the host's
part is a cost of the product there, not an artefact of the timing, and a spin would take one of
those cores from the host.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from . import build
from .device import Device, events_ns

if TYPE_CHECKING:
    from .matrix import DeviceMatrix

FIRST_ROUNDS = 1 << 12
"""Rounds of a device's first spin (a few microseconds on a GPU or a CPU core)."""
SPIN_LIMIT_NS = 20_000_000
"""The longest spin: 20 ms, beyond any host's enqueue of one product's kernels."""
SHRINK_RATIO = 8
"""A spin that covered a product while lasting more than this many times the host's enqueue of
it is halved for the next product (not below :data:`FIRST_ROUNDS`): one host stall (a kernel's
first launch, a garbage collection) doubles the spin, and a spin kept at that length would cost
its time on every later product, milliseconds on products of microseconds."""


@dataclass
class _Spin:
    """A device's spin kernel, its one-int buffer, the rounds its spins run (0: the device never
    covers), whether one ever covered a product, and the lock of the kernel's arguments."""

    kernel: cl.Kernel
    buffer: cl.Buffer
    rounds: int = FIRST_ROUNDS
    ever_covered: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


_spins: dict[Device, _Spin] = {}
_lock = threading.Lock()


def _spin_of(device: Device) -> _Spin:
    with _lock:
        spin = _spins.get(device)
        if spin is None:
            kernel = build.kernel(device, "util.cl", "spin", np.dtype(np.float32), WG=1)
            buffer = cl.Buffer(device.context, cl.mem_flags.READ_WRITE
                               | cl.mem_flags.COPY_HOST_PTR, hostbuf=np.zeros(1, np.uint32))
            spin = _spins[device] = _Spin(kernel, buffer)
        return spin


def spins(device_type: str) -> bool:
    """Whether :func:`covered_ns` times the products of a device of ``device_type`` behind the
    spin: every device but a CPU (see the module docstring)."""
    return device_type != "cpu"


def covered_ns(device: Device, enqueue: Callable[[], Sequence[cl.Event]]) -> tuple[int, bool]:
    """(kernel nanoseconds of the product ``enqueue()`` queues on ``device.queue`` and returns the
    events of, first start to last end; whether the spin failed to hide the host's part, so
    that the time may include it). Waits for the product. ``enqueue`` may be called more than
    once (see the module docstring): it must queue the same work each time. On a CPU device
    the product is timed without a spin (see the module docstring), never failing."""
    if not spins(device.type):
        return events_ns(list(enqueue())), False
    spin = _spin_of(device)
    while True:
        rounds = spin.rounds
        if not rounds:  # this device never covers
            return events_ns(list(enqueue())), True
        with spin.lock:  # the kernel's arguments are shared by the device's threads
            started = spin.kernel(device.queue, (1,), (1,), spin.buffer, np.int32(rounds))
        events, host_ns = _enqueue_timed(enqueue)
        covered = started.command_execution_status != cl.command_execution_status.COMPLETE
        ns = events_ns(events)
        spin_ns = started.profile.end - started.profile.start
        if covered:
            spin.ever_covered = True
            if rounds > FIRST_ROUNDS and spin_ns > SHRINK_RATIO * host_ns:
                with spin.lock:  # grown by a stall long past: back towards the host's need
                    spin.rounds = max(FIRST_ROUNDS, min(spin.rounds, rounds // 2))
            return ns, False
        if spin_ns >= SPIN_LIMIT_NS or rounds >= 1 << 30:
            # a host stall on a device that covers is one sample missed, not a verdict
            if not spin.ever_covered:
                with spin.lock:
                    spin.rounds = 0
            return ns, True
        with spin.lock:
            spin.rounds = max(spin.rounds, 2 * rounds)


def _enqueue_timed(enqueue: Callable[[], Sequence[cl.Event]]) -> tuple[list[cl.Event], int]:
    """``enqueue()``'s events and the host's nanoseconds in it."""
    t0 = time.perf_counter_ns()
    events = list(enqueue())
    return events, time.perf_counter_ns() - t0


def matrix_ns(M: DeviceMatrix, product: Callable[[], object]) -> tuple[int, bool]:
    """:func:`covered_ns` of ``product()``, a product of ``M`` (its kernels' events are
    ``M.last_events``) on ``M``'s device."""
    def enqueue() -> Sequence[cl.Event]:
        product()
        return M.last_events

    return covered_ns(M.device, enqueue)
