"""Launching the MPI workers of the tests (``distributed_worker.py``, ``node_exchange_worker.py``,
``distributed_agreement_worker.py``; their side is :mod:`mpi_cases`): the ``mpiexec`` to run,
one launch of a worker with a bound of time, and the check of one case of its results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


def mpiexec() -> str:
    """The one on PATH, else the one beside this Python (the mpich wheel of the ``mpi`` extra
    installs it into the environment's ``bin/``); skips without mpi4py, fails when mpi4py is
    there but no mpiexec is."""
    pytest.importorskip("mpi4py", reason='needs mpi4py: pip install "clspmv[mpi]"')
    found = shutil.which("mpiexec") or shutil.which("mpiexec", path=str(Path(sys.executable)
                                                                         .parent))
    if found is None:
        pytest.fail('mpi4py is installed but no mpiexec was found: pip install "clspmv[mpi]" '
                    "(the mpich wheel provides it)")
    return found


class Launched(NamedTuple):
    """What a worker's launch left: its ``RESULTS`` (case name -> None or the errors per rank)
    and its standard error."""

    results: dict[str, object]
    stderr: str


def launch(worker: str, ranks: int, timeout: float, *args: str,
           env_updates: dict[str, str] | None = None, drop: tuple[str, ...] = ()) -> Launched:
    """Run ``mpiexec -n ranks python tests/<worker> args`` (PoCL limited to one thread per rank,
    the device of ``CLSPMV_TEST_DEVICES``, ``env_updates`` set and the variables of ``drop``
    unset) and read the ``RESULTS <json>`` line rank 0 prints; fails the test when the launch
    takes more than ``timeout`` seconds (a deadlock, or a rank left waiting: its progress is
    shown) or ends without results."""
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1", **(env_updates or {}))
    for name in drop:
        env.pop(name, None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(TESTS), env.get("PYTHONPATH", "")])
    spec = env.get("CLSPMV_TEST_DEVICES", "all").strip()
    if spec not in ("", "all"):
        env["CLSPMV_DEVICE"] = spec
    command = [mpiexec(), "-n", str(ranks), sys.executable, str(TESTS / worker), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env,
                              timeout=timeout, cwd=TESTS)
    except subprocess.TimeoutExpired as err:
        progress = err.stderr or b""
        progress = progress.decode() if isinstance(progress, bytes) else progress
        pytest.fail(f"mpiexec -n {ranks} {worker} did not finish in {timeout} s (a deadlock, "
                    f"or a rank left waiting?); its progress:\n{progress[-3000:]}")
    for line in done.stdout.splitlines():
        if line.startswith("RESULTS "):
            return Launched(json.loads(line[len("RESULTS "):]), done.stderr)
    pytest.fail(f"mpiexec -n {ranks} {worker} exited with {done.returncode} without results:\n"
                f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}")


def assert_case_passed(results: dict[str, object], case: str, ranks: int) -> None:
    """Fail unless the launch's ``results`` hold ``case`` as passed on every rank; else show
    each failing rank's error."""
    assert case in results, f"the worker did not run {case!r}"
    failed = results[case]
    if failed:
        report = "\n".join(f"rank {rank}:\n{error}" for rank, error in failed.items())
        pytest.fail(f"{case} failed on {len(failed)} of {ranks} ranks:\n{report}")
