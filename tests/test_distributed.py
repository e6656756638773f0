"""Distributed products over MPI (clspmv.distributed): the test suite launches
``mpiexec -n 2``, ``-n 3`` and ``-n 4`` itself, each running every case of
``distributed_worker.py`` once (PoCL limited to one thread per rank), with a timeout so that a
deadlock fails instead of hanging. Each case is reported as its own test.

Cases (per rank count): every mode x partition x format pair (default, ell/coo) x dtype on a
matrix with uneven rows, a dense row and a dense column, against scipy under the per-row bound of
oracle.py (matvec with beta 0 and with alpha/beta, rmatvec likewise); uneven explicit blocks,
a rank with zero rows, a block-diagonal matrix (no rank has non-local columns), rectangular
matrices (tall and wide), an all-zero and a 0x0 matrix, a Poisson matrix, partition by row
weights, each in every mode; the matrix given on the root rank only (rank 0 and the last rank);
changing the mode of a built matrix; pyopencl vectors in and out; matvec_global/rmatvec_global;
CG (plain and Jacobi) and BiCGStab reaching scipy's residual in about scipy's iterations; one
rank failing at construction (unknown format, unknown device, root without a matrix) raising
DistributedError on every rank; timings, exchanged bytes and the model's costs.

Besides: one launch of 2 ranks on the Oclgrind simulator; the partition, the model and the device
per local rank (no MPI); task mode's fallback without thread support.
"""

from __future__ import annotations

import os
from functools import cache

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

from distributed_worker import (
    case_names,
    poisson,
    stacked_matrix,
    time_offsets,
    uneven,
)
from mpi_launch import Launched, assert_case_passed, launch

RANKS = (2, 3, 4)
LAUNCH_TIMEOUT = 420
"""Seconds one mpiexec launch may take (all its cases; the first launch also builds kernels)."""


@cache
def _launch(ranks: int) -> dict[str, object]:
    return _run_worker(ranks).results


def _run_worker(ranks: int, *args: str, **extra_env: str) -> Launched:
    """``mpiexec -n ranks distributed_worker.py args``."""
    return launch("distributed_worker.py", ranks, LAUNCH_TIMEOUT, *args, env_updates=extra_env)


@pytest.mark.slow
@pytest.mark.parametrize("ranks,case", [(n, c) for n in RANKS for c in case_names(n)],
                         ids=[f"n{n}-{c}" for n in RANKS for c in case_names(n)])
def test_distributed_case(ranks: int, case: str) -> None:
    assert_case_passed(_launch(ranks), case, ranks)


@pytest.mark.slow
def test_distributed_under_oclgrind() -> None:
    """Two ranks on the Oclgrind simulator, every mode, with its memory-access, data-race and
    API checks. Not its uninitialised-value check: Oclgrind keeps the shadow state of a released
    buffer for the next one in its slot (see oclgrind_check.SimulatorMemory), which makes a
    product with beta = 1 after one with beta = 0 look like a read of uninitialised y, with or
    without MPI."""
    import clspmv
    from clspmv.device import SIMULATOR

    if not any(d.platform == SIMULATOR for d in clspmv.devices()):
        message = 'no Oclgrind platform: pip install "clspmv[oclgrind]"'
        if os.environ.get("CLSPMV_REQUIRE_OCLGRIND") == "1":
            pytest.fail(message + " (CLSPMV_REQUIRE_OCLGRIND=1)")
        pytest.skip(message)
    from oclgrind_check import diagnostics

    results, stderr = _run_worker(2, "--oclgrind", OCLGRIND_CHECK_API="1",
                                  OCLGRIND_DATA_RACES="1")
    assert results and all(v is None for v in results.values()), results
    found = diagnostics(stderr)
    assert not found, "Oclgrind reports:\n\n" + "\n\n".join(found[:5])


