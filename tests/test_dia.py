"""DIA's ``diagonal_runs`` (the kernels' DIAGONAL_RUNS: each stretch of RUN_ROWS rows or columns
loops, branch-free, over the run of diagonals crossing it) and ``row_chunks`` (ROW_CHUNKS: a
work-item per run of rows, each diagonal a loop over a chunk of rows) against scipy, their
defaults per layout, the runs themselves, and the chunked diagonal pass that DIA's conversion and
the model's exact count share."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.formats import FORMAT_CLASSES, conversion, convert
from clspmv.formats.dia import ROW_CHUNK, RUN_ROWS, chunk_runs, stretch_runs
from clspmv.formats.layout import Layout
from clspmv.model.sampling import diagonal_rows, exact_diagonals
from clspmv.precision import resolve

from oracle import assert_matches, oracle_matrix
from scenarios import SCENARIOS, Scenario

CASES = [s for s in SCENARIOS if "dia" not in s.unsuitable]


@pytest.mark.parametrize(("runs", "chunks"), [(True, False), (False, False), (False, True),
                                             (True, True)])
@pytest.mark.parametrize("case", CASES, ids=[s.name for s in CASES])
def test_dia_runs_match_scipy(case: Scenario, runs: bool, chunks: bool, dtype, device) -> None:
    """Forward (alpha, beta) and transposed products with and without the runs and the row
    chunks (the forward kernel of CPUs), on every shape: diagonals that wrap around (periodic),
    leave a rectangle at its side or bottom (band-rect, tall, wide), empty rows, explicit zeros,
    non-finite values."""
    M = clspmv.DeviceMatrix.from_scipy(case.A, format="dia", device=device, dtype=dtype,
                                       diagonal_runs=runs, row_chunks=chunks)
    assert M.params["diagonal_runs"] == int(runs) and M.params["row_chunks"] == int(chunks)
    assert ("DIAGONAL_RUNS" in M._fmt.defines()) == runs
    want = oracle_matrix("dia", case.csr, dtype)
    y0 = np.linspace(-1.0, 1.0, case.csr.shape[0]).astype(dtype)
    y = y0.copy()
    M.matvec(case.x, y, alpha=1.5, beta=-0.5)
    assert_matches(y, want, case.x, dtype, 1.5, -0.5, y0)
    assert_matches(M.rmatvec(case.xt), want.T.tocsr(), case.xt, dtype)
    # the values read back in either order of storage (row chunks: chunk by chunk of rows)
    got, ref = M.to_scipy().tocoo(), case.csr.astype(M.dtype).tocoo()
    stored = ref.data != 0
    assert got.nnz == int(stored.sum())
    order_got, order_ref = np.lexsort((got.col, got.row)), np.lexsort((ref.col, ref.row))
    for a, b in ((got.row, ref.row), (got.col, ref.col), (got.data, ref.data)):
        np.testing.assert_array_equal(a[order_got], b[order_ref][stored[order_ref]])


def test_dia_runs_default_on_lockstep_layouts(device) -> None:
    """Runs on by default where work-items run in lockstep (a GPU's layout, SIMD 32), off where
    they run one after another (a CPU's); row chunks the other way round, also where the CPU
    implementation vectorises across work-items (Intel's runtime), whatever the diagonals; an
    explicit value wins; anything but a bool is refused."""
    A = sp.diags([1.0, 2.0, 3.0], [-1, 0, 1], shape=(64, 64), format="csr")
    cpu = replace(FORMAT_CLASSES["dia"].layout_for(device), simd_width=8,
                  vectorises_work_items=False)
    gpu = replace(cpu, simd_width=32)
    precision = resolve(np.float64, np.float64)

    def runs(layout, **params) -> int:
        return convert(A, "dia", layout, precision, **params).params["diagonal_runs"]
    assert runs(cpu) == 0 and runs(gpu) == 1
    vectors = replace(cpu, vectorises_work_items=True)  # Intel's CPU runtime
    chunks = {name: convert(A, "dia", layout, precision).params["row_chunks"]
              for name, layout in (("cpu", cpu), ("gpu", gpu), ("vectors", vectors))}
    assert chunks == {"cpu": 1, "gpu": 0, "vectors": 1}  # chunks where work-items run one by one
    offsets = np.arange(27) - 13
    many = sp.diags([np.ones(300 - abs(o)) for o in offsets], offsets, shape=(300, 300),
                    format="csr")
    assert convert(many, "dia", gpu, precision).params["row_chunks"] == 0
    assert convert(A, "dia", vectors, precision, row_chunks=False).params["row_chunks"] == 0
    assert runs(cpu, diagonal_runs=True) == 1 and runs(gpu, diagonal_runs=False) == 0
    assert runs(cpu, diagonal_runs=1) == 1  # as params stores it (a pickled matrix passes it back)
    for bad, shown in (("yes", "'yes'"), (2, "2")):
        with pytest.raises(TypeError, match=f"diagonal_runs must be True or False, got {shown}"):
            clspmv.DeviceMatrix.from_scipy(A, format="dia", device=device, diagonal_runs=bad)


@pytest.mark.parametrize("size", [RUN_ROWS, ROW_CHUNK])
@pytest.mark.parametrize("shape", [(300, 300), (120, 90), (90, 120), (33, 1), (1, 40)])
def test_runs_hold_exactly_the_crossing_diagonals(shape: tuple[int, int], size: int) -> None:
    """Every stretch's run holds the diagonals that cross one of its rows (columns) inside the
    matrix and none other, for rows and columns, square and rectangular, in the stretches of
    diagonal_runs (RUN_ROWS) and of row_chunks (ROW_CHUNK)."""
    m, n = shape
    offsets = np.array(sorted({-m + 1, -50, -40, -3, 0, 2, 35, 70, n - 1}), np.int64)
    offsets = offsets[(offsets > -m) & (offsets < n)]
    for lines, span, sign in ((m, n, 1), (n, m, -1)):
        runs = stretch_runs(offsets, lines, span, sign, size).reshape(-1, 2)
        assert runs.shape[0] == -(-lines // size)
        for k, (first, end) in enumerate(runs):
            stretch = np.arange(k * size, min((k + 1) * size, lines))
            other = stretch[:, None] + sign * offsets[None, :]  # column (row) each meets
            crossing = np.flatnonzero(((other >= 0) & (other < span)).any(axis=0))
            assert list(range(first, end)) == list(crossing)


def test_row_chunks_store_only_their_runs(device) -> None:
    """With row_chunks each chunk of ROW_CHUNK rows stores the slots of its run of diagonals
    only (chunk_runs: the run, then the chunk's first stored diagonal, the runs before it added
    up): a matrix whose diagonals wrap around (offsets o and o - n) stores about half of what
    one whole array per diagonal takes, and its product matches scipy."""
    n, k = 1000, 5
    rows = np.repeat(np.arange(n), k)
    cols = (rows + np.tile(np.arange(k) * 7, n)) % n
    A = sp.csr_matrix((np.arange(1.0, rows.size + 1), (rows, cols)), shape=(n, n))
    M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=device, row_chunks=True)
    arrays = M._fmt.download()
    offsets, table = arrays["offsets"], arrays["chunks"].reshape(-1, 3)
    assert offsets.size == 2 * k - 1 and table.shape[0] == -(-n // ROW_CHUNK)
    runs = stretch_runs(offsets.astype(np.int64), n, n, 1, ROW_CHUNK).reshape(-1, 2)
    np.testing.assert_array_equal(table[:, :2], runs)
    lengths = runs[:, 1] - runs[:, 0]
    np.testing.assert_array_equal(table[:, 2], np.cumsum(lengths) - lengths)
    np.testing.assert_array_equal(chunk_runs(offsets, n, n), arrays["chunks"])
    assert arrays["val"].size == lengths.sum() * ROW_CHUNK < 0.6 * offsets.size * n
    x = np.linspace(-1.0, 1.0, n)
    np.testing.assert_allclose(M @ x, A @ x, rtol=1e-12)
    np.testing.assert_allclose(M.rmatvec(x), A.T @ x, rtol=1e-12)


@pytest.mark.parametrize("narrow", [False, True], ids=["own", "narrow"])
@pytest.mark.parametrize("shape", [(640, 640), (640, 700), (700, 640)])
def test_row_chunks_inside_the_matrix_skip_gaps(shape: tuple[int, int], narrow: bool, dtype,
                                                device, monkeypatch) -> None:
    """The chunks that every diagonal crosses whole (the kernel's CHUNK_VW: sums in vectors,
    here the chunks of rows 128-511) match scipy with alpha and beta, and drop the terms of
    explicit zeros and of gaps in a diagonal where x is Inf or NaN (a zero value's x is zeroed,
    not multiplied); the edge chunks (the array of sums) alongside. ``narrow``: the vectors of
    a device whose compiler needs them narrow (``Device.narrow_vectors``: ``NARROW_VECTORS``
    in the kernel's build options), else the device's own."""
    narrow = narrow or device.narrow_vectors
    if narrow:
        monkeypatch.setattr(clspmv.Device, "narrow_vectors", property(lambda self: True))
    m, n = shape
    rng = np.random.default_rng(5)
    offsets = [-65, -3, 0, 1, 5, 64]
    coo = sp.diags([rng.uniform(0.5, 1.5, min(m, n) + 65) for _ in offsets], offsets,
                   shape=shape, format="coo")
    on_1 = coo.col == coo.row + 1
    coo.data[on_1 & (coo.row >= 200) & (coo.row < 260)] = 0.0  # explicit zeros
    gap = on_1 & (coo.row == 400)  # a gap in diagonal 1
    A = sp.csr_matrix((coo.data[~gap], (coo.row[~gap], coo.col[~gap])), shape=shape)
    assert A.nnz == coo.nnz - 1 and (A.data == 0).sum() == 60
    x = rng.uniform(-1, 1, n)
    x[[230, 401]] = [np.inf, np.nan]  # met by a zero (row 229), a gap (row 400), nonzeros
    x = x.astype(dtype)
    M = clspmv.DeviceMatrix.from_scipy(A, format="dia", device=device, dtype=dtype,
                                       row_chunks=True)
    y0 = np.linspace(-1.0, 1.0, m).astype(dtype)
    y = M.matvec(x, y0.copy(), alpha=1.5, beta=-0.5)
    assert_matches(y, oracle_matrix("dia", A, dtype), x, dtype, 1.5, -0.5, y0)
    assert np.isfinite(y[[229, 400]]).all() and not np.isfinite(y[[230, 401]]).any()
    options = M._fmt._kernel.program.get_build_info(device.cl_device,
                                                    cl.program_build_info.OPTIONS)
    assert ("-DNARROW_VECTORS=1" in options) == narrow


def _diagonals(csr: sp.csr_matrix) -> np.ndarray:
    coo = csr.tocoo()
    return np.unique(coo.col.astype(np.int64) - coo.row)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 18])
@pytest.mark.parametrize("shape", [(300, 300), (120, 90), (90, 120), (1, 50), (50, 1)])
def test_diagonal_pass_in_chunks(shape: tuple[int, int], chunk: int,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The occupied diagonals, the model's exact count and DIA's arrays are the same whatever
    the chunk of the pass (chunks of one row, of a few rows with empty ones, all rows)."""
    rng = np.random.default_rng(5)
    A = sp.random(*shape, density=0.05, random_state=rng, format="csr")
    empty = min(shape) // 2
    A.data[A.indptr[empty]:A.indptr[empty + 1]] = 0.0  # an empty row
    A.eliminate_zeros()
    layout = Layout(simd_width=8, work_group_size=64, compute_units=2, local_memory=1 << 15)
    whole = convert(A, "dia", layout, resolve(np.float64, np.float64)).host
    monkeypatch.setattr(conversion, "DIAGONAL_CHUNK_ENTRIES", chunk)
    want = _diagonals(A)
    assert np.array_equal(conversion.occupied_diagonals(A), want)
    assert exact_diagonals(A) == (want.size, diagonal_rows(want, *shape))
    chunked = convert(A, "dia", layout, resolve(np.float64, np.float64)).host
    assert np.array_equal(chunked["offsets"], want)
    assert np.array_equal(chunked["val"], whole["val"])
