"""The composite format ``strips`` and the dynamic programme that plans it.

Products of plans that use every single format (several matrices, blocks rotated) against scipy
under the per-row bound of ``oracle.py``: forward, transposed, several right-hand sides, alpha /
beta, beta = 0 on a NaN-filled y, column maps; the plan's checks; ``to_scipy``. The DP
(:mod:`clspmv.model.strips`) on synthetic cost tables with hand-checked optima, against brute
force, with a fake predictor on a stacked matrix, and with the stored calibration fixture.
"""

from __future__ import annotations

import itertools

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_data

import clspmv
from clspmv.bench.generators import generate
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS
from clspmv.model import timemodel
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.strip_summaries import StripSummaries
from clspmv.model.strips import (
    AUTO_MARGIN,
    StripsPlan,
    block_calibration,
    partition,
    plan_for_device,
    plan_strips,
    strip_rows,
)
from clspmv.model.timemodel import Calibration

from oracle import assert_matches, oracle_matrix

COLS = 90
PER_BLOCK = 12


def matrix(seed: int) -> sp.csr_matrix:
    """Rows of uneven lengths: random ones, a diagonal, an empty row and a full row in every
    block of :data:`PER_BLOCK` rows, without explicit zeros."""
    rows = PER_BLOCK * len(SINGLE_FORMATS)
    A = sp.random(rows, COLS, density=0.06, format="lil", random_state=seed)
    A.setdiag(np.arange(1, min(rows, COLS) + 1, dtype=float))
    rng = np.random.default_rng(seed)
    for b in range(len(SINGLE_FORMATS)):
        A[b * PER_BLOCK + 3, :] = rng.standard_normal(COLS)
        A[b * PER_BLOCK + 7, :] = 0
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    return A


def every_format_plan(seed: int) -> list[tuple[int, int, str]]:
    """One block of :data:`PER_BLOCK` rows per single format, the order rotated by ``seed``."""
    names = list(SINGLE_FORMATS)
    names = names[seed % len(names):] + names[:seed % len(names)]
    return [(i * PER_BLOCK, (i + 1) * PER_BLOCK, f) for i, f in enumerate(names)]


def oracle(A: sp.csr_matrix, plan: list, dtype: np.dtype) -> sp.csr_matrix:
    """The matrix the plan's products must match: each block's oracle (explicit zeros dropped in
    DIA blocks)."""
    return sp.vstack([oracle_matrix(b[2], A[b[0]:b[1]], dtype) for b in plan]).tocsr()


def vector(n: int, seed: int, dtype: np.dtype, k: int | None = None) -> np.ndarray:
    shape = n if k is None else (n, k)
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def needs_atomics(M: clspmv.DeviceMatrix, device, dtype: np.dtype) -> None:
    if dtype == np.float64 and M._fmt.transpose_atomics and not device.int64_atomics:
        pytest.skip(f"{device.name} has no 64-bit atomics for the transposed blocks")


@pytest.mark.parametrize("seed", [0, 5, 9])
@pytest.mark.parametrize("alpha,beta", [(1.0, 0.0), (-0.5, 2.0)])
def test_plan_of_every_format(seed: int, alpha: float, beta: float, dtype: np.dtype,
                              device) -> None:
    A, plan = matrix(seed), every_format_plan(seed)
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       blocks=plan)
    assert M.format == "strips" and [b[:3] for b in M._fmt.plan] == plan
    in_place = [bool(b.get_info(cl.mem_info.FLAGS) & cl.mem_flags.USE_HOST_PTR)
                for _, _, fmt in M._fmt.blocks for k, b in fmt.buffers.items()
                if k in fmt._specs and b.size > 8]  # the arrays, not scratch buffers
    assert in_place and all(i == device.shares_host_pointer for i in in_place)
    ref = oracle(A, plan, dtype)
    m, n = A.shape
    # forward; beta = 0 never reads y
    x, y0 = vector(n, 1, dtype), vector(m, 2, dtype)
    y = np.full(m, np.nan, dtype) if beta == 0 else y0.copy()
    M.matvec(x, y, alpha=alpha, beta=beta)
    assert_matches(y, ref, x, dtype, alpha, beta, y0 if beta else None)
    # several right-hand sides (coo, hyb and dia blocks: one product per column)
    X, Y0 = vector(n, 3, dtype, 3), vector(m, 4, dtype, 3)
    Y = np.full((m, 3), np.nan, dtype) if beta == 0 else Y0.copy()
    M.matmat(X, Y, alpha=alpha, beta=beta)
    for j in range(3):
        assert_matches(Y[:, j], ref, X[:, j], dtype, alpha, beta, Y0[:, j] if beta else None)
    # transposed: beta once, every block adds
    needs_atomics(M, device, dtype)
    xt, yt0 = vector(m, 5, dtype), vector(n, 6, dtype)
    yt = np.full(n, np.nan, dtype) if beta == 0 else yt0.copy()
    M.rmatvec(xt, yt, alpha=alpha, beta=beta)
    assert_matches(yt, ref.T.tocsr(), xt, dtype, alpha, beta, yt0 if beta else None)
    Xt = vector(m, 7, dtype, 2)
    Yt = M.rmatmat(Xt, alpha=alpha)
    for j in range(2):
        assert_matches(Yt[:, j], ref.T.tocsr(), Xt[:, j], dtype, alpha)


