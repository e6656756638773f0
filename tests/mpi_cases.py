"""The driver the MPI workers share (``distributed_worker.py``, ``node_exchange_worker.py``,
``distributed_agreement_worker.py``, launched by :func:`mpi_launch.launch`): every rank runs the
same cases in the same order; a case passes when it passes on every rank (each ends with an
``allgather`` of the outcome, so the ranks stay in step). Rank 0 shows each case's outcome as it
ends and finally prints one line ``RESULTS <json>`` mapping case names to None (passed) or the
errors per rank. Besides, the check of an expected error (:func:`expect_error`). Imports
neither pytest nor MPI (the workers pass their communicator)."""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TextIO

Case = Callable[[Any], None]
"""A case: a function of the communicator it runs on."""


def selected(cases: Mapping[str, Case], wanted: Iterable[str]) -> dict[str, Case]:
    """The cases whose name contains one of ``wanted`` (every case when none is)."""
    wanted = list(wanted)
    return {name: case for name, case in cases.items()
            if not wanted or any(w in name for w in wanted)}


def expect_error(error: type[BaseException], call: Callable[[], object], *needles: str) -> None:
    """``call()`` raises ``error`` (on this rank) whose message holds every needle."""
    try:
        call()
    except error as err:
        for needle in needles:
            assert needle in str(err), f"{needle!r} not in {err}"
    else:
        raise AssertionError(f"no {error.__name__}: {needles}")


def _error_of(call: Callable[..., None], *args: Any, limit: int, prefix: str = "") -> str | None:
    """None when ``call(*args)`` returns, else its traceback (``limit`` frames) after
    ``prefix``."""
    try:
        call(*args)
    except Exception:  # reported, then the next case
        return prefix + traceback.format_exc(limit=limit)
    return None


def run_cases(world: Any, cases: Mapping[str, Case], *, limit: int = 8,
              progress: TextIO | None = None, own_comm: bool = False,
              after: Callable[[str, Any], None] | None = None) -> None:
    """Run ``cases`` on the communicator ``world`` and report them (see the module docstring);
    each error is a traceback of ``limit`` frames, the progress goes to ``progress`` (standard
    error when None). ``own_comm``: each case runs on a duplicate of ``world`` (never freed: a
    case may leave a collective pending there). ``after(name, comm)``: run once a case passed on
    every rank, on the case's communicator; its failure counts as the case's ("after the
    case: ")."""
    results: dict[str, object] = {}
    for name, case in cases.items():
        comm = world.Dup() if own_comm else world
        error = _error_of(case, comm, limit=limit)
        if after is not None and not any(world.allgather(error)):
            error = _error_of(after, name, comm, limit=limit, prefix="after the case: ")
        errors = world.allgather(error)
        failed = {rank: e for rank, e in enumerate(errors) if e is not None}
        results[name] = failed or None
        if world.rank == 0:
            print(f"{name}: {'FAILED' if failed else 'ok'}", file=progress or sys.stderr,
                  flush=True)
    if world.rank == 0:
        print("RESULTS " + json.dumps(results), flush=True)
