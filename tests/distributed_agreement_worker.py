"""Ranks that disagree or fail on their own, under ``mpiexec -n N python
distributed_agreement_worker.py``: every case runs on every rank, in the same order, each on a
communicator of its own (a case that leaves a collective pending there cannot touch the next);
a case passes when it passes on every rank (the outcomes are gathered on ``COMM_WORLD``,
:func:`mpi_cases.run_cases`). Rank 0 prints one line ``RESULTS <json>`` mapping case names to
None (passed) or the errors per rank.
tests/test_distributed_agreement.py launches this script and imports :data:`CASES`.

The construction cases assert that every rank raises the same :class:`DistributedError`, whose
message names the differing argument (or the failing rank and its error), then that the ranks
are still in step: a matrix built on the same communicator right after gives scipy's product.
"""

from __future__ import annotations

import inspect
import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from mpi_cases import expect_error, run_cases

TIMEOUT_CASE_SECONDS = "3"
"""CLSPMV_MPI_TIMEOUT of the case whose ranks pass different communicators (the others keep
the default: a bound on a loaded 2-core machine must not fail a slow rank)."""


def uneven(n: int = 61, seed: int = 3) -> sp.csr_matrix:
    """Random rows of very different lengths, one dense row and one dense column."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.06, random_state=rng, format="lil")
    A[5, :] = rng.standard_normal(n)
    A[:, n - 2] = rng.standard_normal((n, 1))
    return sp.csr_matrix(A.tocsr() + sp.identity(n))


def _build(comm, A, **kwargs):
    from clspmv.distributed import DistributedMatrix

    return DistributedMatrix.from_scipy(A, comm, **kwargs)


def _ranks(size: int, odd: int) -> str:
    """How a message names every rank but ``odd``: ``rank 0`` or ``ranks 0, 2``."""
    others = [r for r in range(size) if r != odd]
    return f"rank{'s' if len(others) > 1 else ''} {', '.join(map(str, others))}"


def _products_match(comm, A) -> None:
    """A matrix built on ``comm`` gives scipy's products (the ranks are in step)."""
    from oracle import assert_matches

    x = np.random.default_rng(comm.size).standard_normal(A.shape[0])
    with _build(comm, A, mode="task") as D:
        r0, r1 = D.row_range
        assert_matches(D.matvec(x[r0:r1]), A[r0:r1], x, np.float64)
        assert_matches(D.rmatvec(x[r0:r1]), sp.csr_matrix(A.T)[r0:r1], x, np.float64)


def expect_refusal(comm, build: Callable[[], object], *needles: str) -> str:
    """``build()`` raises DistributedError on every rank, the same message everywhere, holding
    every needle (returned)."""
    from clspmv.distributed import DistributedError

    try:
        build()
    except DistributedError as err:
        message = str(err)
    else:
        message = None
    every = comm.allgather(message)  # before any assertion: the ranks stay in step
    assert message is not None, "construction succeeded where the ranks disagree"
    for needle in needles:
        assert needle in message, f"{needle!r} not in {message}"
    assert every == [message] * comm.size, f"the ranks raised different messages: {every}"
    return message


@contextmanager
def _patched(target: object, name: str, replacement: object, active: bool):
    """``target.name = replacement`` inside the block where ``active`` (on one rank, say)."""
    real = inspect.getattr_static(target, name)  # a classmethod as such
    if active:
        setattr(target, name, replacement)
    try:
        yield
    finally:
        setattr(target, name, real)


@contextmanager
def _matrix_file(comm, A):
    """The path of a Matrix Market file of ``A`` written by rank 0, on every rank."""
    import clspmv

    path = None
    if comm.rank == 0:
        fd, path = tempfile.mkstemp(suffix=".mtx")
        os.close(fd)
        clspmv.io.write(path, A)
    path = comm.bcast(path)
    try:
        yield path
    finally:
        comm.Barrier()
        if comm.rank == 0:
            os.unlink(path)


def _raiser(error: BaseException) -> Callable[..., object]:
    def fail(*_args: object, **_kwargs: object) -> object:
        raise error
    return fail


# -- the ranks disagree on an argument ---------------------------------------------------------
def check_invalid_mode(comm) -> None:
    last = comm.size - 1
    mode = "bogus" if comm.rank == last else "task"
    expect_refusal(comm, lambda: _build(comm, uneven(), mode=mode),
                   f"checking the arguments failed on 1 of {comm.size} ranks",
                   f"rank {last}: ValueError: mode must be one of 'vector', 'overlap', 'task', "
                   "got 'bogus'")


def _rank_1_differs(comm, argument: str, usual: object, odd: object,
                    shown: tuple[str, str] | None = None) -> None:
    """Rank 1 passes ``argument=odd``, the others ``argument=usual``: the refusal names the
    argument and each value as the ranks compare it (``shown``: usual's and odd's, where that is
    not their repr)."""
    shown_usual, shown_odd = shown or (repr(usual), repr(odd))
    value = odd if comm.rank == 1 else usual
    expect_refusal(comm, lambda: _build(comm, uneven(), **{argument: value}),
                   f"the ranks disagree on {argument} ({shown_usual} on {_ranks(comm.size, 1)}; "
                   f"{shown_odd} on rank 1)")