def test_block_kernels_for_several_right_hand_sides(dtype: np.dtype, device) -> None:
    """A plan of formats that all have a several-right-hand-sides kernel takes them (one launch
    per block), in a longer Y (row_offset)."""
    A = matrix(2)
    names = [f for f in SINGLE_FORMATS if FORMAT_CLASSES[f].has_matmat]
    plan = [(i * PER_BLOCK, (i + 1) * PER_BLOCK, f) for i, f in enumerate(names)]
    plan.append((len(names) * PER_BLOCK, A.shape[0], "csr-vector"))
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       blocks=plan)
    assert M._fmt.has_matmat
    m, n = A.shape
    X, Y0 = vector(n, 1, dtype, 5), vector(m + 9, 2, dtype, 5)
    Y = Y0.copy()
    M.matmat(X, Y, alpha=1.5, beta=-1.0, row_offset=4)
    assert len(M.last_events) == len(plan)
    np.testing.assert_array_equal(Y[:4], Y0[:4])
    np.testing.assert_array_equal(Y[4 + m:], Y0[4 + m:])
    for j in range(5):
        assert_matches(Y[4:4 + m, j], oracle(A, plan, dtype), X[:, j], dtype, 1.5, -1.0,
                       Y0[4:4 + m, j])


def test_column_mapped_strips(dtype: np.dtype, device) -> None:
    """Every block reads x through the column map; the transpose writes y[column_map] only."""
    A, plan = matrix(4), every_format_plan(4)
    n_full = 3 * COLS
    cmap = np.random.default_rng(0).permutation(n_full)[:COLS]
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       blocks=plan, column_map=cmap, n_cols=n_full)
    full = sp.csr_matrix((A.data, cmap[A.indices], A.indptr), shape=(A.shape[0], n_full))
    ref_blocks = oracle(A, plan, dtype)
    ref = sp.csr_matrix((ref_blocks.data, cmap[ref_blocks.indices], ref_blocks.indptr),
                        shape=full.shape)
    x = vector(n_full, 1, dtype)
    assert_matches(M.matvec(x), ref, x, dtype)
    needs_atomics(M, device, dtype)
    xt = vector(A.shape[0], 2, dtype)
    yt = np.full(n_full, np.nan, dtype)
    M.rmatvec(xt, yt, beta=0.0)
    untouched = np.setdiff1d(np.arange(n_full), cmap)
    assert np.isnan(yt[untouched]).all()
    assert_matches(yt[cmap], ref_blocks.T.tocsr(), xt, dtype)


@pytest.mark.parametrize("seed", [1, 6])
def test_to_scipy_round_trip(seed: int, device) -> None:
    A, plan = matrix(seed), every_format_plan(seed)
    A.data[::7] = 0.0  # explicit zeros: kept by every block but DIA's
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=np.float64,
                                       blocks=plan)
    back = M.to_scipy()
    want = oracle(A, plan, np.float64)
    want.sort_indices()
    assert back.shape == A.shape
    np.testing.assert_array_equal(back.indptr, want.indptr)
    np.testing.assert_array_equal(back.indices, want.indices)
    np.testing.assert_array_equal(back.data, want.data)
    assert M._fmt.zeros_absent  # a DIA block
    assert M.nbytes == sum(f.nbytes for _, _, f in M._fmt.blocks) > 0


