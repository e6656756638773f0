"""The distributed model's node-local window path (clspmv.distributed.model, issue 45 item 5):
the values each rank copies through the node's shared-memory window as the plan lays them out
(whole x slices), the window's time from given inputs, and the advice it gives; no MPI, no
device."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv.bench.generators import random
from clspmv.distributed import model
from clspmv.distributed.node_exchange import Setting

WINDOW = Setting("window", None, 4 << 20, 0.6)


def _whole_and_picked() -> sp.csr_matrix:
    """10 x 10, 2 ranks of 5 rows: row 5 (rank 1) reads columns 0-2, 3/5 of rank 0's x slice
    (a whole slice at the share 0.6); row 0 (rank 0) reads column 9, 1/5 of rank 1's (picked)."""
    A = sp.identity(10, format="lil")
    A[5, [0, 1, 2]] = 1.0
    A[0, 9] = 1.0
    return A.tocsr()


def test_window_layout_mirrors_the_plan() -> None:
    A = _whole_and_picked()
    one_value = Setting("window", None, 8, 0.6)  # pieces of one float64
    r0, r1 = model.rank_costs(A, 2, offsets=[0, 5, 10], ranks_per_node=2, setting=one_value)
    # rank 0 writes its whole slice (5 values, 5 pieces) and reads 1 picked value of rank 1
    assert (r0.send, r0.halo, r0.window_send, r0.window_halo) == (3, 1, 3, 1)
    assert (r0.window_down, r0.window_up, r0.window_pieces) == (5, 1, 5)
    assert (r1.window_down, r1.window_up, r1.window_pieces) == (1, 5, 5)
    assert (r0.send_messages, r0.recv_messages, r0.message_send, r0.message_halo) == (0, 0, 0, 0)
    # never whole slices (a share above 1): the 3 values picked; one piece per peer (chunk 0)
    picked = model.rank_costs(A, 2, offsets=[0, 5, 10], ranks_per_node=2,
                              setting=Setting("window", None, 0, 2.0))
    assert [(c.window_down, c.window_up, c.window_pieces) for c in picked] == [(3, 1, 1),
                                                                              (1, 3, 1)]
    # messages asked for, or each rank a node of its own: no window, one message each way
    for costs in (model.rank_costs(A, 2, offsets=[0, 5, 10], ranks_per_node=2,
                                   setting=Setting("messages", None, 0, 0.6)),
                  model.rank_costs(A, 2, offsets=[0, 5, 10], setting=WINDOW)):
        assert [(c.window_send, c.window_down, c.window_up, c.send_messages, c.recv_messages)
                for c in costs] == [(0, 0, 0, 1, 1), (0, 0, 0, 1, 1)]
    # 2 nodes of 2 ranks: the peer of the same node by window, the other by message
    B = sp.csr_matrix(np.ones((4, 4)))
    costs = model.rank_costs(B, 4, offsets=[0, 1, 2, 3, 4], ranks_per_node=2,
                             setting=Setting("window", None, 0, 2.0))
    assert [(c.window_send, c.message_send, c.send_messages, c.recv_messages)
            for c in costs] == [(1, 2, 2, 2)] * 4


def _window_rank() -> model.RankCosts:
    """A rank sending 1000 values and receiving 1000, all through the window: 1250 values
    copied down (its whole slice) and 1250 up, 3 pieces the longer way."""
    return model.RankCosts(rows=1000, local_nnz=4000, non_local_nnz=1000, non_local_rows=1000,
                           x_entries=1250, send=1000, halo=1000, send_messages=0,
                           recv_messages=0, window_send=1000, window_halo=1000,
                           window_down=1250, window_up=1250, window_pieces=3)


