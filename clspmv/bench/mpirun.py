"""What ``clspmv bench --distributed`` needs before its run (:mod:`clspmv.bench.distributed`):
the MPI world, this rank's device (``--device local-rank``), the modes and format pair from the
command line, the output folder (chosen on rank 0: :func:`on_root`) and results that only rank 0
writes. MPI is initialised on first use, never at import (``mpi4py`` is the optional ``mpi``
extra).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from ..device import Device
from .records import Results


def world() -> Any:
    """``MPI.COMM_WORLD`` (initialises MPI on first use)."""
    from mpi4py import MPI

    return MPI.COMM_WORLD


def is_root() -> bool:
    """Whether this process is rank 0 of ``MPI.COMM_WORLD`` (the one that writes)."""
    return world().rank == 0


def modes(text: str) -> list[str]:
    """``vector,overlap,task`` (any of them, comma-separated, no repeats); ValueError naming
    the unknown ones."""
    from ..distributed.modes import MODES

    names = [m.strip() for m in text.split(",") if m.strip()]
    unknown = [m for m in names if m not in MODES]
    if unknown or not names:
        raise ValueError(f"unknown mode {', '.join(map(repr, unknown)) or repr(text)}; choose "
                         f"from {', '.join(MODES)}")
    return list(dict.fromkeys(names))


def partition(text: str | None) -> str:
    """The row partition of ``--partition`` (default ``"auto"``); ValueError naming the valid
    ones for another."""
    from ..distributed.partition import PARTITIONS

    if text is None:
        return "auto"
    if text not in PARTITIONS:
        raise ValueError(f"unknown partition {text!r}; choose from {', '.join(PARTITIONS)}")
    return text


def all_modes() -> list[str]:
    from ..distributed.modes import MODES

    return list(MODES)


def formats_pair(formats: list[str] | str) -> list[str] | None:
    """The (local, non-local) formats from ``--formats``: one name for both parts, two names,
    or ``all`` (the library's default pair: None). ValueError for more than two."""
    if isinstance(formats, str):
        if formats == "all":
            return None
        formats = [formats]
    if len(formats) > 2:
        raise ValueError(f"--distributed takes one format (both parts) or two (local, "
                         f"non-local), got {len(formats)}: {', '.join(formats)}")
    return [formats[0], formats[-1]]


def rank_device(specs: list[str] | None) -> Device:
    """This rank's device for ``--device SPEC`` (collective): ``local-rank`` (GPU
    ``local_rank % gpus`` of each node), any :func:`clspmv.select_device` spec, or none
    (``CLSPMV_DEVICE``, else ``local-rank`` with several GPUs, else the default device). Raises
    on every rank when one rank finds no such device."""
    from ..distributed.collective import agree
    from ..distributed.placement import choose_device, node_rank

    specs = list(specs or [])
    if len(specs) > 1 or "all" in specs:
        raise ValueError("--distributed uses one device per rank: give at most one --device "
                         "(e.g. local-rank, gpu, cpu)")
    comm = world()
    local_rank, local_size = node_rank(comm)
    return agree(comm, "choosing the device",
                 lambda: choose_device(specs[0] if specs else None, local_rank, local_size))


T = TypeVar("T")


def on_root(what: str, step: Callable[[], T]) -> T:
    """``step()`` on rank 0 only, its result sent to every rank (collective); an error there is
    raised on every rank (:func:`clspmv.distributed.collective.agree`), none waits for ever."""
    from ..distributed.collective import agree

    comm = world()
    return comm.bcast(agree(comm, what, lambda: step() if comm.rank == 0 else None), root=0)


class RankResults(Results):
    """The results of a rank other than 0: kept in memory, never written."""

    writes = False

    def save(self) -> None:
        pass


def results_for(out_dir: Path, meta: dict[str, Any]) -> Results:
    """Rank 0's :class:`Results` (written as usual); a :class:`RankResults` on the others."""
    return Results(out_dir, meta) if is_root() else RankResults(out_dir, meta)
