"""Cases of the halo exchange's paths (the node's shared-memory window, MPI messages, both),
run under ``mpiexec -n N python node_exchange_worker.py [case substrings]``.

Every rank runs the same cases in the same order (:func:`mpi_cases.run_cases`); rank 0 prints
one line ``RESULTS <json>`` mapping case names to None (passed) or the errors per rank.
tests/test_node_exchange.py launches this script and imports :func:`case_names`.

The paths are chosen by the environment the plan reads (set here around each matrix's
construction, alike on every rank): ``window`` (pieces of 64 bytes: many per peer),
``messages``, and ``mixed`` (``auto`` with ``CLSPMV_NODE_SPLIT``: nodes of 2 ranks, so that with
3 and 4 ranks some peers share a node and others do not; with 2 ranks each is a node of its own).
"""

from __future__ import annotations

import importlib.util
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import scipy.sparse as sp

from mpi_cases import expect_error, run_cases, selected

MODES = ("vector", "overlap", "task")
EXCHANGES = ("window", "whole", "messages", "mixed")
"""``window`` (values picked per peer), ``whole`` (the window, every peer of the node reading the
writer's whole x slice), ``messages``, ``mixed`` (simulated nodes; whole slices where a peer
needs 60 % of one, the default)."""
REPEATS = 50


def split(size: int) -> int:
    """Ranks per simulated node of the ``mixed`` exchange."""
    return 2 if size > 2 else 1


def settings(exchange: str, size: int) -> dict[str, str]:
    """The environment of one exchange."""
    return {"window": {"CLSPMV_EXCHANGE": "window", "CLSPMV_EXCHANGE_CHUNK": "64",
                       "CLSPMV_EXCHANGE_WHOLE": "2"},
            "whole": {"CLSPMV_EXCHANGE": "window", "CLSPMV_EXCHANGE_CHUNK": "64",
                      "CLSPMV_EXCHANGE_WHOLE": "0"},
            "messages": {"CLSPMV_EXCHANGE": "messages"},
            "mixed": {"CLSPMV_EXCHANGE": "auto", "CLSPMV_NODE_SPLIT": str(split(size)),
                      "CLSPMV_EXCHANGE_CHUNK": "0"}}[exchange]


@contextmanager
def environment(**values: str) -> Iterator[None]:
    """``os.environ`` with ``values`` set, the variables of the exchange unset otherwise."""
    names = ("CLSPMV_EXCHANGE", "CLSPMV_NODE_SPLIT", "CLSPMV_EXCHANGE_CHUNK",
             "CLSPMV_EXCHANGE_WHOLE")
    old = {name: os.environ.pop(name, None) for name in names}
    os.environ.update(values)
    try:
        yield
    finally:
        for name in names:
            os.environ.pop(name, None)
            if old[name] is not None:
                os.environ[name] = old[name]


def random_square(n: int = 240, seed: int = 1) -> sp.csr_matrix:
    """Random entries plus the diagonal: every rank exchanges with every other."""
    A = sp.random(n, n, density=0.04, random_state=seed, format="csr") + sp.identity(n)
    return sp.csr_matrix(A)


def empty_rows(n: int = 90) -> sp.csr_matrix:
    """Every third row and every fifth column empty."""
    A = random_square(n, 2).tolil()
    A[::3, :] = 0
    A[:, ::5] = 0
    A = A.tocsr()
    A.eliminate_zeros()
    return A


def matrices(size: int) -> dict[str, tuple[sp.csr_matrix, dict]]:
    """name -> (matrix, from_scipy arguments)."""
    rng = np.random.default_rng(5)
    zero_rows = [0, 0] + list(np.linspace(0, 90, size).round().astype(int)[1:])
    return {
        "square": (random_square(), {}),
        "tall": (sp.random(45, 31, density=0.15, random_state=4, format="csr"), {}),
        "wide": (sp.random(13, 50, density=0.2, random_state=5, format="csr"), {}),
        "empty-rows": (empty_rows(), {}),
        "zero-row-rank": (empty_rows(), {"row_offsets": zero_rows}),
        "one-row-per-rank": (sp.csr_matrix(rng.standard_normal((size, size))),
                             {"partition": "rows"}),
    }