def test_default_plan_is_one_csr_vector_block(device) -> None:
    A = matrix(3)
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device)
    assert [b[:3] for b in M._fmt.plan] == [(0, A.shape[0], "csr-vector")]
    assert M.params == {"blocks": [[0, A.shape[0], "csr-vector", {}]], "strip_rows": 0}


@pytest.mark.parametrize("blocks,message", [
    ([(0, 50, "csr-vector"), (60, 156, "ell")], "should start at row 50"),
    ([(0, 50, "csr-vector")], "they end at row 50"),
    ([(0, 156, "strips")], "format must be one of"),
    ([(0, 156, "csr-fast")], "format must be one of"),
    ([(0, 0, "coo"), (0, 156, "coo")], "each non-empty"),
    ([(0, 156)], "is (row_start, row_stop, format)"),
    ([], "they end at row 0"),
])
def test_plan_errors(blocks: list, message: str, device) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        clspmv.DeviceMatrix.from_scipy(matrix(0), format="strips", device=device, blocks=blocks)


def test_block_params_and_work_group(device) -> None:
    A = matrix(0)
    plan = [(0, 60, "csr-vector", {"threads_per_row": 4, "work_group_size": 64}),
            (60, A.shape[0], "hyb", {"width": 2})]
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, blocks=plan)
    assert M._fmt.plan == [tuple(b) for b in plan]  # as given: a conversion rebuilds it
    first, second = M._fmt.blocks[0][2], M._fmt.blocks[1][2]
    assert first.params["threads_per_row"] == 4 and first.layout.work_group_size == 64
    assert second.params["width"] == 2
    x = vector(A.shape[1], 0, np.float64)
    assert_matches(M.matvec(x), A, x, np.float64)


# -- the dynamic programme --------------------------------------------------------------------
def additive(table: dict[str, list[float]]):
    """block_cost of a table of per-strip costs per format (a block costs the sum of its strips
    in its cheapest format)."""
    def cost(i: int, j: int) -> tuple[float, str]:
        return min((sum(c[i:j]), f) for f, c in table.items())
    return cost


def test_partition_hand_checked() -> None:
    table = {"a": [1, 1, 5, 5], "b": [5, 5, 1, 1]}
    # two blocks: 2 + 2 plus two launches of 0.5
    assert partition(additive(table), 4, 0.5) == (5.0, [(0, 2, "a"), (2, 4, "b")])
    # launches dearer than the gain: one block (12 + 20 against 4 + 40)
    assert partition(additive(table), 4, 20.0) == (32.0, [(0, 4, "a")])

    def whole_cheaper(i: int, j: int) -> tuple[float, str]:
        return (3.0, "c") if (i, j) == (0, 4) else additive(table)(i, j)
    assert partition(whole_cheaper, 4, 0.5) == (3.5, [(0, 4, "c")])

    def refused_middle(i: int, j: int) -> tuple[float, str | None]:
        return (np.inf, None) if i <= 1 < j and (i, j) != (1, 2) else (float(j - i), "a")
    # every block spanning strip 1 but (1, 2) alone is refused: 1 must be a block of its own
    assert partition(refused_middle, 3) == (3.0, [(0, 1, "a"), (1, 2, "a"), (2, 3, "a")])
    with pytest.raises(ValueError, match="no strips plan"):
        partition(lambda i, j: (np.inf, None), 3)


def test_partition_matches_brute_force() -> None:
    rng = np.random.default_rng(0)
    n = 7
    table = {f: rng.uniform(0.5, 3.0, (n + 1, n + 1)) for f in ("p", "q", "r")}

    def cost(i: int, j: int) -> tuple[float, str]:
        return min((float(t[i, j] * (j - i) ** 0.8), f) for f, t in table.items())
    launch = 0.3
    best = np.inf
    for cuts in itertools.product([False, True], repeat=n - 1):
        bounds = [0] + [k + 1 for k, c in enumerate(cuts) if c] + [n]
        best = min(best, sum(cost(a, b)[0] + launch for a, b in zip(bounds, bounds[1:],
                                                                    strict=False)))
    total, blocks = partition(cost, n, launch)
    assert total == pytest.approx(best)
    assert sum(cost(i, j)[0] + launch for i, j, _ in blocks) == pytest.approx(total)


