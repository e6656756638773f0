"""Cases of the distributed product, run under ``mpiexec -n N python distributed_worker.py N``.

Every rank runs the same cases in the same order (:func:`mpi_cases.run_cases`); rank 0 prints
one line ``RESULTS <json>`` mapping case names to None (passed) or the errors per rank.
tests/test_distributed.py launches this script and imports :func:`case_names` to list the cases.
(Above 400 lines: every case must sit in the one script mpiexec runs.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import partial

import numpy as np
import scipy.sparse as sp

from mpi_cases import expect_error, run_cases, selected

MODES = ("vector", "overlap", "task")
PARTITIONS = ("nnz", "rows")
FORMATS = (None, ("ell", "coo"))
DTYPES = (np.float32, np.float64)


def poisson(k: int) -> sp.csr_matrix:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    return (sp.kron(sp.identity(k), T) + sp.kron(T, sp.identity(k))).tocsr()


def uneven(n: int = 61, seed: int = 3) -> sp.csr_matrix:
    """Random rows of very different lengths, one dense row and one dense column."""
    rng = np.random.default_rng(seed)
    A = sp.random(n, n, density=0.06, random_state=rng, format="lil")
    A[5, :] = rng.standard_normal(n)
    A[:, n - 2] = rng.standard_normal((n, 1))
    A = A.tocsr() + sp.identity(n)
    return sp.csr_matrix(A)


def block_diagonal(size: int, b: int = 7) -> sp.csr_matrix:
    """One dense block per rank: no rank has non-local columns."""
    rng = np.random.default_rng(1)
    return sp.block_diag([rng.standard_normal((b, b)) for _ in range(size)], format="csr")


def convection_diffusion(k: int) -> sp.csr_matrix:
    h = 1.0 / (k + 1)
    D = sp.diags([-1.0, 1.0], [-1, 0], shape=(k, k)) * (20.0 * h)
    return (poisson(k) + sp.kron(sp.identity(k), D)).tocsr()


def cases(size: int) -> dict[str, Callable[[object], None]]:
    """Every case for ``size`` ranks: name -> function(comm)."""
    out: dict[str, Callable] = {}
    for mode in MODES:
        for partition in PARTITIONS:
            for fmt in FORMATS:
                for dtype in DTYPES:
                    name = (f"product-{mode}-{partition}-{'default' if fmt is None else fmt[0]}-"
                            f"{np.dtype(dtype).name}")
                    out[name] = _bind(check_products, uneven(), mode=mode, partition=partition,
                                      format=fmt, dtype=dtype)
    zero_rows = [0] + [0] + list(np.linspace(0, 61, size).round().astype(int)[1:])
    shaped = {
        "uneven-offsets": (uneven(), {"row_offsets": _uneven_offsets(61, size)}),
        "zero-row-rank": (uneven(), {"row_offsets": zero_rows}),
        "no-non-local": (block_diagonal(size), {"partition": "rows"}),
        "rectangular": (sp.random(45, 31, density=0.15, random_state=4, format="csr"), {}),
        "rectangular-wide": (sp.random(13, 50, density=0.2, random_state=5, format="csr"), {}),
        "all-zero": (sp.csr_matrix((20, 20)), {}),
        "empty-0x0": (sp.csr_matrix((0, 0)), {}),
        "poisson": (poisson(9), {}),
        "weights": (uneven(), {"partition": np.linspace(1.0, 5.0, 61)}),
        "pinned": (uneven(), {"pinned": True}),
    }
    for label, (A, kwargs) in shaped.items():
        for mode in MODES:
            out[f"{label}-{mode}"] = _bind(check_products, A, mode=mode, dtype=np.float64,
                                           **kwargs)
    out["root-scatter"] = lambda comm: check_root(comm, 0)
    out["root-last-rank"] = lambda comm: check_root(comm, comm.size - 1)
    out["mode-change"] = check_mode_change
    out["device-arrays"] = check_device_arrays
    out["global-result"] = check_global
    out["cg-poisson"] = lambda comm: check_cg(comm, None)
    out["cg-jacobi"] = lambda comm: check_cg(comm, "jacobi")
    out["bicgstab"] = check_bicgstab
    out["solver-empty-rank"] = check_solver_refuses_empty_rank
    out["gmres"] = check_gmres
    out["matrix-market-path"] = check_path
    out["probe-and-advice"] = check_probe
    out["fails-format-one-rank"] = check_format_failure
    out["fails-device-one-rank"] = check_device_failure
    out["fails-root-without-matrix"] = check_root_failure
    out["timings-and-model"] = check_timings
    out["bad-arguments"] = check_bad_arguments
    out["auto-formats"] = check_auto_formats
    out["time-partition"] = lambda comm: _with_fixture(comm, check_time_partition)
    out["time-partition-fallback"] = check_time_fallback
    for mode in MODES:
        out[f"mixed-{mode}"] = _bind(check_products, uneven(), mode=mode, dtype="mixed")
        out[f"compact-non-local-{mode}"] = _bind(check_compact, mode)
    return out


def oclgrind_cases() -> dict[str, Callable[[object], None]]:
    """The product on the Oclgrind simulator (``--oclgrind``): every mode, both directions."""
    out = {f"oclgrind-{mode}": _bind(check_products, uneven(23), mode=mode, device="oclgrind",
                                        pinned=False)
           for mode in MODES}
    # the non-local part over a range of border rows (row offset), and over scattered rows
    # (its scatter and gather)
    out["oclgrind-compact"] = _bind(check_products, poisson(5), mode="task", device="oclgrind",
                                    pinned=False)
    out["oclgrind-scattered"] = _bind(check_products, scattered_rows(40), mode="task",
                                      device="oclgrind", pinned=False)
    return out


def case_names(size: int) -> list[str]:
    return list(cases(size))


def _bind(fn: Callable, *args: object, **kwargs: object) -> Callable:
    return lambda comm: fn(comm, *args, **kwargs)


def _uneven_offsets(m: int, size: int) -> list[int]:
    weights = np.arange(1, size + 1, dtype=float) ** 2
    cuts = np.concatenate([[0], np.cumsum(weights) / weights.sum()])
    return list((cuts * m).round().astype(int))


# -- checks --------------------------------------------------------------------------------
def _build(comm, A, **kwargs):
    from clspmv.distributed import DistributedMatrix

    return DistributedMatrix.from_scipy(A, comm, **kwargs)


def check_products(comm, A, dtype=np.float64, **kwargs) -> None:
    """matvec (beta 0 and alpha/beta with y), rmatvec, against scipy per row."""
    from oracle import assert_matches

    m, n = A.shape
    rng = np.random.default_rng(comm.size)
    x = rng.standard_normal(n)
    xt = rng.standard_normal(m)
    y0 = rng.standard_normal(m)
    z0 = rng.standard_normal(n)
    with _build(comm, A, dtype=dtype, **kwargs) as D:
        assert D.shape == A.shape
        r0, r1 = D.row_range
        c0, c1 = D.col_range
        assert D.local_shape == (r1 - r0, c1 - c0)
        dt = D.dtype
        block = sp.csr_matrix(A)[r0:r1]
        xl = x.astype(dt)
        assert_matches(D.matvec(xl[c0:c1]), block, xl, dt)
        y = y0[r0:r1].astype(dt)
        out = D.matvec(xl[c0:c1], y, alpha=-1.5, beta=0.5)
        assert out is y
        assert_matches(y, block, xl, dt, alpha=-1.5, beta=0.5, y0=y0[r0:r1].astype(dt))
        tblock = sp.csr_matrix(A.T)[c0:c1]
        xtl = xt.astype(dt)
        assert_matches(D.rmatvec(xtl[r0:r1]), tblock, xtl, dt)
        z = z0[c0:c1].astype(dt)
        D.rmatvec(xtl[r0:r1], z, alpha=2.0, beta=-1.0)
        assert_matches(z, tblock, xtl, dt, alpha=2.0, beta=-1.0, y0=z0[c0:c1].astype(dt))


def scattered_rows(m: int = 200) -> sp.csr_matrix:
    """Tridiagonal plus, in every fifth row, one entry half the matrix away: each block's rows
    with non-local entries are spread over it (stored as scattered rows, not a range)."""
    far = sp.csr_matrix((np.full(m // 5, 0.5), (np.arange(0, m, 5), (np.arange(0, m, 5)
                                                                       + m // 2) % m)),
                        shape=(m, m))
    return (sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(m, m)) + far).tocsr()


def check_compact(comm, mode: str) -> None:
    """The non-local part holds only the rows with non-local entries (Poisson: the block's
    border rows, a range of rows on each block with one neighbour; ``scattered_rows``: rows
    spread over the block), on uneven blocks, in every direction and with pyopencl vectors."""
    from clspmv.distributed.partition import non_local_span

    for A in (poisson(12), scattered_rows()):
        m = A.shape[0]
        offsets = _uneven_offsets(m, comm.size)  # the last block is large: some rows inside
        check_products(comm, A, mode=mode, row_offsets=offsets)
        check_products(comm, A, mode=mode, row_offsets=offsets, dtype=np.float32,
                       format=("ell", "coo"))
        with _build(comm, A, mode=mode, row_offsets=offsets) as D:
            r0, r1 = D.row_range
            block = A[r0:r1].tocoo()
            outside = (block.col < r0) | (block.col >= r1)
            with_entries = np.unique(block.row[outside])
            span = non_local_span(with_entries)
            expected = with_entries if span is None else np.arange(*span)
            assert np.array_equal(D.non_local_rows, expected), (D.non_local_rows, expected)
            if comm.rank == comm.size - 1:
                assert 0 < expected.size < r1 - r0, (expected.size, r1 - r0)
                assert (span is None) == (A.shape[0] == 200), span  # the form each one takes
            if expected.size:
                assert D.non_local.shape == (expected.size, D.halo_size), D.non_local.shape
                costs = D.costs()
                assert costs.non_local_rows == expected.size
                assert costs.scattered == (span is None and expected.size < r1 - r0)
            else:
                assert D.non_local is None
            _check_device_vectors(D, A)


def _check_device_vectors(D, A) -> None:
    """matvec with alpha/beta into a given pyopencl y, and rmatvec, on pyopencl vectors."""
    import pyopencl.array as cl_array

    from oracle import assert_matches

    r0, r1 = D.row_range
    x = np.random.default_rng(7).standard_normal(A.shape[0])
    q = D.device.queue
    y0 = np.linspace(-1.0, 1.0, r1 - r0)
    y_dev = cl_array.to_device(q, y0)
    D.matvec(cl_array.to_device(q, x[r0:r1]), y_dev, alpha=-2.0, beta=0.5)
    assert_matches(y_dev.get(), A[r0:r1], x, np.float64, alpha=-2.0, beta=0.5, y0=y0)
    z = D.rmatvec(cl_array.to_device(q, x[r0:r1]), alpha=3.0)
    assert_matches(z.get(), sp.csr_matrix(A.T)[r0:r1], x, np.float64, alpha=3.0)


def check_root(comm, root: int) -> None:
    from oracle import assert_matches

    A = uneven()
    x = np.random.default_rng(0).standard_normal(A.shape[1])
    with _build(comm, A if comm.rank == root else None, root=root, mode="overlap") as D:
        r0, r1 = D.row_range
        c0, c1 = D.col_range
        assert D.shape == A.shape
        assert_matches(D.matvec(x[c0:c1]), A[r0:r1], x, np.float64)


def check_mode_change(comm) -> None:
    from oracle import assert_matches

    A = uneven()
    x = np.random.default_rng(1).standard_normal(A.shape[1])
    with _build(comm, A, mode="task") as D:
        r0, r1 = D.row_range
        for mode in ("vector", "task", "overlap", "task"):
            D.mode = mode
            assert D.mode == mode
            assert_matches(D.matvec(x[slice(*D.col_range)]), A[r0:r1], x, np.float64)
        expect_error(ValueError, lambda: setattr(D, "mode", "bogus"), "mode must be one of")


def check_device_arrays(comm) -> None:
    import pyopencl.array as cl_array

    from oracle import assert_matches

    A = uneven()
    x = np.random.default_rng(2).standard_normal(A.shape[1])
    for mode in MODES:
        with _build(comm, A, mode=mode) as D:
            r0, r1 = D.row_range
            q = D.device.queue
            x_dev = cl_array.to_device(q, x[slice(*D.col_range)])
            y = D.matvec(x_dev)
            assert isinstance(y, cl_array.Array)
            assert_matches(y.get(), A[r0:r1], x, np.float64)
            y0 = np.arange(r1 - r0, dtype=np.float64)
            y_dev = cl_array.to_device(q, y0)
            assert D.matvec(x_dev, y_dev, alpha=2.0, beta=3.0) is y_dev
            assert_matches(y_dev.get(), A[r0:r1], x, np.float64, alpha=2.0, beta=3.0, y0=y0)
            xt = cl_array.to_device(q, x[r0:r1])
            z = D.rmatvec(xt)
            assert_matches(z.get(), sp.csr_matrix(A.T)[slice(*D.col_range)], x, np.float64)


def check_global(comm) -> None:
    A = uneven()
    x = np.random.default_rng(3).standard_normal(A.shape[1])
    with _build(comm, A) as D:
        y = D.matvec_global(x)
        z = D.rmatvec_global(x)
    ref = A @ x
    assert np.abs(y - ref).max() <= 1e-12 * np.abs(ref).max(), "matvec_global differs"
    reft = A.T @ x
    assert np.abs(z - reft).max() <= 1e-12 * np.abs(reft).max(), "rmatvec_global differs"


def _solve_and_compare(comm, solver_name: str, A, M, rtol: float, modes=MODES) -> None:
    import scipy.sparse.linalg as sla

    from clspmv import solvers

    b = A @ np.random.default_rng(4).standard_normal(A.shape[0])
    count = [0]
    x_ref, info_ref = getattr(sla, solver_name)(
        A, b, rtol=rtol, callback=lambda _x: count.__setitem__(0, count[0] + 1),
        M=sp.diags(1.0 / A.diagonal()) if M == "jacobi" else None)
    res_ref = np.linalg.norm(b - A @ x_ref) / np.linalg.norm(b)
    for mode in modes:
        with _build(comm, A, mode=mode) as D:
            r0, r1 = D.row_range
            history: list[float] = []
            x_local, info = getattr(solvers, solver_name)(D, b[r0:r1], rtol=rtol, M=M,
                                                          history=history)
            x = np.concatenate(comm.allgather(x_local))
        res = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
        assert info == 0 and info_ref == 0, f"info {info} (scipy {info_ref})"
        assert res <= 1.01 * rtol, f"{mode}: residual {res:.3e} above {rtol:g}"
        assert res_ref <= 1.01 * rtol
        iterations = len(history) - 1
        assert abs(iterations - count[0]) <= max(2, 0.02 * count[0]), (
            f"{mode}: {iterations} iterations, scipy {count[0]}")
        assert np.linalg.norm(x - x_ref) <= 1e-6 * np.linalg.norm(x_ref)


def check_cg(comm, M) -> None:
    _solve_and_compare(comm, "cg", poisson(12), M, 1e-9)


def check_solver_refuses_empty_rank(comm) -> None:
    from clspmv import solvers

    A = poisson(6)
    offsets = [0, 0] + list(np.linspace(0, 36, comm.size).round().astype(int)[1:])
    with _build(comm, A, row_offsets=offsets) as D:
        expect_error(ValueError, lambda: solvers.cg(D, np.ones(D.local_shape[0])),
                     "rank(s) [0] have none")


def check_bicgstab(comm) -> None:
    _solve_and_compare(comm, "bicgstab", convection_diffusion(10), None, 1e-9,
                       modes=("task",))


def check_gmres(comm) -> None:
    from clspmv import solvers

    A = convection_diffusion(10)
    b = A @ np.random.default_rng(5).standard_normal(A.shape[0])
    with _build(comm, A, mode="task") as D:
        r0, r1 = D.row_range
        x_local, info = solvers.gmres(D, b[r0:r1], rtol=1e-9, restart=15)
        x = np.concatenate(comm.allgather(x_local))
    res = np.linalg.norm(b - A @ x) / np.linalg.norm(b)
    assert info == 0 and res <= 1.01e-9, f"info {info}, residual {res:.3e}"


def _write_mtx(comm, A) -> str:
    import os
    import tempfile

    import clspmv

    path = None
    if comm.rank == 0:
        fd, path = tempfile.mkstemp(suffix=".mtx")
        os.close(fd)
        clspmv.io.write(path, A)
    return comm.bcast(path, root=0)


def check_path(comm) -> None:
    """The path source: each rank reads its own rows with clspmv.io.read_rows (spied on)."""
    import os

    import clspmv

    from oracle import assert_matches

    A = uneven()
    path = _write_mtx(comm, A)
    real, calls = clspmv.io.read_rows, []

    def read_rows(p, start, stop):
        calls.append((start, stop))
        return real(p, start, stop)

    clspmv.io.read_rows = read_rows
    try:
        x = np.random.default_rng(6).standard_normal(A.shape[1])
        for partition in PARTITIONS:
            with _build(comm, path, partition=partition) as D:
                r0, r1 = D.row_range
                assert D.shape == A.shape
                assert_matches(D.matvec(x[slice(*D.col_range)]), A[r0:r1], x, np.float64)
                assert calls[-1] == (r0, r1), calls
    finally:
        clspmv.io.read_rows = real
        comm.Barrier()
        if comm.rank == 0:
            os.unlink(path)


def check_probe(comm) -> None:
    import warnings

    from clspmv.distributed import model

    with _build(comm, poisson(8)) as D:
        machine = model.probe(comm, D.device, nbytes=1 << 20, repeats=2)
    for value in (machine.device_bandwidth, machine.staging_bandwidth,
                  machine.network_bandwidth):
        assert value > 0 and np.isfinite(value), machine
    assert machine.network_latency >= 0
    assert 0 < machine.launch_latency < 1, machine
    assert comm.allgather(machine) == [machine] * comm.size
    assert machine.sharing == 1.0  # probe leaves it to probe_sharing
    calls = [0]

    def kernel() -> float:  # rounds of 3 alone (1 s) and 3 at once (1.5 s; rank 1: 3 s), the
        calls[0] += 1       # first round (9 s at once) a warm-up that does not count
        together = (calls[0] - 1) % 6 >= 3
        first = calls[0] <= 6
        return (9.0 if first else 3.0 if comm.rank == 1 else 1.5) if together else 1.0

    assert model.probe_sharing(comm, kernel, repeats=3, rounds=2) == 3.0  # the slowest rank's
    assert calls[0] == 18
    assert model.probe_sharing(comm, lambda: 2.0 - comm.rank * 0.1) == 1.0
    # slow messages and slow launches: the window's peers (no network) still pay for launches
    crawl = model.Machine(1e9, 1e12, 1e3, 1e-2, launch_latency=1e-2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _build(comm, poisson(8), machine=crawl).close()
    said = [str(w.message) for w in caught if "one device may serve as well" in str(w.message)]
    assert len(said) == (1 if comm.rank == 0 else 0), said
    # machine="probe": the library measures the machine itself and gives its verdict the same way
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _build(comm, poisson(8), machine="probe") as D:
            assert D.shape == (64, 64)
    verdicts = [w for w in caught if "ranks are predicted" in str(w.message)]
    assert len(verdicts) <= (1 if comm.rank == 0 else 0), verdicts
    expect_error(ValueError, lambda: _build(comm, poisson(8), machine="guess"),
                 "machine must be a clspmv.distributed.model.Machine or 'probe'")


def _expect_failure(build: Callable[[], object], *needles: str) -> None:
    """``build()`` raises a DistributedError holding every needle."""
    from clspmv.distributed import DistributedError

    expect_error(DistributedError, build, *needles)


def check_format_failure(comm) -> None:
    bad = comm.size - 1
    fmt = "no-such-format" if comm.rank == bad else None
    _expect_failure(lambda: _build(comm, uneven(), format=fmt),
                    "checking the arguments: the ranks disagree on format",
                    f"('no-such-format', 'no-such-format') on rank {bad}")


def check_device_failure(comm) -> None:
    spec = "no-such-device" if comm.rank == 1 else None
    _expect_failure(lambda: _build(comm, uneven(), device=spec),
                    "rank 1: DeviceError: no OpenCL device matches 'no-such-device'")


def check_root_failure(comm) -> None:
    _expect_failure(lambda: _build(comm, None, root=0),
                    "rank 0: ValueError: the root rank 0 was given no matrix")


def check_bad_arguments(comm) -> None:
    """The same bad argument on every rank: the same error everywhere, no communication."""
    with _build(comm, uneven()) as D:
        n = D.local_shape[1]
        for call, error, needle in [
                (lambda: D.matvec(np.ones(n + 1)), ValueError, "x_local has shape"),
                (lambda: D.matvec(np.ones(n), np.ones(D.local_shape[0], np.float32), beta=1.0),
                 TypeError, "y_local has dtype float32"),
                (lambda: D.matvec(np.ones(n), [0.0] * D.local_shape[0]), TypeError, "y_local"),
                (lambda: D.matvec_global(np.ones(3)), ValueError, "x has shape")]:
            expect_error(error, call, needle)
    for kwargs, needle in [({"mode": "async"}, "mode must be one of"),
                           ({"partition": "cols"}, "partition must be one of"),
                           ({"format": ("csr-vector",)}, "format must be a name or a pair"),
                           ({"row_offsets": [0, 61]}, "row_offsets must be"),
                           ({"format": "no-such-format"}, "unknown format 'no-such-format'")]:
        expect_error(ValueError, partial(_build, comm, uneven(), **kwargs), needle)


def check_timings(comm) -> None:
    from clspmv.distributed import model
    from clspmv.distributed.node_exchange import node_comm, read_setting

    node = node_comm(comm, read_setting().node_split)
    per_node = node.size  # the window's ranks (CLSPMV_NODE_SPLIT honoured): consecutive here
    node.Free()
    A = poisson(10)
    with _build(comm, A, mode="task") as D:
        D.matvec(np.ones(D.local_shape[1]))
        t = D.timings
        assert set(t) == {"local", "non_local", "staging", "gather", "communication",
                          "total"}, t
        assert all(v >= 0 for v in t.values()), t
        assert t["total"] >= t["communication"]
        # pyopencl x: the exchange's copies are the only staging, timed where asked for
        import pyopencl.array as cl_array

        x_dev = cl_array.to_device(D.device.queue, np.ones(D.local_shape[1]))
        D.matvec(x_dev)
        unprofiled = D.timings["staging"]
        D.time_copies = True
        D.matvec(x_dev)
        profiled = D.timings["staging"]
        D.time_copies = False
        moves = D.plan.send_size + D.plan.halo_size > 0
        assert unprofiled == 0 and (profiled > 0) == moves, (unprofiled, profiled, moves)
        costs = D.all_costs()
        expected = model.rank_costs(A, comm.size, offsets=D.row_offsets, ranks_per_node=per_node)
        assert costs == expected, f"{costs} != {expected}"
        sent, received = D.bytes_exchanged
        assert sum(c.send for c in costs) == sum(c.halo for c in costs)
        assert sent == costs[comm.rank].send * 8 and received == costs[comm.rank].halo * 8
        machine = model.Machine(1e10, 1e9, 1e9, 1e-6)
        times = D.predict(machine)
        assert set(times) == set(MODES) and times["task"] <= times["vector"]


def check_auto_formats(comm) -> None:
    """format="auto" (the default): each rank's parts take the format clspmv.model.select
    chooses for them (the quick default here: deterministic); a pair may name one part."""
    from clspmv.distributed.source import split_columns
    from clspmv.formats import FORMAT_CLASSES
    from clspmv.model import select

    A = uneven()
    with _build(comm, A, mode="task") as D:
        r0, r1 = D.row_range
        local, non_local, halo = split_columns(A[r0:r1], *D.col_range)
        sel_local, sel_nl = D.selections
        assert sel_local is not None and D.formats[0] == sel_local.format, D.formats
        assert D.formats[0] == select(local, D.device).format
        if halo.size:
            stored = non_local[D.non_local_rows]  # its rows with entries, or their span
            assert sel_nl is not None and D.formats[1] == sel_nl.format
            assert D.formats[1] == select(stored, D.device).format
        else:
            assert D.formats[1] is None and sel_nl is None
        assert all(f in FORMAT_CLASSES for f in D.formats if f is not None), D.formats
    for pair, mode in ((("auto", "coo"), "vector"), (("ell", "auto"), "overlap")):
        check_products(comm, A, mode=mode, format=pair, dtype=np.float32)
        with _build(comm, A, format=pair) as D:
            named = 1 if pair[1] != "auto" else 0
            assert D.selections[named] is None
            assert D.formats[named] in (pair[named], None), D.formats
            assert D.selections[0 if named else 1] is not None or D.non_local is None


def _with_fixture(comm, check: Callable) -> None:
    """``check(comm, device, calibration)`` with the fixture stored as the device's calibration
    in a calibration cache of its own (every rank on this node reads it)."""
    import os
    import shutil
    import tempfile

    from calibration_fixture import fixture_calibration

    from clspmv.distributed.placement import choose_device, node_rank
    from clspmv.model import store

    path = comm.bcast(tempfile.mkdtemp(prefix="clspmv-fixture-") if comm.rank == 0 else None)
    old = os.environ.get("CLSPMV_CACHE_DIR")
    os.environ["CLSPMV_CACHE_DIR"] = path
    store.forget()
    try:
        device = choose_device(None, *node_rank(comm))
        cal = fixture_calibration(device)
        if comm.rank == 0:
            store.save(cal, device)
        comm.Barrier()
        check(comm, device, store.calibration(device))
    finally:
        if old is None:
            del os.environ["CLSPMV_CACHE_DIR"]
        else:
            os.environ["CLSPMV_CACHE_DIR"] = old
        store.forget()
        comm.Barrier()
        if comm.rank == 0:
            shutil.rmtree(path, ignore_errors=True)


def stacked_matrix() -> sp.csr_matrix:
    """27-point stencil rows on power-law rows: equal entries are not equal time."""
    from clspmv.bench.generators import stacked

    return stacked(k=12, scale=11)


def time_offsets(A, size: int, device, cal, fmt: str = "auto") -> np.ndarray:
    """The row offsets partition="time" must give: each rank's equal share of the rows
    weighed (predicted.row_weights), the blocks balanced over all the weights."""
    from clspmv.distributed import balanced_offsets
    from clspmv.distributed.predicted import row_weights

    share = balanced_offsets(np.ones(A.shape[0]), size)
    weights = np.concatenate([row_weights(A[share[k]:share[k + 1]], device, cal, fmt)
                              for k in range(size)])
    return balanced_offsets(weights, size)


def check_time_partition(comm, device, cal) -> None:
    """With a measured calibration (the fixture): partition="time" and "auto" cut the rows
    where the predicted times balance (not where the entries do) from every source, the
    products match scipy, and the non-local part takes the format its selection chose."""
    from clspmv.distributed import row_offsets

    from oracle import assert_matches

    A = stacked_matrix()
    m = A.shape[0]
    expected = time_offsets(A, comm.size, device, cal)
    by_nnz = row_offsets(np.diff(A.indptr), comm.size, "nnz")
    assert not np.array_equal(expected, by_nnz), (expected, by_nnz)
    assert expected[0] == 0 and expected[-1] == m and (np.diff(expected) >= 0).all()
    x = np.random.default_rng(8).standard_normal(m)
    for partition, mode in (("time", "task"), ("auto", "vector")):
        with _build(comm, A, partition=partition, mode=mode) as D:
            assert D.partition == "time", D.partition
            assert np.array_equal(D.row_offsets, expected), (D.row_offsets, expected)
            assert all(s is None or s.calibration == "measured" for s in D.selections)
            r0, r1 = D.row_range
            assert_matches(D.matvec(x[slice(*D.col_range)]), A[r0:r1], x, np.float64)
    with _build(comm, A if comm.rank == 0 else None, root=0, partition="time") as D:
        assert np.array_equal(D.row_offsets, expected), (D.row_offsets, expected)
    path = _write_mtx(comm, A)
    try:
        with _build(comm, path, partition="time") as D:
            assert np.array_equal(D.row_offsets, expected), (D.row_offsets, expected)
    finally:
        comm.Barrier()
        if comm.rank == 0:
            import os

            os.unlink(path)
    named = time_offsets(A, comm.size, device, cal, "csr-scalar")
    with _build(comm, A, partition="time", format=("csr-scalar", "coo")) as D:
        assert np.array_equal(D.row_offsets, named), (D.row_offsets, named)
        assert D.formats[0] == "csr-scalar"
        r0, r1 = D.row_range
        assert_matches(D.matvec(x[slice(*D.col_range)]), A[r0:r1], x, np.float64)
    with _build(comm, A, partition="time", row_offsets=by_nnz) as D:
        assert D.partition == "offsets" and np.array_equal(D.row_offsets, by_nnz)


def check_time_fallback(comm) -> None:
    """Without a measured calibration (CLSPMV_CALIBRATE=0, an empty cache): "auto" balances
    entries silently, "time" too with a warning on rank 0; the partition says which."""
    import warnings

    from clspmv.distributed import row_offsets

    A = uneven()
    by_nnz = row_offsets(np.diff(A.indptr), comm.size, "nnz")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with _build(comm, A) as D:
            assert D.partition == "nnz" and np.array_equal(D.row_offsets, by_nnz)
        assert not [w for w in caught if "partition" in str(w.message)]
        with _build(comm, A, partition="time") as D:
            assert D.partition == "nnz" and np.array_equal(D.row_offsets, by_nnz)
    said = [str(w.message) for w in caught if "partition='time' needs a measured" in
            str(w.message)]
    assert len(said) == (1 if comm.rank == 0 else 0), said
    with _build(comm, A, partition="rows") as D:
        assert D.partition == "rows"
    with _build(comm, A, partition=np.ones(A.shape[0])) as D:
        assert D.partition == "weights"


# -- driver --------------------------------------------------------------------------------
def main() -> int:
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    wanted = sys.argv[1:]
    simulator = "--oclgrind" in wanted
    if simulator:  # Oclgrind reports on stderr: progress goes to stdout
        wanted.remove("--oclgrind")
    run_cases(comm, selected(oclgrind_cases() if simulator else cases(comm.size), wanted),
              limit=6, progress=sys.stdout if simulator else sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
