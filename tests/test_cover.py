"""The spin that hides the host's enqueueing from a product's kernel time (clspmv.cover)."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

import clspmv
from clspmv import build, cover
from clspmv.bench.operation import set_times
from clspmv.bench.records import Record
from clspmv.bench.timing import Timing
from clspmv.device import SIMULATOR

HOST_PAUSE_S = 0.004
NO_DEVICE = SimpleNamespace(queue=None, type="gpu")  # for a fake spin, which ignores the queue


def test_host_time_between_kernels_is_not_kernel_time(device: clspmv.Device) -> None:
    """Two tiny kernels enqueued 4 ms apart: behind the spin their span is the device's time;
    without it, it holds the host's pause. A CPU device gets no spin (cover's docstring says
    why): the same device taken as a GPU (``type="gpu"``) shows the spin on its runtime."""
    if device.platform == SIMULATOR:
        pytest.skip("the simulator completes each command before its enqueue returns")
    if device.type == "cpu":
        # no spin is built or queued: the product's own events, first start to last end
        kern = build.kernel(device, "util.cl", "spin", np.dtype(np.float32), WG=1)
        buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 4)
        queued: list[cl.Event] = []

        def one() -> list[cl.Event]:
            queued.append(kern(device.queue, (1,), (1,), buf, np.int32(1)))
            return queued[-1:]

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(cover, "_spin_of", lambda _: pytest.fail("a spin on a CPU device"))
            ns, missed = cover.covered_ns(device, one)
        assert not missed and len(queued) == 1
        assert ns == clspmv.device.events_ns(queued)
    # a copy of the device: its spin, grown past the pause here, is not the session's
    device = dataclasses.replace(device, type="gpu")
    kern = build.kernel(device, "util.cl", "spin", np.dtype(np.float32), WG=1)
    buf = cl.Buffer(device.context, cl.mem_flags.READ_WRITE, 4)
    calls = 0

    def enqueue() -> list[cl.Event]:
        nonlocal calls
        calls += 1
        first = kern(device.queue, (1,), (1,), buf, np.int32(1))
        time.sleep(HOST_PAUSE_S)
        return [first, kern(device.queue, (1,), (1,), buf, np.int32(1))]

    bare = clspmv.device.events_ns(enqueue())
    assert bare >= 0.75 * HOST_PAUSE_S * 1e9  # the host's pause, counted as kernel time
    ns, missed = cover.covered_ns(device, enqueue)
    assert not missed and 0 < ns < HOST_PAUSE_S * 1e9 / 2
    assert calls >= 3 and cover._spins[device].rounds > cover.FIRST_ROUNDS  # doubled to cover


@dataclass
class FakeEvent:
    running: bool
    ns: int

    @property
    def command_execution_status(self) -> int:
        return cl.command_execution_status.RUNNING if self.running else \
            cl.command_execution_status.COMPLETE

    @property
    def profile(self):  # the spin's own duration
        return type("P", (), {"start": 0, "end": self.ns})()


def fake_spin(monkeypatch: pytest.MonkeyPatch, covers_from: int | None,
              host_ns: int | None = None) -> list[int]:
    """A spin whose event is still running once the product is enqueued when its rounds reach
    ``covers_from`` (never with None), lasting one ns per round; the host's enqueue of a product
    takes ``host_ns`` (default: half the covering spin, so a covering spin is never halved);
    the rounds of each spin."""
    rounds_seen: list[int] = []
    host = host_ns if host_ns is not None else (covers_from or cover.FIRST_ROUNDS) // 2
    monkeypatch.setattr(cover, "_enqueue_timed", lambda enqueue: (list(enqueue()), host))

    def kernel(queue, gsize, lsize, buf, rounds):
        rounds_seen.append(int(rounds))
        return FakeEvent(covers_from is not None and rounds >= covers_from, int(rounds))

    spin = cover._Spin(kernel, None)
    monkeypatch.setattr(cover, "_spin_of", lambda device: spin)
    monkeypatch.setattr(cover, "events_ns", lambda events: 1000)
    return rounds_seen


def test_the_spin_doubles_until_it_covers_and_keeps_that_length(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = fake_spin(monkeypatch, covers_from=cover.FIRST_ROUNDS * 8)
    products = []
    assert cover.covered_ns(NO_DEVICE, lambda: products.append(1) or []) == (1000, False)
    assert rounds == [cover.FIRST_ROUNDS << i for i in range(4)] and len(products) == 4
    assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, False)
    assert rounds[-1] == cover.FIRST_ROUNDS * 8  # the next product starts at the length found


def test_a_spin_far_longer_than_the_host_needs_is_halved(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A spin grown by a stall long past (16x the first) that covers a product whose host
    enqueue took far less is halved for each next product, down to FIRST_ROUNDS, never below."""
    rounds = fake_spin(monkeypatch, covers_from=1, host_ns=cover.FIRST_ROUNDS // 16)
    spin = cover._spin_of(NO_DEVICE)
    spin.rounds = cover.FIRST_ROUNDS * 16
    for _ in range(7):
        assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, False)
    assert rounds == [cover.FIRST_ROUNDS * 16, cover.FIRST_ROUNDS * 8, cover.FIRST_ROUNDS * 4,
                      cover.FIRST_ROUNDS * 2] + [cover.FIRST_ROUNDS] * 3