# -- no MPI launch needed ------------------------------------------------------------------
def test_balanced_offsets() -> None:
    from clspmv.distributed import balanced_offsets, row_offsets

    assert balanced_offsets(np.ones(10), 2).tolist() == [0, 5, 10]
    assert balanced_offsets(np.ones(3), 5).tolist() == [0, 1, 1, 2, 2, 3]
    assert balanced_offsets(np.zeros(4), 2).tolist() == [0, 2, 4]
    assert balanced_offsets(np.zeros(0), 3).tolist() == [0, 0, 0, 0]
    # one heavy row takes a block of its own
    assert balanced_offsets(np.array([1, 1, 100, 1, 1.0]), 2).tolist() in ([0, 2, 5],
                                                                           [0, 3, 5])
    nnz = np.diff(uneven().indptr)
    o = row_offsets(nnz, 3, "nnz")
    shares = [nnz[o[k]:o[k + 1]].sum() + o[k + 1] - o[k] for k in range(3)]
    assert max(shares) - min(shares) <= nnz.max() + 1
    assert row_offsets(nnz, 4, "rows").tolist() == [0, 15, 30, 46, 61]
    with pytest.raises(ValueError, match="partition must be one of"):
        row_offsets(nnz, 2, "cols")
    with pytest.raises(ValueError, match="one weight per row"):
        row_offsets(nnz, 2, np.ones(3))
    with pytest.raises(ValueError, match="finite and >= 0"):
        balanced_offsets(np.array([1.0, -1.0]), 2)


def _block_seconds(A: sp.csr_matrix, offsets: np.ndarray, device, cal) -> np.ndarray:
    """Predicted kernel seconds of each block (the fastest format of each, as auto takes)."""
    from clspmv.model import features
    from clspmv.model.predict import predict_features

    out = []
    for a, b in zip(offsets[:-1], offsets[1:], strict=True):
        preds = predict_features(features(A[int(a):int(b)], device.simd_width), cal,
                                 min(256, device.max_work_group_size))
        out.append(min(p.kernel_s for p in preds.values() if p.kernel_s is not None))
    return np.array(out)


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_time_partition_balances_predicted_time(device, ranks: int) -> None:
    """Stencil rows stacked on power-law rows under the fixture calibration: blocks of equal
    entries differ in predicted time by 27-50 %; partition="time" (as the ranks compute it)
    cuts them contiguous, covering every row, with a smaller spread (not none: the weights
    leave out the longest row's critical path, a power-law hub's here, and block features are
    sampled estimates)."""
    from clspmv.distributed import row_offsets

    A = stacked_matrix()
    cal = fixture_calibration(device)
    timed = time_offsets(A, ranks, device, cal)
    by_nnz = row_offsets(np.diff(A.indptr), ranks, "nnz")
    assert timed[0] == 0 and timed[-1] == A.shape[0] and (np.diff(timed) > 0).all()
    spread = {name: t.max() / t.min() for name, t in (
        ("time", _block_seconds(A, timed, device, cal)),
        ("nnz", _block_seconds(A, by_nnz, device, cal)))}
    assert spread["nnz"] > 1.2, spread  # the case is one where entries mislead
    assert spread["time"] < spread["nnz"] - 0.05, spread
    if ranks == 2:  # two thirds of the imbalance gone at least
        assert spread["time"] - 1 < (spread["nnz"] - 1) / 3, spread


def test_row_weights_follow_the_named_format(device) -> None:
    """A named local format weighs rows by its own model; every weight is finite and >= 0, and
    rows of one structure weigh in proportion to their entries plus one."""
    from clspmv.distributed.predicted import row_weights

    A = stacked_matrix()
    cal = fixture_calibration(device)
    auto, scalar = row_weights(A, device, cal), row_weights(A, device, cal, "csr-scalar")
    for w in (auto, scalar):
        assert w.shape == (A.shape[0],) and np.isfinite(w).all() and (w >= 0).all()
    assert not np.allclose(auto, scalar)
    assert row_weights(sp.csr_matrix((0, 5)), device, cal).shape == (0,)
    poisson_rows = row_weights(poisson(16), device, cal)[:256]  # one strip, rows 3..5 long
    lengths = np.diff(poisson(16).indptr)[:256] + 1.0
    assert np.allclose(poisson_rows / poisson_rows.sum(), lengths / lengths.sum())
    with pytest.raises(ValueError, match="partition='time' needs the predicted time"):
        from clspmv.distributed import row_offsets

        row_offsets(np.ones(4), 2, "time")


