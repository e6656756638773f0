"""The halo exchange's paths (clspmv.distributed: node_exchange, shared_window, plan): the suite
launches ``mpiexec -n 2``, ``-n 3`` and ``-n 4`` itself, each running every case of
``node_exchange_worker.py`` once (PoCL limited to one thread per rank), with a timeout so that a
deadlock fails instead of hanging. Each case is reported as its own test.

Cases (per rank count), each on the node's shared-memory window (64-byte pieces), on MPI
messages, and mixed (ranks split into simulated nodes of 2 by ``CLSPMV_NODE_SPLIT``): A x and
A^T x, with beta 0 and alpha/beta, numpy and pyopencl vectors, in every mode, against scipy under
the per-row bound of oracle.py, on a square matrix (every rank exchanging with every other),
tall and wide rectangles, empty rows and columns, a rank without rows and one row per rank; the
paths the plan chose and the bytes per path; 50 products in a row with changing x, ranks pausing
at random (slots reused while a reader lags). Besides: a product's timeline; bad and differing
settings; a window that cannot be allocated (``window``: DistributedError everywhere;
``auto``: messages and a warning); a rank that skips a product (a DistributedError naming it
after the plan's timeout, not a hang), through the window and through messages; a rank out of
step in its second product (its product raised and it went on, another alpha, ``rmatvec``
against ``matvec``): a DistributedError on every rank naming both products, at once where the
values arrive; afterwards the matrix refuses products.
"""

from __future__ import annotations

import os
import sys
from functools import cache

import pytest
from node_exchange_worker import case_names

from mpi_launch import assert_case_passed, launch

RANKS = (2, 3, 4)
LAUNCH_TIMEOUT = 300
"""Seconds one mpiexec launch may take (all its cases)."""
SETTINGS = ("CLSPMV_EXCHANGE", "CLSPMV_NODE_SPLIT", "CLSPMV_EXCHANGE_CHUNK",
            "CLSPMV_EXCHANGE_WHOLE")
"""The environment variables of the exchange (:func:`clspmv.distributed.node_exchange
.read_setting`)."""


@cache
def _launch(ranks: int) -> dict[str, object]:
    """Results of ``mpiexec -n ranks node_exchange_worker.py`` (the paths set per case by the
    worker, none from this environment)."""
    return launch("node_exchange_worker.py", ranks, LAUNCH_TIMEOUT,
                  env_updates={"CLSPMV_CALIBRATE": "0"}, drop=SETTINGS).results


@pytest.mark.slow
@pytest.mark.parametrize("ranks,case", [(n, c) for n in RANKS for c in case_names(n)],
                         ids=[f"n{n}-{c}" for n in RANKS for c in case_names(n)])
def test_node_exchange_case(ranks: int, case: str) -> None:
    assert_case_passed(_launch(ranks), case, ranks)


# -- no MPI launch needed ------------------------------------------------------------------
def test_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from clspmv.distributed.node_exchange import DEFAULT_CHUNK, Setting, read_setting

    for name in SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert read_setting() == Setting("auto", None, DEFAULT_CHUNK)
    assert read_setting("messages").exchange == "messages"
    monkeypatch.setenv("CLSPMV_EXCHANGE", "window")
    monkeypatch.setenv("CLSPMV_NODE_SPLIT", "2")
    monkeypatch.setenv("CLSPMV_EXCHANGE_CHUNK", "0")
    assert read_setting() == Setting("window", 2, 0)
    assert read_setting("auto").exchange == "auto"  # the argument wins
    with pytest.raises(ValueError, match="must be one of 'auto', 'messages', 'window', got "
                                         "'Window'"):
        read_setting("Window")
    monkeypatch.setenv("CLSPMV_NODE_SPLIT", "-1")
    with pytest.raises(ValueError, match="CLSPMV_NODE_SPLIT must be an integer >= 1"):
        read_setting()


def test_pieces_cut_each_peer_and_fit_the_progress_word() -> None:
    from clspmv.distributed.node_exchange import PIECE_BITS, _cut, piece_values

    assert piece_values(1000, 8, 64) == 8
    assert piece_values(1000, 8, 0) == 1000
    assert piece_values(0, 8, 0) == 1
    assert piece_values(1 << 30, 4, 4) == -(-(1 << 30) // ((1 << PIECE_BITS) - 1))
    assert _cut(20, 8) == [(0, 8), (8, 16), (16, 20)]
    assert _cut(0, 8) == []


def _kernel_populates() -> bool:
    """Linux 5.14 or later (MADV_POPULATE_WRITE)."""
    import platform

    if not sys.platform.startswith("linux"):
        return False
    major, minor = (int(v) for v in platform.release().split(".")[:2])
    return (major, minor) >= (5, 14)


@pytest.mark.skipif(not _kernel_populates(), reason="needs MADV_POPULATE_WRITE (Linux 5.14)")
def test_prefault_raises_where_memory_cannot_be_backed() -> None:
    """A shared mapping whose second page lies past the end of its file (as a full /dev/shm
    leaves one): prefault raises OSError instead of the SIGBUS a first touch would bring; a
    mapping that can be backed keeps its values."""
    import mmap

    import numpy as np

    from clspmv.distributed.shared_window import PAGE, prefault

    fd = os.memfd_create("clspmv-prefault-test")
    try:
        os.ftruncate(fd, 2 * PAGE)
        shared = mmap.mmap(fd, 2 * PAGE, flags=mmap.MAP_SHARED)
        memory = np.frombuffer(shared, np.uint8)
        memory[:] = 7
        prefault(memory)
        assert (memory == 7).all()
        os.ftruncate(fd, PAGE)  # the second page now has nothing behind it
        with pytest.raises(OSError, match="cannot back 8192 bytes of shared memory"):
            prefault(memory)
        del memory
        shared.close()
    finally:
        os.close(fd)


def test_graph_order_groups_each_part_in_its_original_order() -> None:
    import numpy as np

    from clspmv.distributed.graph import order

    p, offsets = order(np.array([2, 0, 1, 0, 2, 2]), 4)
    assert p.tolist() == [1, 3, 2, 0, 4, 5]
    assert offsets.tolist() == [0, 2, 3, 6, 6]  # part 3 empty: a rank without rows


def test_untimed_records_nothing() -> None:
    from clspmv.distributed.timeline import UNTIMED

    with UNTIMED.span("wait"):
        UNTIMED.mark("window piece published")
    assert UNTIMED.event("local", None) is None
    assert UNTIMED.spans == [] and UNTIMED.summary() == []


def test_timeline_summary_adds_up_each_step() -> None:
    from clspmv.distributed.timeline import Span, Timeline

    t = Timeline()
    t.spans += [Span("wait", 0.001, 0.003, "MainThread"), Span("local", 0.0005, 0.001, "x"),
                Span("wait", 0.004, 0.0045, "MainThread")]
    summary = t.summary()
    assert [(s["where"], s["name"], s["count"]) for s in summary] == [
        ("host", "local", 1), ("host", "wait", 2)]
    wait = summary[1]
    assert (round(wait["first"], 6), round(wait["last"], 6), round(wait["busy"], 6)) == (
        1.0, 4.5, 2.5)