def grid(side: int = 12) -> sp.csr_matrix:
    """A 2-D Poisson matrix: each rank sends its first and last grid rows, one run of
    consecutive x entries per peer (copied straight from pyopencl x, without a gather)."""
    return sp.csr_matrix(sp.diags([4.0, -1, -1, -1, -1], [0, -1, 1, -side, side],
                                  (side ** 2, side ** 2)))


def cases(size: int) -> dict[str, Callable[[object], None]]:
    """Every case for ``size`` ranks: name -> function(comm)."""
    out: dict[str, Callable] = {}
    for exchange in EXCHANGES:
        for label, (A, kwargs) in matrices(size).items():
            out[f"{exchange}-{label}"] = _bind(check_exchange, exchange, A, **kwargs)
        out[f"{exchange}-grid"] = _bind(check_exchange, exchange, grid(), direct=True,
                                        partition="rows")
        out[f"{exchange}-repeated"] = _bind(check_repeated, exchange)
    # pinned staging, as on GPUs: the window's slots registered with the device (USE_HOST_PTR)
    out["window-pinned"] = _bind(check_exchange, "window", random_square(), pinned=True)
    out["graph-without-pymetis"] = check_graph_without_pymetis
    if importlib.util.find_spec("pymetis") is not None:  # the optional partitioner
        for exchange in ("window", "messages"):  # partition="graph": the user's numbering kept
            for label in ("square", "empty-rows", "one-row-per-rank"):
                out[f"graph-{exchange}-{label}"] = _bind(check_graph, exchange,
                                                         matrices(size)[label][0])
        out["graph-cuts-less"] = check_graph_cuts_less
        out["graph-refusals"] = check_graph_refusals
    out["timeline"] = check_timeline
    out["bad-settings"] = check_bad_settings
    out["settings-differ"] = check_settings_differ
    out["window-unavailable"] = check_window_unavailable
    for exchange in ("window", "messages"):
        out[f"{exchange}-peer-late"] = _bind(check_peer_late, exchange)
        for how in OUT_OF_STEP:
            out[f"{exchange}-out-of-step-{how}"] = _bind(check_out_of_step, exchange, how)
    return out


def case_names(size: int) -> list[str]:
    return list(cases(size))


def _bind(fn: Callable, *args: object, **kwargs: object) -> Callable:
    return lambda comm: fn(comm, *args, **kwargs)


def _build(comm, A, **kwargs):
    from clspmv.distributed import DistributedMatrix

    return DistributedMatrix.from_scipy(A, comm, **kwargs)