def test_window_time_from_given_inputs() -> None:
    c = _window_rank()
    # a network that would take 1000 s: the window's peers never touch it
    m = model.Machine(device_bandwidth=1e9, staging_bandwidth=1e8, network_bandwidth=8.0,
                      network_latency=1.0, launch_latency=1e-5)
    window = (1250 + 1250) * 8 / 1e8 + 3 * 1e-5  # both directions' bytes, 3 pieces: 230 us
    assert model.window_seconds(c, m) == pytest.approx(window)
    t = model.terms(c, m, resident=True)
    assert t["network"] == t["send_down"] == t["halo_up"] == 0.0
    local = (4000 * 20 + 2 * 1000 * 8) / 1e9 + 1e-5  # 96 us and its launch
    non_local = (1000 * 20 + 2 * 1000 * 8) / 1e9 + 1e-5  # 36 us and its launch
    assert t["local"] == pytest.approx(local) and t["non_local"] == pytest.approx(non_local)
    assert model.rank_time(c, m, "vector", True) == pytest.approx(local + window + non_local)
    for mode in ("overlap", "task"):  # the window's copies longer than the local kernel
        assert model.rank_time(c, m, mode, True) == pytest.approx(window + non_local)
    # the copies shorter than the local kernel: hidden behind it
    quick = model.Machine(1e9, 1e12, 8.0, 1.0, launch_latency=1e-5)
    assert model.predict([c, c], quick, True)["task"] == pytest.approx(local + non_local)


def test_host_overhead_added_to_every_mode() -> None:
    """The host's share of one product: measured one-rank times less the model's device time,
    median over the modes, never negative; added once to each mode's time."""
    from dataclasses import replace

    c = _window_rank()
    m = model.Machine(device_bandwidth=1e9, staging_bandwidth=1e8, network_bandwidth=8.0,
                      network_latency=1.0, launch_latency=1e-5)
    one = model.one_rank([c, c])
    device = {mode: model.rank_time(one, m, mode, True) for mode in model.MODES}
    measured = {"vector": device["vector"] + 40e-6, "overlap": device["overlap"] + 50e-6,
                "task": device["task"] + 90e-6}
    assert model.host_overhead(one, m, measured, True) == pytest.approx(50e-6)
    assert model.host_overhead(one, m, {k: v - 1.0 for k, v in measured.items()}, True) == 0.0
    with_host = replace(m, host_overhead=50e-6)
    for mode in model.MODES:
        assert model.rank_time(c, with_host, mode, True) == pytest.approx(
            model.rank_time(c, m, mode, True) + 50e-6)


def test_messages_and_window_at_once() -> None:
    """Half the values by message: the host stages those down and up around the network while
    the window's copies run beside the messages (the longer of the two counts)."""
    c = model.RankCosts(rows=10, local_nnz=0, non_local_nnz=10, non_local_rows=10,
                        x_entries=10, send=200, halo=200, send_messages=1, recv_messages=1,
                        window_send=100, window_halo=100, window_down=100, window_up=100,
                        window_pieces=1)
    m = model.Machine(1e15, 1e8, 1e7, 1e-6)
    t = model.terms(c, m, resident=True)
    assert t["send_down"] == pytest.approx(100 * 8 / 1e8)
    assert t["network"] == pytest.approx(1e-6 + 100 * 8 / 1e7)  # longer than the window's
    exchange = t["send_down"] + t["network"] + t["halo_up"]
    assert model.rank_time(c, m, "task", True) == pytest.approx(exchange + t["non_local"])
    fast_net = model.Machine(1e15, 1e8, 1e12, 0.0)
    exchange = 2 * 100 * 8 / 1e8 + model.window_seconds(c, fast_net)
    assert model.rank_time(c, fast_net, "task", True) == pytest.approx(exchange)


def test_advice_window_pays_messages_do_not() -> None:
    """A random matrix at 2 ranks of one node: every rank needs 99 % of the other's x slice.
    Through MPI messages (3.35 GB/s) one device serves as well; through the window (whole
    slices at the pinned 54 GB/s) two ranks pay, as measured (1.46x)."""
    A = random(n=20_000, k=10)  # the measured gen:random:n=20000000,k=10, 1000x smaller
    for setting, helps in ((WINDOW, True), (Setting("messages", None, 0, 0.6), False)):
        costs = model.rank_costs(A, 2, ranks_per_node=2, setting=setting)
        scale = 1000  # the measured matrix has 1000x the rows: as many bytes per second
        m = model.Machine(678e9 / scale, 54.2e9 / scale, 3.35e9 / scale, 1.2e-6,
                          launch_latency=16.2e-6)
        ok, message = model.more_ranks_help(costs, m, resident=True)
        assert ok is helps, message
        s, _ = model.speedup(costs, m, resident=True)
        if helps:
            assert message == f"2 ranks are predicted {s:.2f}x faster than one (mode 'overlap')"
            assert 1.1 <= s < 2
        else:
            assert message.startswith(f"2 ranks are predicted only {s:.2f}x faster than one")
            assert message.endswith("one device may serve as well") and s < 0.5
