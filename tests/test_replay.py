"""``M @ x`` from numpy replayed on CPU devices (clspmv.replay): every format's replay against
scipy product after product, the products it must leave to the general path, outputs still
held, x written between products, and two threads at once."""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import host_buffers, replay

from oracle import assert_matches

IN = host_buffers.IN_PLACE


@pytest.fixture
def cpu(device):
    if not device.shares_host_pointer:
        pytest.skip("products are replayed where the device uses numpy's memory in place")
    return device


def _matrix() -> sp.csr_matrix:
    A = sp.random(700, 500, density=0.02, format="csr", random_state=11)
    A.setdiag(np.arange(1.0, 501.0))  # a band for dia, long enough rows for every format
    return A.tocsr()


@pytest.mark.parametrize("fmt", clspmv.FORMATS)
def test_every_format_replayed(cpu, dtype, fmt):
    A = _matrix().astype(dtype)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=cpu)
    rng = np.random.default_rng(2)
    for i in range(4):
        x = rng.uniform(-1, 1, 500).astype(dtype)
        y = M @ x
        assert M.last_transfers == {"x": IN, "y": IN}
        assert y.dtype == dtype and y.shape == (700,) and y.ctypes.data % 64 == 0
        assert_matches(y, A, x, dtype)
        if i == 0:  # the first product is recorded, the next ones replay it
            assert isinstance(M._replay, replay.ProductReplay)
            first_events = M.last_events
    assert M.last_events and M.last_events is not first_events
    assert len(M.last_events) == len(first_events)  # the same kernel launches


def test_outputs_held_are_never_reused(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=cpu)
    xs = [np.full(500, float(k)) for k in range(1, 6)]
    ys = [M @ x for x in xs]  # five outputs alive at once: the pool keeps two blocks
    assert len({y.ctypes.data for y in ys}) == 5
    for x, y in zip(xs, ys, strict=True):
        assert_matches(y, A, x, np.float64)


def test_other_products_take_the_general_path(cpu):
    """After a replay is recorded: y given, alpha and beta, a block, other dtypes, strided,
    read-only and list inputs, and 2-D X all still compute their own product."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=cpu)
    x = np.random.default_rng(3).random(500)
    assert_matches(M @ x, A, x, np.float64)
    assert isinstance(M._replay, replay.ProductReplay)
    y0 = np.random.default_rng(4).random(700)
    y = y0.copy()
    assert M.matvec(x, y, alpha=2.0, beta=0.5) is y
    assert_matches(y, A, x, np.float64, alpha=2.0, beta=0.5, y0=y0)
    assert_matches(M.matvec(x, alpha=np.float64(3.0)), A, x, np.float64, alpha=3.0)
    assert_matches(M @ x.astype(np.float32), A, x.astype(np.float32).astype(np.float64),
                   np.float64)
    wide = np.zeros(1000)
    wide[::2] = x
    assert_matches(M @ wide[::2], A, x, np.float64)
    assert M.last_transfers["x"] == host_buffers.COPIED
    frozen = x.copy()
    frozen.flags.writeable = False
    assert_matches(M @ frozen, A, x, np.float64)
    assert_matches(M @ list(x), A, x, np.float64)
    X = np.random.default_rng(5).random((500, 3))
    Y = M @ X
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], np.float64)
    tall = np.zeros(900)
    M.matvec(x, tall, row_offset=100)
    assert_matches(tall[100:800], A, x, np.float64)
    assert not tall[:100].any() and not tall[800:].any()
    with pytest.raises(ValueError, match="x has shape"):
        M @ np.ones(499)


def test_the_recorded_x_is_not_kept(cpu):
    """The replay keeps no buffer of the recorded product's x (which would keep the array)."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="coo", device=cpu)
    x = np.random.default_rng(6).random(500)
    gone = weakref.ref(x)
    y = M @ x
    assert isinstance(M._replay, replay.ProductReplay)
    del x, y
    gc.collect()
    assert gone() is None
    x2 = np.ones(500)
    assert_matches(M @ x2, A, x2, np.float64)


def test_x_written_between_products(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=cpu)
    x = np.ones(500)
    for k in range(4):
        x[:] = k - 1.5  # the same array, new values: each product reads them
        assert_matches(M @ x, A, x.copy(), np.float64)


def test_two_threads_one_matrix(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=cpu)
    M @ np.ones(500)  # recorded: the threads replay
    wrong: list[int] = []

    def products(seed: int) -> None:
        rng = np.random.default_rng(seed)
        for _ in range(20):
            x = rng.random(500)
            y = M @ x
            if np.abs(y - A @ x).max() > 1e-9 * max(1.0, np.abs(A @ x).max()):
                wrong.append(seed)

    threads = [threading.Thread(target=products, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []


def test_no_replay_without_in_place_buffers(cpu, monkeypatch):
    """A device that keeps its own copy of a host buffer (shares_host_pointer False) is never
    replayed: its products need the map after the kernels."""
    monkeypatch.setattr(type(cpu), "shares_host_pointer", property(lambda self: False))
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=cpu)
    for k in range(3):
        x = np.full(500, k + 0.5)
        assert_matches(M @ x, A, x, np.float64)
    assert M._replay is None


def test_unreplayable_launches_refused():
    """A recording with a launch that waits on an event, or without x's or y's buffer, gives
    no replay."""
    x_buf, y_buf, other = object(), object(), object()

    def launch(*args, wait_for=None):
        return replay.Launch(None, (1,), (1,), args, wait_for)

    def made(launches, events=2):
        return replay.replay_of(launches, x_buf, y_buf, [None] * events, None, (1, 1),
                                np.dtype(np.float64), None)

    assert made([launch(x_buf, y_buf), launch(y_buf, other)]) is not None
    assert made([launch(x_buf, y_buf), launch(y_buf, other, wait_for=[object()])]) is None
    assert made([launch(other, y_buf), launch(y_buf, other)]) is None
    assert made([launch(x_buf, other), launch(other)]) is None
    assert made([launch(x_buf, y_buf), launch(y_buf)], events=1) is None
    assert made([], events=0) is None


def test_interrupted_replay_drains_and_lets_go(cpu, drained, monkeypatch):
    """Ctrl-C in a replayed product's wait: the queue is drained before x's and y's buffers go,
    none of them stays in the recorded arguments, and the next product is right."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=cpu)
    x = np.random.default_rng(5).random(500)
    assert_matches(M @ x, A, x, np.float64)
    assert isinstance(M._replay, replay.ProductReplay)

    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(host_buffers, "sync_back", interrupted)
    with pytest.raises(KeyboardInterrupt):
        M @ x
    assert drained == [cpu.queue]
    assert all(args[i] is None for *_, args, x_at, y_at in M._replay._launches
               for i in (*x_at, *y_at))
    monkeypatch.undo()
    assert_matches(M @ x, A, x, np.float64)
    assert M.last_transfers == {"x": IN, "y": IN}