def test_strip_rows() -> None:
    assert strip_rows(1000, 8, 256) == 256  # lcm(64, 256), at least
    assert strip_rows(10**6, 32, 128) % 256 == 0 and -(-10**6 // strip_rows(10**6, 32, 128)) <= 32
    assert strip_rows(10**6, 8, 256, max_strips=64) == 15872
    # few entries: fewer strips (here 4 of about 2**15 entries)
    assert strip_rows(10**6, 8, 256, entries=4 * 2**15 + 5) == 250112


def fake_predictor(fmt: str, f) -> float | None:
    """ellr pays its padding (one unit per slot), csr-vector 1.5 units per entry."""
    if fmt == "ellr":
        return float(f.slots_of("ellr"))
    if fmt == "csr-vector":
        return 1.5 * f.entries
    return None


def test_plan_with_fake_predictor_on_stacked_matrix() -> None:
    """A stencil above a power-law block: the stencil's strips in ellr, the block boundary at
    the last strip holding only stencil rows, the rest in whatever the costs say; the plan's
    time is the sum of the fake costs of the exact blocks."""
    A = generate("gen:stacked:k=20,scale=13,edges=8")  # 8000 stencil rows, then 8192
    plan = plan_strips(A, fake_predictor, 8, 256, launch_cost=100.0, min_strip_entries=1)
    assert plan.strip_rows == 512  # 16192 rows in 32 strips, a multiple of 256
    assert plan.blocks[0] == (0, 7680, "ellr")  # strip 15 (7680..8191) mixes the two
    assert [b[0] for b in plan.blocks[1:]] == [b[1] for b in plan.blocks[:-1]]
    assert plan.blocks[-1][1] == A.shape[0]
    exact = sum(fake_predictor(f, features(A, 8, rows=slice(r0, r1))) + 100.0
                for r0, r1, f in plan.blocks)
    assert plan.predicted_s == pytest.approx(exact)
    assert plan.single_format == "csr-vector"
    assert plan.single_s == pytest.approx(1.5 * A.nnz + 100.0)
    assert plan.gain > AUTO_MARGIN and plan.worthwhile


def test_auto_rule() -> None:
    def made(blocks: int, predicted: float) -> StripsPlan:
        return StripsPlan(256, tuple((i, i + 1, "coo") for i in range(blocks)), predicted,
                          "ell", 1.0, 0.0)
    assert made(2, 0.9).worthwhile and made(3, 0.5).worthwhile
    assert not made(2, 0.91).worthwhile  # less than the 10 % margin
    assert not made(1, 0.5).worthwhile  # one block is a single format
    assert made(2, 0.95).worth_a_trial and not made(2, 0.96).worth_a_trial
    assert not made(1, 0.5).worth_a_trial


def fixture(device: clspmv.Device) -> Calibration:
    return Calibration.from_json(fixture_data(), SINGLE_FORMATS)


@pytest.mark.parametrize("spec", ["gen:stacked:k=20,scale=13",
                                  "gen:stacked:k=20,scale=13,count=4,long=3000"])
def test_plan_with_calibration_fixture(spec: str, dtype: np.dtype, device) -> None:
    """The DP over the fixture's models: a plan covering the rows, never predicted slower than
    the best single format, the same on a second run, and correct products."""
    A = generate(spec)
    cal = fixture(device)
    plan = plan_strips(A, cal, device.simd_width, 256)
    again = plan_strips(A, cal, device.simd_width, 256)
    assert plan.blocks == again.blocks and plan.predicted_s == again.predicted_s
    assert plan.blocks[0][0] == 0 and plan.blocks[-1][1] == A.shape[0]
    assert all(f in SINGLE_FORMATS for _, _, f in plan.blocks)
    assert plan.predicted_s <= plan.single_s * (1 + 1e-12)
    assert plan.single_format in SINGLE_FORMATS and plan.cost_ms > 0
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       **plan.params())
    x = vector(A.shape[1], 0, dtype)
    assert_matches(M.matvec(x), oracle(A, list(plan.blocks), dtype), x, dtype)
    on_device = plan_for_device(A, device, cal)
    assert on_device.blocks == plan.blocks or device.max_work_group_size < 256
    assert len(on_device.block_params) == len(on_device.blocks)
    for (_, _, fmt), params in zip(on_device.blocks, on_device.block_params, strict=True):
        wg = FORMAT_CLASSES[fmt].preferred_work_group_size(device)
        assert params == ({} if wg in (None, min(256, device.max_work_group_size))
                          else {"work_group_size": wg})