def check_mode(comm) -> None:
    _rank_1_differs(comm, "mode", "task", "vector")


def check_dtype(comm) -> None:
    _rank_1_differs(comm, "dtype", np.float64, np.float32, ("'float64'", "'float32'"))


def check_partition(comm) -> None:
    _rank_1_differs(comm, "partition", "nnz", "rows")


def check_weights(comm) -> None:
    weights = np.linspace(1.0, 2.0 + (comm.rank == 0), 61)
    expect_refusal(comm, lambda: _build(comm, uneven(), partition=weights),
                   "the ranks disagree on partition ('weights ")


def check_offsets(comm) -> None:
    even = [int(o) for o in np.linspace(0, 61, comm.size + 1).round()]
    moved = [even[0], even[1] + 1, *even[2:]]
    expect_refusal(comm, lambda: _build(comm, uneven(), row_offsets=moved if comm.rank == 0
                                        else even),
                   f"the ranks disagree on row_offsets ({moved!r} on rank 0; {even!r} on "
                   f"{_ranks(comm.size, 0)})")


def check_format(comm) -> None:
    _rank_1_differs(comm, "format", "csr-scalar", ("ell", "coo"),
                    ("('csr-scalar', 'csr-scalar')", "('ell', 'coo')"))


def check_shape(comm) -> None:
    A = uneven(62 if comm.rank == 1 else 61)
    expect_refusal(comm, lambda: _build(comm, A),
                   f"shape ((61, 61) on {_ranks(comm.size, 1)}; (62, 62) on rank 1)")


def check_entries(comm) -> None:
    """The same shape and pattern, one value changed on one rank: only the checksum differs."""
    A = uneven()
    if comm.rank == comm.size - 1:
        A.data[7] *= 1.0 + 2.0 ** -40
    message = expect_refusal(comm, lambda: _build(comm, A), "the ranks disagree on checksum (")
    assert "shape" not in message and "stored entries" not in message, message


def check_a_missing(comm) -> None:
    A = None if comm.rank == 1 else uneven()
    expect_refusal(comm, lambda: _build(comm, A),
                   f"checking the arguments failed on 1 of {comm.size} ranks: rank 1: "
                   "ValueError: A is None: give the matrix on every rank, or on one rank with "
                   "root=")


def check_a_kind(comm) -> None:
    """A path on rank 0, the matrix on the others."""
    with _matrix_file(comm, uneven()) as path:
        A = path if comm.rank == 0 else uneven()
        expect_refusal(comm, lambda: _build(comm, A),
                       f"the ranks disagree on A (\"the file '{path}'\" on rank 0; 'a matrix on "
                       "every rank' on ", "shape (None on rank 0; (61, 61) on ")


def check_root(comm) -> None:
    root = 1 if comm.rank == 1 else 0
    A = uneven() if comm.rank in (0, 1) else None
    expect_refusal(comm, lambda: _build(comm, A, root=root),
                   f"the ranks disagree on A ('on rank 0' on {_ranks(comm.size, 1)}; 'on rank 1' "
                   "on rank 1)")


def check_machine(comm) -> None:
    machine = "probe" if comm.rank == 0 else None
    expect_refusal(comm, lambda: _build(comm, uneven(), machine=machine),
                   "the ranks disagree on machine ('probe' on rank 0; None on ")


def check_file_shape(comm) -> None:
    """The same path naming files of different shapes (different nodes): the headers' shapes."""
    import clspmv

    other = SimpleNamespace(shape=(70, 61))
    with _matrix_file(comm, uneven()) as path, _patched(clspmv.io, "read_header",
                                                       lambda _p: other, comm.rank == 1):
        expect_refusal(comm, lambda: _build(comm, path),
                       f"reading the header of {path}: the ranks disagree on shape ((61, 61) on "
                       f"{_ranks(comm.size, 1)}; (70, 61) on rank 1)")


# -- one rank fails on its own -------------------------------------------------------------------
def check_conversion_fails(comm) -> None:
    A = np.zeros((4, 4, 4)) if comm.rank == 1 else uneven()
    expect_refusal(comm, lambda: _build(comm, A),
                   f"checking the arguments failed on 1 of {comm.size} ranks: rank 1: "
                   "ValueError: expected a 2-D matrix")


def check_upload_fails(comm) -> None:
    """A DeviceError on one rank while its parts are uploaded."""
    from clspmv import DeviceMatrix
    from clspmv.errors import DeviceError

    fail = _raiser(DeviceError("injected: the device cannot hold the local part"))
    with _patched(DeviceMatrix, "from_scipy", fail, comm.rank == comm.size - 1):
        expect_refusal(comm, lambda: _build(comm, uneven()),
                       f"building the local and non-local parts failed on 1 of {comm.size} "
                       f"ranks: rank {comm.size - 1}: DeviceError: injected")