# -- checks --------------------------------------------------------------------------------
def check_paths(comm, D, exchange: str) -> None:
    """The plan reaches the expected peers through the window (same node, simulated nodes
    of ``split`` ranks for ``mixed``), the others through messages; bytes per path add up."""
    plan = D.plan
    peers = set(np.flatnonzero((plan.send_counts > 0) | (plan.recv_counts > 0)).tolist())
    if exchange == "messages":
        window = set()
    elif exchange in ("window", "whole"):
        window = peers
    else:
        k = split(comm.size)
        window = {p for p in peers if p // k == comm.rank // k}
    assert set(plan.window_peers.tolist()) == window, (plan.window_peers, window)
    assert set(plan.message_peers.tolist()) == peers - window, (plan.message_peers, window)
    size = D.dtype.itemsize
    by_path = plan.bytes_by_path
    for path, chosen in (("window", sorted(window)), ("messages", sorted(peers - window))):
        expected = (int(plan.send_counts[chosen].sum()) * size,
                    int(plan.recv_counts[chosen].sum()) * size)
        assert by_path[path] == expected, (path, by_path, expected)
    sent, received = D.bytes_exchanged
    assert by_path["window"][0] + by_path["messages"][0] == sent
    assert by_path["window"][1] + by_path["messages"][1] == received
    # whole x slices: from every window peer with values for this rank (``whole``), none
    # (``window``, ``messages``), from those that send >= 60 % of theirs (``mixed``)
    slices = np.diff(D.col_offsets)
    senders = [p for p in sorted(window) if plan.recv_counts[p]]
    wholes = {"whole": senders, "window": [], "messages": [],
              "mixed": [p for p in senders if plan.recv_counts[p] >= 0.6 * slices[p]]}[exchange]
    assert plan.whole_size == int(slices[wholes].sum()), (plan.whole_size, wholes)
    assert plan.whole_runs == [(int(plan.recv_displs[p]), int(plan.recv_counts[p]))
                               for p in wholes]


def check_products(D, A, rng) -> None:
    """matvec and rmatvec with beta 0 and with alpha/beta, numpy and pyopencl vectors, against
    scipy per row (every product first, then the checks: a wrong result on one rank must not
    leave the others waiting in the next product)."""
    import pyopencl.array as cl_array

    from oracle import assert_matches

    m, n = A.shape
    r0, r1 = D.row_range
    c0, c1 = D.col_range
    rows, cols = sp.csr_matrix(A)[r0:r1], sp.csr_matrix(A.T)[c0:c1]
    x, xt = rng.standard_normal(n), rng.standard_normal(m)  # alike on every rank
    y0, z0 = rng.standard_normal(m)[r0:r1], rng.standard_normal(n)[c0:c1]
    q = D.device.queue
    y, z, y_dev = y0.copy(), z0.copy(), cl_array.to_device(q, y0)
    results = [
        (D.matvec(x[c0:c1]), rows, x, {}),
        (D.matvec(x[c0:c1], y, alpha=-1.5, beta=0.5), rows, x,
         {"alpha": -1.5, "beta": 0.5, "y0": y0}),
        (D.rmatvec(xt[r0:r1]), cols, xt, {}),
        (D.rmatvec(xt[r0:r1], z, alpha=2.0, beta=-1.0), cols, xt,
         {"alpha": 2.0, "beta": -1.0, "y0": z0}),
        (D.matvec(cl_array.to_device(q, x[c0:c1]), y_dev, alpha=3.0, beta=-2.0), rows, x,
         {"alpha": 3.0, "beta": -2.0, "y0": y0}),
        (D.rmatvec(cl_array.to_device(q, xt[r0:r1]), alpha=0.5), cols, xt, {"alpha": 0.5})]
    assert results[1][0] is y and results[3][0] is z and results[4][0] is y_dev
    for result, block, vector, scalars in results:
        if isinstance(result, cl_array.Array):
            result = result.get()
        assert_matches(result, block, vector, np.float64, **scalars)


def check_exchange(comm, exchange: str, A, direct: bool = False, **kwargs) -> None:
    """One matrix over one exchange's paths, every mode (``direct``: the values to send are
    one run of x per peer, copied down without a gather kernel)."""
    rng = np.random.default_rng(comm.size)
    with environment(**settings(exchange, comm.size)), _build(comm, A, **kwargs) as D:
        check_paths(comm, D, exchange)
        if direct and D.plan.send_size:
            starts, firsts = D._send_runs
            assert len(starts) == np.count_nonzero(D.plan.send_counts), (starts, firsts)
            assert D._send_index_dev is None
        for mode in MODES:
            D.mode = mode
            check_products(D, A, rng)


def check_graph(comm, exchange: str, A) -> None:
    """partition="graph": the renumbering is a permutation whose parts are the row blocks; each
    rank's products are those of the renumbered matrix (every mode, both directions); the
    global products, in the user's numbering, those of A."""
    from oracle import assert_matches

    rng = np.random.default_rng(comm.size)
    with environment(**settings(exchange, comm.size)), _build(comm, A, partition="graph") as D:
        p = D.permutation
        assert D.partition == "graph"
        assert np.array_equal(np.sort(p), np.arange(A.shape[0])), p
        r0, r1 = D.row_range
        assert np.array_equal(D.global_rows, p[r0:r1])
        for mode in MODES:
            D.mode = mode
            check_products(D, sp.csr_matrix(A)[p][:, p], rng)
        x = rng.standard_normal(A.shape[1])
        y, z = D.matvec_global(x), D.rmatvec_global(x)
        assert_matches(y, A, x, np.float64)
        assert_matches(z, sp.csr_matrix(A.T), x, np.float64)


def check_graph_cuts_less(comm) -> None:
    """A 2-D Poisson matrix with its rows and columns scrambled: contiguous blocks exchange
    nearly everything, METIS's parts far less (a property of the partitioner, not a timing)."""
    side = 24
    scramble = np.random.default_rng(3).permutation(side ** 2)
    A = grid(side)[scramble][:, scramble]
    halos = {}
    for partition in ("nnz", "graph"):
        with _build(comm, A, partition=partition) as D:
            halos[partition] = comm.allreduce(D.halo_size)
    assert 3 * halos["graph"] < halos["nnz"], halos


def check_graph_without_pymetis(comm) -> None:
    """Without pymetis (an import of it failing), partition="graph" fails alike on every rank,
    naming the package."""
    saved = sys.modules.get("pymetis")
    sys.modules["pymetis"] = None  # import pymetis raises ImportError
    try:
        expect_error(ImportError, lambda: _build(comm, random_square(), partition="graph"),
                     "partition='graph' needs the graph partitioner pymetis: pip install "
                     "pymetis")
    finally:
        del sys.modules["pymetis"]
        if saved is not None:
            sys.modules["pymetis"] = saved


def check_graph_refusals(comm) -> None:
    """partition="graph" refuses a rectangular matrix, given row offsets and a path, on every
    rank alike, naming the fix."""
    expect_error(ValueError, lambda: _build(comm, sp.random(9, 7, density=0.3, random_state=1,
                                                            format="csr"), partition="graph"),
                 "partition='graph' needs a square matrix", "use partition='nnz'")
    offsets = np.linspace(0, 240, comm.size + 1).round().astype(int)
    expect_error(ValueError, lambda: _build(comm, random_square(), partition="graph",
                                            row_offsets=offsets),
                 "row_offsets fixes the blocks and partition='graph' chooses them")
    expect_error(ValueError, lambda: _build(comm, "/nonexistent.mtx", partition="graph"),
                 "partition='graph' needs the matrix in memory")


def check_repeated(comm, exchange: str) -> None:
    """REPEATS products in a row with changing x, cycling modes, directions and vector kinds,
    each rank pausing at its own random moments (ranks out of step: a writer reuses a slot
    while a reader lags), every result against scipy."""
    import pyopencl.array as cl_array

    from oracle import assert_matches

    A = random_square()
    rng = np.random.default_rng(11)  # the same x on every rank
    pauses = np.random.default_rng(100 + comm.rank).uniform(0, 2e-3, REPEATS)
    with environment(**settings(exchange, comm.size)), _build(comm, A) as D:
        r0, r1 = D.row_range
        q = D.device.queue
        results = []
        for i in range(REPEATS):
            D.mode = MODES[i % 3]
            x = rng.standard_normal(A.shape[0])
            if i % 4 == comm.rank % 4:
                time.sleep(pauses[i])
            transposed, on_device = i % 2 == 1, (i // 2) % 2 == 1
            product = D.rmatvec if transposed else D.matvec
            if on_device:
                y = product(cl_array.to_device(q, x[r0:r1])).get()
            else:
                y = product(x[r0:r1])
            results.append((y, sp.csr_matrix(A.T if transposed else A)[r0:r1], x))
        for y, reference, x in results:  # after every product: the ranks stay in step
            assert_matches(y, reference, x, np.float64)


def check_timeline(comm) -> None:
    """A product's timeline on the window: its steps on the host (the exchange's own among
    them, one publication per piece) and its OpenCL commands with profiling times."""
    from clspmv.distributed import modes
    from clspmv.distributed.product import Product

    A = random_square()
    with environment(**settings("window", comm.size)), _build(comm, A, mode="task") as D:
        x = np.ones(D.local_shape[1])
        D.matvec(x)  # by default nothing is recorded
        assert D.record_timeline is False and D.last_timeline is None
        D.record_timeline = True
        for on_device in (False, True):
            if on_device:
                import pyopencl.array as cl_array

                x = cl_array.to_device(D.device.queue, x)
            product = Product(D, x, None, 1.0, 0.0)
            D._run(product, lambda p: modes.run(D.mode, p, D._worker))
            timeline = product.timeline
            names = [s.name for s in timeline.spans]
            for name in ("start", "wait", "local", "non_local", "window copy in",
                         "window wait and copy out"):  # "window consumed": maybe the next's
                assert name in names, (name, names)
            assert "finish" in names or on_device
            threads = {s.thread for s in timeline.spans if s.name == "window copy in"}
            assert threads == {"clspmv-mpi"}, threads  # task mode: the exchange's thread
            pieces = -(-D.plan.send_size * 8 // 64)  # 64-byte pieces, each peer's cut alone
            published = names.count("window piece published")
            assert pieces <= published <= pieces + comm.size, (published, pieces)
            assert all(0 <= s.start <= s.stop for s in timeline.spans)
            if on_device:  # copies down only enqueued by start: published while copying out
                waiting = next(s for s in timeline.spans if s.name == "window wait and copy out")
                assert all(waiting.start <= s.start <= waiting.stop for s in timeline.spans
                           if s.name == "window piece published"), timeline.spans
            device = {s.name for s in timeline.device_spans()}
            expected = {"local", "non_local", "copy up"} | (
                {"copy down"} if on_device else {"x up", "y down"})
            assert expected <= device, (expected, device)
            assert all(s.enqueued <= s.start <= s.stop for s in timeline.device_spans())
        D.matvec(x)  # task mode through the window alone: on the main thread (no messages)
        threads = {s.thread for s in D.last_timeline.spans if s.name == "window copy in"}
        assert threads == {"MainThread"}, threads


def check_bad_settings(comm) -> None:
    """A bad value: the same SettingError on every rank, naming the variable."""
    from clspmv.errors import SettingError

    A = random_square()
    for values, needle in (
            ({"CLSPMV_EXCHANGE": "shm"}, "must be one of 'auto', 'messages', 'window', got "
                                         "'shm'"),
            ({"CLSPMV_NODE_SPLIT": "0"}, "CLSPMV_NODE_SPLIT must be an integer >= 1, got '0'"),
            ({"CLSPMV_EXCHANGE_CHUNK": "4k"}, "CLSPMV_EXCHANGE_CHUNK must be an integer >= 0, "
                                              "got '4k'")):
        with environment(**values):
            expect_error(SettingError, lambda: _build(comm, A), needle)


def check_settings_differ(comm) -> None:
    """Different settings per rank: a DistributedError on every rank naming each setting that
    differs and its value per rank."""
    from clspmv.distributed import DistributedError

    exchange = "messages" if comm.rank == 0 else "window"
    others = ", ".join(map(str, range(1, comm.size)))
    ranks = f"rank{'s' if comm.size > 2 else ''} {others}"
    with environment(CLSPMV_EXCHANGE=exchange):
        expect_error(DistributedError, lambda: _build(comm, random_square()),
                     "reading the exchange setting: the ranks disagree on the exchange "
                     f"(CLSPMV_EXCHANGE or the exchange argument) ('messages' on rank 0; "
                     f"'window' on {ranks})")


def check_window_unavailable(comm) -> None:
    """The last rank cannot back its segment (a full /dev/shm): ``window`` fails on every rank
    naming it; ``auto`` warns on the node's first rank and exchanges messages, correctly."""
    from clspmv.distributed import DistributedError, shared_window

    from oracle import assert_matches

    real = shared_window.prefault

    def full(memory: np.ndarray) -> None:
        raise OSError(28, "No space left on device")

    if comm.rank == comm.size - 1:
        shared_window.prefault = full
    A = random_square()
    try:
        with environment(CLSPMV_EXCHANGE="window"):
            expect_error(DistributedError, lambda: _build(comm, A), "could not be allocated",
                         f"rank {comm.size - 1} (", "bytes): OSError: [Errno 28] No space "
                         "left", "/dev/shm")
        with environment(CLSPMV_EXCHANGE="auto"), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            with _build(comm, A, mode="overlap") as D:
                assert D.plan.window_peers.size == 0 and D.plan.message_peers.size > 0
                x = np.random.default_rng(3).standard_normal(A.shape[0])
                r0, r1 = D.row_range
                assert_matches(D.matvec(x[r0:r1]), A[r0:r1], x, np.float64)
        told = [str(w.message) for w in said if "exchange MPI messages instead" in
                str(w.message)]
        assert len(told) == (1 if comm.rank == 0 else 0), told
    finally:
        shared_window.prefault = real


def check_peer_late(comm, exchange: str) -> None:
    """Rank 1 skips a product: every other rank gives up after the plan's timeout with a
    DistributedError naming rank 1 (not a hang), and its matrix refuses every later product."""
    from clspmv.distributed import DistributedError

    late = {"window": "waited 0.5 s for rank 1 to publish its values of exchange 1",
            "messages": "waited 0.5 s for the MPI messages of rank 1:"}[exchange]
    with environment(CLSPMV_EXCHANGE=exchange), _build(comm, random_square(),
                                                       mode="vector") as D:
        D.plan.timeout = 0.5
        assert D.plan.timeout == 0.5
        x = np.ones(D.local_shape[1])
        if comm.rank != 1:
            expect_error(DistributedError, lambda: D.matvec(x), late)
            expect_error(DistributedError, lambda: D.matvec(x), "cannot exchange any more: an "
                         "earlier product failed during its exchange (DistributedError: the "
                         "halo exchange waited 0.5 s")


OUT_OF_STEP = ("raised", "alpha", "transposed")
"""How rank 1's second product differs from the others' (:func:`check_out_of_step`)."""


def check_out_of_step(comm, exchange: str, how: str) -> None:
    """Rank 1's second product is not the others': ``raised`` (its product raised on a wrong x
    before any communication, and it goes on with the next one), ``alpha`` (another alpha),
    ``transposed`` (``rmatvec`` where the others call ``matvec``). Every rank raises a
    DistributedError, without waiting for the timeout where the values arrive (each compares
    the stamps of the values it receives with its own: both products named), after the
    timeout where they do not (``transposed`` through messages: other tags); afterwards every
    product refuses."""
    from clspmv.distributed import DistributedError

    from oracle import assert_matches

    A = random_square()
    odd = comm.rank == 1
    with environment(CLSPMV_EXCHANGE=exchange), _build(comm, A, mode="vector") as D:
        D.plan.timeout = 20.0  # the stamps must tell first: a wait this long fails the case
        r0, r1 = D.row_range
        x = np.random.default_rng(7).standard_normal(A.shape[1])
        assert_matches(D.matvec(x[r0:r1]), A[r0:r1], x, np.float64)
        if odd and how == "raised":
            expect_error(ValueError, lambda: D.matvec(x), "x_local has shape")
        theirs = "product 2 (A x, alpha=1.0, beta=0.0)"
        mine = {"raised": "product 3 (A x, alpha=1.0, beta=0.0)",
                "alpha": "product 2 (A x, alpha=2.0, beta=0.0)",
                "transposed": "product 2 (A.T x, alpha=1.0, beta=0.0)"}[how]
        if odd:
            needle = f"sent the values of its {theirs} to this rank (rank 1), which runs its {mine}"
        else:
            needle = (f"rank 1 sent the values of its {mine} to this rank (rank {comm.rank}), "
                      f"which runs its {theirs}")
        if how == "transposed" and exchange == "messages":
            D.plan.timeout = 2.0  # the other product's messages have other tags: nobody sends
            needle = "waited 2 s for the MPI messages of rank"
        if odd and how == "transposed":
            product = lambda: D.rmatvec(x[r0:r1])  # noqa: E731
        else:
            product = lambda: D.matvec(x[r0:r1], alpha=2.0 if odd and how == "alpha" else 1.0)  # noqa: E731
        started = time.monotonic()
        expect_error(DistributedError, product, needle)
        assert needle.startswith("waited") or time.monotonic() - started < 10
        expect_error(DistributedError, lambda: D.matvec(x[r0:r1]), "cannot exchange any more")


# -- driver --------------------------------------------------------------------------------
def main() -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    run_cases(comm, selected(cases(comm.size), sys.argv[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