def test_a_block_sees_the_whole_matrix_s_misses() -> None:
    """A block of a quarter of a matrix's entries, predicted under block_calibration, misses the
    cache (the stream's miss curve) and takes the quick calibration's correction beyond it as a
    product of four times its bytes does: the blocks of a strips product stream one after
    another, as the whole matrix does."""
    cal = Calibration.from_json(fixture_data(), SINGLE_FORMATS)
    cal.stream_miss = [[1e5, 0.0], [1e9, 1.0]]
    cal.large_ratio, cal.large_miss = {f: 3.0 for f in SINGLE_FORMATS}, 0.8
    A = generate("gen:random:n=40000,k=8,seed=1")
    whole, block = features(A, 16), features(A[: A.shape[0] // 4], 16)
    quarter = block_calibration(cal, block.entries, 4 * block.entries)
    for fmt in ("csr-blocks", "sell"):
        bytes_ = timemodel.streamed_bytes(fmt, block)
        assert quarter.cache_bytes == cal.cache_bytes // 4
        assert timemodel.stream_miss_share(bytes_, quarter.cache_bytes, quarter.stream_miss) == (
            pytest.approx(timemodel.miss_share(cal.stream_miss, 4 * bytes_)))
        assert quarter.large_factor(fmt, block) > cal.large_factor(fmt, block) > 1.0
        assert quarter.large_factor(fmt, block) == pytest.approx(
            cal.large_factor(fmt, whole), rel=0.05)
    assert block_calibration(cal, block.entries, block.entries) is cal


def test_plan_params_carry_block_params(device) -> None:
    A = matrix(0)
    plan = StripsPlan(256, ((0, 60, "csr-adaptive"), (60, A.shape[0], "sell")), 1.0, "ell",
                      2.0, 0.0, block_params=({"work_group_size": 64}, {}))
    assert plan.params()["blocks"] == [[0, 60, "csr-adaptive", {"work_group_size": 64}],
                                       [60, A.shape[0], "sell", {}]]
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, **plan.params())
    assert M._fmt.blocks[0][2].layout.work_group_size == 64
    x = vector(A.shape[1], 0, np.float64)
    assert_matches(M.matvec(x), A, x, np.float64)


@pytest.mark.parametrize("shape", [(0, 5), (7, 0), (10, 10)])
def test_plan_of_empty_and_tiny_matrices(shape: tuple[int, int], device) -> None:
    A = sp.csr_matrix(np.eye(*shape)) if 0 not in shape else sp.csr_matrix(shape)
    A.indices, A.indptr = A.indices.astype(np.int32), A.indptr.astype(np.int32)
    plan = plan_strips(A, fixture(device), device.simd_width, 256)
    assert len(plan.blocks) == 1 and not plan.worthwhile
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, **plan.params())
    x = vector(shape[1], 0, np.float64)
    np.testing.assert_array_equal(M.matvec(x), A @ x)
    np.testing.assert_array_equal(M.rmatvec(np.ones(shape[0])), A.T @ np.ones(shape[0]))


def test_mixed_precision_reaches_every_block(device) -> None:
    if not device.fp64:
        pytest.skip(f"{device.name} has no fp64 for dtype='mixed'")
    A, plan = matrix(8), every_format_plan(8)
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype="mixed",
                                       blocks=plan)
    assert M.precision == "mixed"
    assert {f.accumulate for _, _, f in M._fmt.blocks} == {np.dtype(np.float64)}
    x = vector(A.shape[1], 1, np.float32)
    assert_matches(M.matvec(x), oracle(A, plan, np.float32), x, np.float32)