def test_model_terms_and_modes() -> None:
    from clspmv.distributed import model

    A = poisson(30)
    costs = model.rank_costs(A, 2)
    assert sum(c.local_nnz + c.non_local_nnz for c in costs) == A.nnz
    assert [c.halo for c in costs] == [30, 30] and [c.send for c in costs] == [30, 30]
    assert [c.send_messages for c in costs] == [1, 1]
    # network slow next to the kernels: overlap and task hide it behind the local part (the
    # host waits for the messages while the device computes), at most 2x
    slow_net = model.Machine(device_bandwidth=1e9, staging_bandwidth=1e12,
                             network_bandwidth=1e6, network_latency=0.0)
    t = model.predict(costs, slow_net, resident=True)
    assert t["task"] == pytest.approx(t["overlap"]) and t["task"] < t["vector"]
    assert t["vector"] / t["task"] <= 2.0
    # the exchange longer than the local kernel: only the local kernel is hidden
    c = costs[0]
    parts = model.terms(c, slow_net, True)
    exchange = parts["send_down"] + parts["network"] + parts["halo_up"]
    assert parts["local"] < exchange
    assert model.rank_time(c, slow_net, "task", True) == pytest.approx(
        exchange + parts["non_local"])
    # code balance: entries x (value + index + alpha value) + rows x 2 values
    assert model.kernel_bytes(10, 2, 8, 4, 1.0) == 10 * 20 + 2 * 16
    # a fast network: two ranks help; a very slow one: they do not, and the advice says so
    fast = model.Machine(1e9, 1e12, 1e12, 0.0)
    helps, message = model.more_ranks_help(costs, fast, resident=True)
    assert helps and "faster than one" in message
    crawl = model.Machine(1e9, 1e12, 1e3, 1e-2)
    helps, message = model.more_ranks_help(costs, crawl, resident=True)
    assert not helps and "one device may serve as well" in message


def test_model_scattered_and_ranged_non_local_parts_and_launches() -> None:
    from clspmv.distributed import model

    A = poisson(30)  # 3 ranks of 300 rows: the middle one has 30 border rows at each end
    c = model.rank_costs(A, 3, offsets=[0, 300, 600, 900])[1]
    assert (c.rows, c.non_local_rows, c.non_local_nnz, c.scattered) == (300, 60, 60, True)
    # the kernel over 60 rows, the scratch written, the scatter (scratch, index, y twice)
    assert model.non_local_bytes(c, 1.0) == 60 * 20 + 60 * 8 + 60 * (3 * 8 + 4)
    # 2 ranks: the 30 border rows are one range, added into y at a row offset
    ranged = model.rank_costs(A, 2)[0]
    assert (ranged.rows, ranged.non_local_rows, ranged.scattered) == (450, 30, False)
    assert model.non_local_bytes(ranged, 1.0) == model.kernel_bytes(30, 30, 8, 4, 1.0)
    assert model.launches(ranged, resident=True)["non_local"] == 1
    full = model.RankCosts(rows=30, local_nnz=0, non_local_nnz=30, non_local_rows=30,
                           x_entries=30, send=30, halo=30, send_messages=1, recv_messages=1)
    assert model.non_local_bytes(full, 1.0) == model.kernel_bytes(30, 30, 8, 4, 1.0)
    assert model.launches(c, resident=True) == {
        "local": 1, "non_local": 2, "send_down": 2, "halo_up": 1, "x_up": 0, "y_down": 0,
        "network": 0}
    assert model.launches(c) == {"local": 1, "non_local": 2, "send_down": 0, "halo_up": 1,
                                 "x_up": 1, "y_down": 1, "network": 0}
    assert model.launches(full, resident=True)["non_local"] == 1
    alone = model.one_rank(model.rank_costs(A, 2))
    assert sum(model.launches(alone, resident=True).values()) == 1  # just the local kernel
    # each command adds the launch latency to its term; overlap and task hide the local
    # kernel's launch behind the exchange's three commands (the bytes take no time here)
    base = model.Machine(1e15, 1e15, 1e15, 0.0)
    slow = model.Machine(1e15, 1e15, 1e15, 0.0, launch_latency=1e-3)
    t0, t1 = model.terms(c, base, True), model.terms(c, slow, True)
    assert {k: round((t1[k] - t0[k]) * 1e3, 9) for k in t0} == model.launches(c, True)
    for mode, commands in (("vector", 6), ("overlap", 5), ("task", 5)):
        gap = model.rank_time(c, slow, mode, True) - model.rank_time(c, base, mode, True)
        assert gap == pytest.approx(commands * 1e-3), mode
    single = model.rank_time(alone, slow, "vector", True) - model.rank_time(alone, base,
                                                                            "vector", True)
    assert single == pytest.approx(1e-3)


