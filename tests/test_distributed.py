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

Besides: the partition and the model (no MPI), and task mode's fallback without thread support.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from distributed_worker import case_names, poisson, uneven

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
RANKS = (2, 3, 4)
LAUNCH_TIMEOUT = 420
"""Seconds one mpiexec launch may take (all its cases; the first launch also builds kernels)."""


def _mpiexec() -> str:
    pytest.importorskip("mpi4py", reason='needs mpi4py: pip install "clspmv[mpi]"')
    found = shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable)
                                                                         .parent))
    if found is None:
        pytest.fail('mpi4py is installed but no mpiexec was found: pip install "clspmv[mpi]" '
                    "(the mpich wheel provides it)")
    return found


@cache
def _launch(ranks: int) -> dict[str, object]:
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    spec = env.get("CLSPMV_TEST_DEVICES", "all").strip()
    if spec not in ("", "all"):
        env["CLSPMV_DEVICE"] = spec
    command = [_mpiexec(), "-n", str(ranks), sys.executable, str(TESTS / "distributed_worker.py")]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=LAUNCH_TIMEOUT, cwd=TESTS)
    except subprocess.TimeoutExpired as err:
        progress = (err.stderr or b"")
        progress = progress.decode() if isinstance(progress, bytes) else progress
        pytest.fail(f"mpiexec -n {ranks} did not finish in {LAUNCH_TIMEOUT} s (a deadlock?); "
                    f"its progress:\n{progress[-3000:]}")
    for line in done.stdout.splitlines():
        if line.startswith("RESULTS "):
            return json.loads(line[len("RESULTS "):])
    pytest.fail(f"mpiexec -n {ranks} exited with {done.returncode} without results:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("ranks,case", [(n, c) for n in RANKS for c in case_names(n)],
                         ids=[f"n{n}-{c}" for n in RANKS for c in case_names(n)])
def test_distributed_case(ranks: int, case: str) -> None:
    results = _launch(ranks)
    assert case in results, f"the worker did not run {case!r}"
    failed = results[case]
    if failed:
        report = "\n".join(f"rank {rank}:\n{error}" for rank, error in failed.items())
        pytest.fail(f"{case} failed on {len(failed)} of {ranks} ranks:\n{report}")


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


def test_model_terms_and_modes() -> None:
    from clspmv.distributed import model

    A = poisson(30)
    costs = model.rank_costs(A, 2)
    assert sum(c.local_nnz + c.non_local_nnz for c in costs) == A.nnz
    assert [c.halo for c in costs] == [30, 30] and [c.send for c in costs] == [30, 30]
    assert [c.send_messages for c in costs] == [1, 1]
    # network slow next to the kernels: task hides it behind the local part, at most 2x
    slow_net = model.Machine(device_bandwidth=1e9, staging_bandwidth=1e12,
                             network_bandwidth=1e6, network_latency=0.0)
    t = model.predict(costs, slow_net, resident=True)
    assert t["task"] < t["vector"] == pytest.approx(t["overlap"])
    assert t["vector"] / t["task"] <= 2.0
    hidden = model.Machine(1e9, 1e12, 1e6, 0.0, async_progress=1.0)
    assert model.predict(costs, hidden, True)["overlap"] == pytest.approx(t["task"])
    # code balance: entries x (value + index + alpha value) + rows x 2 values
    assert model.kernel_bytes(10, 2, 8, 4, 1.0) == 10 * 20 + 2 * 16
    # a fast network: two ranks help; a very slow one: they do not, and the advice says so
    fast = model.Machine(1e9, 1e12, 1e12, 0.0)
    helps, message = model.more_ranks_help(costs, fast, resident=True)
    assert helps and "faster than one" in message
    crawl = model.Machine(1e9, 1e12, 1e3, 1e-2)
    helps, message = model.more_ranks_help(costs, crawl, resident=True)
    assert not helps and "one device may serve as well" in message


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