def test_params_rebuild_the_plan(device) -> None:
    """``M.params`` are conversion parameters: converting again with them gives the same plan
    (what a copy or a pickle of the matrix does)."""
    A = matrix(3)
    last = PER_BLOCK * (len(SINGLE_FORMATS) - 1)
    plan = [*every_format_plan(3)[:-1], (last, A.shape[0], "hyb", {"width": 1})]
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, blocks=plan)
    again = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, **M.params)
    assert again._fmt.plan == M._fmt.plan and again._fmt.blocks[-1][2].params["width"] == 1
    x = vector(A.shape[1], 0, np.float64)
    np.testing.assert_array_equal(again.matvec(x), M.matvec(x))


def test_pickle_copy_and_astype_keep_the_plan(device) -> None:
    import pickle

    A, plan = matrix(5), every_format_plan(5)
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, blocks=plan)
    x = vector(A.shape[1], 0, np.float64)
    for N in (pickle.loads(pickle.dumps(M)), M.copy(), M.astype(np.float32)):
        assert [b[:3] for b in N._fmt.plan] == plan
        assert_matches(N @ x.astype(N.dtype), oracle(A, plan, N.dtype), x.astype(N.dtype),
                       N.dtype)


@pytest.mark.parametrize("spec", ["gen:stacked:k=12,scale=12,edges=8",
                                  "gen:stacked:k=12,scale=12,count=3,long=1500",
                                  "gen:banded:n=9000,diags=5,spread=50"])
def test_block_features_combined_from_strips(spec: str) -> None:
    """Every count, the padded formats' slots and the occupied diagonals of a block of strips,
    combined from the strip summaries, equal the features of the block's rows (the gathers
    from x are sample estimates in both: within 25 %)."""
    A = generate(spec)
    summary = StripSummaries(A, 8, 512)
    n = summary.count
    for i, j in [(0, n), (0, n // 2), (n // 3, n), (1, 2), (n - 1, n)]:
        d, crossed = summary.diagonal_counts(i)[j - i - 1]
        if j == i + 1:
            assert summary.strip_diagonals(i) == (d, crossed)
        got = summary.block(i, j, (d, crossed))
        r0, r1 = summary.rows_of(i, j)
        want = with_exact_diagonals(features(A, 8, rows=slice(r0, r1)), A[r0:r1])
        for key in ("rows", "cols", "entries", "empty_rows", "max_row", "hyb_width",
                    "lane_padding"):
            assert getattr(got, key) == getattr(want, key), (key, i, j)
        assert got.std_row == pytest.approx(want.std_row)
        assert got.slots == {**want.slots, "dia": got.slots["dia"]}
        assert d == want.diagonals or d > 4096
        if d <= 4096:
            assert got.slots["dia"] == want.slots["dia"]
            assert crossed == want.diagonal_rows
        assert got.x_lines == pytest.approx(want.x_lines, rel=0.25)


@pytest.mark.parametrize("gain", [0.5, 0.07, 0.02])
def test_auto_takes_a_worthwhile_plan(gain: float, device, monkeypatch) -> None:
    """format="auto" searches a strips plan only for many expected products, and without a
    trial takes it (blocks stored as planned, products right) when it beats the best single
    format by the margin, else the single format (a plan worth only a trial included)."""
    import sys

    select_module = sys.modules["clspmv.model.select"]  # the package exports the function
    A = generate("gen:stacked:k=20,scale=13,edges=8")
    cut = 7680
    plan = StripsPlan(512, ((0, cut, "ellr"), (cut, A.shape[0], "csr-vector")), 1.0 - gain,
                      "csr-vector", 1.0, 0.0)
    monkeypatch.setattr(select_module, "plan_for_device", lambda csr, dev, cal: plan)
    assert clspmv.DeviceMatrix.from_scipy(A, device=device).selection.strips is None  # no search
    M = clspmv.DeviceMatrix.from_scipy(A, device=device, trial=False,  # (test_trial.py)
                                       expected_products=select_module.STRIPS_MIN_PRODUCTS)
    x = vector(A.shape[1], 3, np.float64)
    assert_matches(M @ x, A, x, np.float64)
    assert M.selection.strips is plan
    if plan.worthwhile:
        assert M.format == "strips" and "row strips predicted 50% faster" in M.selection.why
        assert M.params["blocks"] == [[0, cut, "ellr", {}], [cut, A.shape[0], "csr-vector", {}]]
    else:
        assert M.format != "strips" and M.selection.format == M.format