def test_a_spin_the_host_needs_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spin lasting less than SHRINK_RATIO times the host's enqueue keeps its length."""
    rounds = fake_spin(monkeypatch, covers_from=1,
                       host_ns=cover.FIRST_ROUNDS * 8 // cover.SHRINK_RATIO)
    cover._spin_of(NO_DEVICE).rounds = cover.FIRST_ROUNDS * 8
    for _ in range(3):
        cover.covered_ns(NO_DEVICE, lambda: [])
    assert rounds == [cover.FIRST_ROUNDS * 8] * 3


def test_a_device_that_never_covers_is_timed_without_the_spin(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = fake_spin(monkeypatch, covers_from=None)
    monkeypatch.setattr(cover, "SPIN_LIMIT_NS", cover.FIRST_ROUNDS * 4)
    assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, True)
    assert rounds == [cover.FIRST_ROUNDS, cover.FIRST_ROUNDS * 2, cover.FIRST_ROUNDS * 4]
    assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, True)
    assert len(rounds) == 3  # no more spins


def test_uncovered_samples_are_named_in_the_record() -> None:
    rec = Record(matrix="m", rows=1, cols=1, nnz=1, device="d", device_type="cpu",
                 format="coo", dtype="float64", params="chunk=64")
    set_times(rec, Timing(0.5, 0.4, 0.6, 5, uncovered=2))
    assert rec.kernel_ms == 0.5
    assert rec.params == ("chunk=64; host time included in 2 of 5 samples (not covered by the "
                          "spin before them)")
    clean = Record(matrix="m", rows=1, cols=1, nnz=1, device="d", device_type="cpu",
                   format="coo", dtype="float64", params="chunk=64")
    set_times(clean, Timing(0.5, 0.4, 0.6, 5))
    assert clean.params == "chunk=64"


def test_a_host_stall_on_a_device_that_covers_is_one_missed_sample(
        monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = fake_spin(monkeypatch, covers_from=cover.FIRST_ROUNDS * 2)
    monkeypatch.setattr(cover, "SPIN_LIMIT_NS", cover.FIRST_ROUNDS * 4)
    assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, False)  # covered at twice the rounds
    spin = cover._spin_of(NO_DEVICE)
    spin.rounds = cover.FIRST_ROUNDS * 4  # grown by stalls to the limit, then one more stall:
    monkeypatch.setattr(spin, "kernel", lambda *args: FakeEvent(False, int(args[-1])))
    assert cover.covered_ns(NO_DEVICE, lambda: []) == (1000, True)
    assert spin.rounds == cover.FIRST_ROUNDS * 4  # kept: the device still covers
    assert rounds == [cover.FIRST_ROUNDS, cover.FIRST_ROUNDS * 2]