def test_sharing_scales_the_kernel_terms_only() -> None:
    """Machine.sharing (ranks slowing each other's kernels on one node) multiplies the local
    and non-local kernel terms, not staging, network or launches; one rank alone has none."""
    from dataclasses import replace

    from clspmv.distributed import model

    costs = model.rank_costs(poisson(30), 2)
    base = model.Machine(1e9, 1e10, 1e9, 1e-6, launch_latency=1e-5)
    shared = replace(base, sharing=1.25)
    t0, t1 = model.terms(costs[0], base, True), model.terms(costs[0], shared, True)
    launches = model.launches(costs[0], True)
    for k in t0:
        kernel = t0[k] - launches[k] * base.launch_latency
        expected = t0[k] + (0.25 * kernel if k in ("local", "non_local") else 0.0)
        assert t1[k] == pytest.approx(expected), k
    assert model.alone(shared) == base
    single = model.rank_time(model.one_rank(costs), base, "vector", True)
    times = model.predict(costs, shared, True)
    assert model.speedup(costs, shared, True)[0] == pytest.approx(single / min(times.values()))


def test_effective_bandwidth_inverts_the_local_term() -> None:
    from clspmv.distributed import model

    c = model.rank_costs(poisson(20), 2)[0]
    machine = model.Machine(3e9, 1e10, 1e9, 1e-6)
    seconds = model.terms(c, machine)["local"]
    assert model.effective_bandwidth(c, seconds) == pytest.approx(3e9)
    with pytest.raises(ValueError, match="local_seconds must be > 0"):
        model.effective_bandwidth(c, 0.0)


def test_model_rectangular_and_empty_blocks() -> None:
    from clspmv.distributed import model

    A = sp.random(40, 25, density=0.2, random_state=0, format="csr")
    costs = model.rank_costs(A, 3)
    assert sum(c.rows for c in costs) == 40 and sum(c.x_entries for c in costs) == 25
    assert sum(c.send for c in costs) == sum(c.halo for c in costs)
    costs = model.rank_costs(poisson(5), 3, offsets=[0, 0, 10, 25])
    assert costs[0].rows == 0 and costs[0].send == 0 and costs[0].halo == 0


def test_task_mode_falls_back_without_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("mpi4py")
    from clspmv.distributed import modes

    monkeypatch.setattr(modes, "threads_allowed", lambda: False)
    with pytest.warns(RuntimeWarning, match="using mode='overlap'"):
        assert modes.check_mode("task") == "overlap"
    assert modes.check_mode("vector") == "vector"
    with pytest.raises(ValueError, match="mode must be one of"):
        modes.check_mode("async")


def test_order_of_the_steps_per_mode() -> None:
    """vector: the exchange, then both parts; overlap and task: the local part enqueued before
    the exchange starts (its enqueue would otherwise delay the kernel the exchange hides
    behind), the non-local part last; task's exchange on the thread."""
    pytest.importorskip("mpi4py")
    from clspmv.distributed import modes

    class Recorder:
        def __init__(self) -> None:
            self.calls: list[str] = []

        def __getattr__(self, name: str):
            return lambda: self.calls.append(name)

    expected = {"vector": ["gather", "start", "wait", "local", "non_local"],
                "overlap": ["gather", "local", "start", "wait", "non_local"],
                "task": ["gather", "local", "start", "wait", "non_local"]}
    worker = modes.CommThread()
    try:
        for mode, order in expected.items():
            steps = Recorder()
            modes.run(mode, steps, worker)
            assert steps.calls == order, mode
    finally:
        worker.close()


def test_device_per_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from clspmv.distributed import placement

    gpus = ["gpu0", "gpu1"]
    monkeypatch.setattr(placement, "gpus", lambda: gpus)
    monkeypatch.setattr(placement, "select_device", lambda spec: f"selected {spec}")
    monkeypatch.delenv("CLSPMV_DEVICE", raising=False)
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert placement.choose_device("local-rank", 1, 2) == "gpu1"
        assert placement.choose_device(None, 0, 2) == "gpu0"  # several GPUs: local-rank
        assert placement.choose_device(None, 3, 4) == "gpu1"  # shared; rank 0 warns
        assert placement.choose_device("cpu", 1, 2) == "selected cpu"
    with pytest.warns(RuntimeWarning, match="3 ranks on this node share 2 GPU"):
        assert placement.choose_device("local-rank", 0, 3) == "gpu0"
    monkeypatch.setenv("CLSPMV_DEVICE", "1:0")  # per rank, e.g. from a wrapper script
    assert placement.choose_device(None, 1, 2) == "selected None"
    gpus.pop()
    monkeypatch.delenv("CLSPMV_DEVICE")
    assert placement.choose_device(None, 1, 2) == "selected None"  # one GPU: the default
    gpus.pop()
    assert placement.choose_device("local-rank", 1, 2) == "selected None"  # no GPU: default