def check_exchange_fails(comm) -> None:
    """An allocation failing on one rank once the exchange plan is built: every rank frees what
    it built (the plan, collectively; the communicator; the task mode's thread)."""
    import importlib

    distributed_matrix = importlib.import_module("clspmv.distributed.matrix")
    fail = _raiser(MemoryError("injected: no memory for the vectors"))
    with _patched(distributed_matrix, "DeviceVectors", fail, comm.rank == 1):
        expect_refusal(comm, lambda: _build(comm, uneven(), mode="task"),
                       f"setting up the exchange failed on 1 of {comm.size} ranks: rank 1: "
                       "MemoryError: injected")


def check_selection_fails(comm) -> None:
    """format="auto": the selection raising on one rank."""
    import importlib

    choice = importlib.import_module("clspmv.format_choice")  # where DeviceMatrix selects
    fail = _raiser(RuntimeError("injected: selection failed"))
    with _patched(choice, "select", fail, comm.rank == 0):
        expect_refusal(comm, lambda: _build(comm, uneven(), format="auto"),
                       f"failed on 1 of {comm.size} ranks: rank 0: RuntimeError: injected")


def check_other_communicator(comm) -> None:
    """The last rank passes COMM_SELF, the others this communicator: they give up after
    CLSPMV_MPI_TIMEOUT seconds instead of waiting for ever; the last rank builds alone."""
    from mpi4py import MPI

    from clspmv.distributed import CollectiveTimeout

    last = comm.size - 1
    old = os.environ.get("CLSPMV_MPI_TIMEOUT")
    os.environ["CLSPMV_MPI_TIMEOUT"] = TIMEOUT_CASE_SECONDS
    try:
        if comm.rank == last:
            with _build(MPI.COMM_SELF, uneven()) as D:
                assert D.row_range == (0, 61)
            return
        expect_error(CollectiveTimeout, lambda: _build(comm, uneven()),
                     f"checking the arguments: not every rank of the communicator ({comm.size} "
                     f"ranks) arrived within {TIMEOUT_CASE_SECONDS} s")
    finally:
        if old is None:
            del os.environ["CLSPMV_MPI_TIMEOUT"]
        else:
            os.environ["CLSPMV_MPI_TIMEOUT"] = old


# -- after construction ----------------------------------------------------------------------------
def check_modes_per_rank(comm) -> None:
    """Each rank in its own mode (the setter is not collective): the products stay right."""
    from clspmv.distributed import MODES

    from oracle import assert_matches

    A = uneven()
    x = np.random.default_rng(5).standard_normal(61)
    with _build(comm, A, mode="task") as D:
        r0, r1 = D.row_range
        for shift in range(len(MODES)):
            D.mode = MODES[(comm.rank + shift) % len(MODES)]
            assert_matches(D.matvec(x[r0:r1]), A[r0:r1], x, np.float64)
            assert_matches(D.rmatvec(x[r0:r1]), sp.csr_matrix(A.T)[r0:r1], x, np.float64)
        if comm.rank == 1:  # an unknown mode on one rank: refused there, nothing changed
            expect_error(ValueError, lambda: setattr(D, "mode", "bogus"), "mode must be one of")
        assert_matches(D.matvec(x[r0:r1]), A[r0:r1], x, np.float64)


def check_closed(comm) -> None:
    """Products, costs and the solvers' space after close() raise instead of reading a stale
    halo."""
    from clspmv.distributed import DistributedError

    D = _build(comm, uneven())
    n = D.local_shape[1]
    D.close()
    for call in (lambda: D.matvec(np.ones(n)), D.all_costs, lambda: D.vector_space,
                 lambda: D.matvec_global(np.ones(61))):
        expect_error(DistributedError, call, "this DistributedMatrix is closed on this rank")


LEFT_PENDING = {"other-communicator"}
"""Cases after which the communicator holds a pending collective (not checked for step)."""

CASES: dict[str, Callable[[object], None]] = {
    "invalid-mode": check_invalid_mode,
    "mode": check_mode,
    "dtype": check_dtype,
    "partition": check_partition,
    "partition-weights": check_weights,
    "row-offsets": check_offsets,
    "format": check_format,
    "shape": check_shape,
    "entries": check_entries,
    "A-missing": check_a_missing,
    "A-path-or-matrix": check_a_kind,
    "root": check_root,
    "machine": check_machine,
    "file-shape": check_file_shape,
    "conversion-fails": check_conversion_fails,
    "upload-fails": check_upload_fails,
    "exchange-fails": check_exchange_fails,
    "selection-fails": check_selection_fails,
    "other-communicator": check_other_communicator,
    "modes-per-rank": check_modes_per_rank,
    "closed": check_closed,
}


def _in_step(name: str, comm) -> None:
    """After a case that passed: the ranks are still in step on its communicator."""
    if name not in LEFT_PENDING:
        _products_match(comm, uneven())


def main() -> int:
    from mpi4py import MPI

    wanted = sys.argv[1:]
    run_cases(MPI.COMM_WORLD, {name: case for name, case in CASES.items()
                               if not wanted or name in wanted}, own_comm=True, after=_in_step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
