"""The long rows of the six row-per-work-item formats: the COO tail of ``sell`` and ``pjds``
(``clspmv/formats/long_rows.py``) and the chunks over the shared arrays of the four CSR kernels
(``clspmv/formats/csr_chunks.py``): split forced (a small ``long_rows``) and by default,
forward (beta = 0 on a NaN y, and beta != 0), transposed, several right-hand sides, row blocks
and column maps, to_scipy, the parameter's checks, the memory count and the time model's view,
against scipy under the per-row bound of ``oracle.py``."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_data

import clspmv
from clspmv.formats import FORMAT_CLASSES, Layout, convert
from clspmv.formats.csr_chunks import LongRowChunks
from clspmv.formats.long_rows import (
    MIN_LONG_ROW,
    TAIL_WORK_GROUP,
    LongRowSplit,
    long_row_limit,
)
from clspmv.matrix import canonical_csr
from clspmv.model import Calibration
from clspmv.model.features import SPLIT_FORMATS, features, main_part, tail_part
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import TERMS, quick_default
from clspmv.precision import resolve

from oracle import assert_matches, oracle_matrix, products_match

CHUNKED = ["csr-scalar", "csr-vector", "csr-aligned", "csr-blocks"]
"""The CSR kernels, whose long rows are summed by chunks over their own arrays."""
SPLIT = [*CHUNKED, "sell", "pjds"]
FORCED = 8
"""A ``long_rows`` small enough to split the test matrices' long rows."""


def long_row(length: int = 150_000, rows: int = 40, seed: int = 0) -> sp.csr_matrix:
    """``rows`` rows of a few entries, row 7 holding ``length`` entries."""
    rng = np.random.default_rng(seed)
    B = sp.random(rows, length, density=3 / length, format="csr", random_state=seed)
    full = sp.csr_matrix((rng.uniform(0.5, 1.5, length), (np.full(length, 7), np.arange(length))),
                         B.shape)
    return sp.csr_matrix(B + full)


def arrow(n: int = 3000) -> sp.csr_matrix:
    """Diagonal, full first row and full first column."""
    rng = np.random.default_rng(1)
    idx = np.arange(n)
    rows = np.concatenate([idx, np.zeros(n - 1, int), idx[1:]])
    cols = np.concatenate([idx, idx[1:], np.zeros(n - 1, int)])
    return sp.csr_matrix((rng.uniform(-1, 1, 3 * n - 2), (rows, cols)), shape=(n, n))


MATRICES = {
    "long-row": long_row,
    "arrow": arrow,
    "empty-rows": lambda: sp.csr_matrix((40, 30)),
    "one-column": lambda: sp.csr_matrix(np.random.default_rng(2).uniform(-1, 1, (5000, 1))),
    "one-row": lambda: sp.csr_matrix(np.random.default_rng(3).uniform(-1, 1, (1, 5000))),
}
SPLITS = {"forced": FORCED, "default": "auto"}


def upload(A: sp.csr_matrix, fmt: str, device, dtype, split: str, **kwargs) -> object:
    return clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype,
                                          long_rows=SPLITS[split], **kwargs)


def expected_tail(A: sp.csr_matrix, limit: int) -> int:
    lengths = np.diff(A.indptr)
    return int(lengths[lengths > limit].sum())


def skip_without_atomics(device, dtype) -> None:
    if dtype == np.float64 and not device.int64_atomics:
        pytest.skip(f"{device.name} has no 64-bit atomics")


def test_the_six_formats_split() -> None:
    assert sorted(SPLIT_FORMATS) == sorted(SPLIT)
    assert all(issubclass(FORMAT_CLASSES[f], LongRowChunks) for f in CHUNKED)
    assert all(issubclass(FORMAT_CLASSES[f], LongRowSplit) for f in SPLIT if f not in CHUNKED)


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("name", list(MATRICES))
@pytest.mark.parametrize("fmt", SPLIT)
def test_forward_transpose_and_readback(fmt: str, name: str, split: str, dtype, device) -> None:
    A = MATRICES[name]()
    M = upload(A, fmt, device, dtype, split)
    limit = M.params["long_rows"]
    if split == "forced":
        assert limit == FORCED
    else:
        assert limit == long_row_limit(A.nnz, device.simd_width, device.compute_units,
                                       fmt != "csr-blocks")
    # csr-aligned's kernel sees rows padded to 16: the limit rounded up to a multiple of 16
    kernel_limit = -(-limit // 16) * 16 if fmt == "csr-aligned" else limit
    assert M._fmt.tail_nnz == expected_tail(A, kernel_limit)
    if name in ("long-row", "arrow", "one-row") and split == "forced":
        assert M._fmt.tail_nnz >= A.shape[1] - 1  # the long row is in the tail
    ref = oracle_matrix(fmt, A, dtype)
    products_match(M, ref, dtype)
    back = M.to_scipy()
    assert back.shape == A.shape and back.nnz == A.nnz
    np.testing.assert_array_equal(back.toarray(), A.astype(dtype).toarray())
    skip_without_atomics(device, dtype)
    rng = np.random.default_rng(4)
    xt = rng.uniform(-1, 1, A.shape[0]).astype(dtype)
    yt0 = rng.uniform(-1, 1, A.shape[1]).astype(dtype)
    assert_matches(M.rmatvec(xt, np.full(A.shape[1], np.nan, dtype), alpha=2.0), ref.T.tocsr(),
                   xt, dtype, 2.0)
    assert_matches(M.rmatvec(xt, yt0.copy(), alpha=-1.0, beta=0.5), ref.T.tocsr(), xt, dtype,
                   -1.0, 0.5, yt0)


@pytest.mark.parametrize("split", list(SPLITS))
@pytest.mark.parametrize("name", ["long-row", "arrow", "empty-rows"])
@pytest.mark.parametrize("fmt", SPLIT)
def test_several_right_hand_sides(fmt: str, name: str, split: str, dtype, device) -> None:
    A = MATRICES[name]()
    M = upload(A, fmt, device, dtype, split)
    # a COO tail: one product per column; the CSR kernels' A X takes the long rows too
    assert M._fmt.has_matmat == (fmt in CHUNKED or M._fmt.tail_nnz == 0)
    rng = np.random.default_rng(5)
    X = rng.uniform(-1, 1, (A.shape[1], 3)).astype(dtype)
    Y0 = rng.uniform(-1, 1, (A.shape[0], 3)).astype(dtype)
    Y = M.matmat(X, Y0.copy(), alpha=1.5, beta=-2.0)
    ref = oracle_matrix(fmt, A, dtype)
    for j in range(3):
        assert_matches(Y[:, j], ref, X[:, j], dtype, 1.5, -2.0, Y0[:, j])


@pytest.mark.parametrize("fmt", SPLIT)
def test_row_block_with_a_column_map(fmt: str, dtype, device) -> None:
    """A split block writing rows 10..49 of a longer y, its compact columns mapped into a longer
    x; forward (beta = 0 leaves the other rows' NaN), transposed and A X."""
    part = long_row(3000, 40, seed=6)
    n = 5000
    cmap = np.sort(np.random.default_rng(7).choice(n, part.shape[1], replace=False))
    M = clspmv.DeviceMatrix.from_scipy(part, format=fmt, device=device, dtype=dtype,
                                       long_rows=FORCED, column_map=cmap, n_cols=n)
    assert M._fmt.tail_nnz >= 3000
    x = np.random.default_rng(8).uniform(-1, 1, n).astype(dtype)
    ref = oracle_matrix(fmt, part, dtype)
    for beta in (0.0, 2.0):
        y0 = np.random.default_rng(9).uniform(-1, 1, 60).astype(dtype)
        y = np.full(60, np.nan, dtype) if beta == 0 else y0.copy()
        M.matvec(x, y, alpha=0.5, beta=beta, row_offset=10)
        outside = np.r_[0:10, 50:60]
        if beta == 0:
            assert np.isnan(y[outside]).all()
        else:
            np.testing.assert_array_equal(y[outside], y0[outside])
        assert_matches(y[10:50], ref, x[cmap], dtype, 0.5, beta, y0[10:50] if beta else None)
    X = np.random.default_rng(10).uniform(-1, 1, (n, 2)).astype(dtype)
    Y = np.zeros((60, 2), dtype)
    M.matmat(X, Y, row_offset=10)
    for j in range(2):
        assert_matches(Y[10:50, j], ref, X[cmap, j], dtype)
    back = M.to_scipy()
    np.testing.assert_array_equal(back[:, cmap].toarray(), part.astype(dtype).toarray())
    skip_without_atomics(device, dtype)
    xt = np.random.default_rng(11).uniform(-1, 1, 60).astype(dtype)
    yt = np.full(n, np.nan, dtype)
    yt[cmap] = 1.0
    M.rmatvec(xt, yt, alpha=1.0, beta=-1.0, row_offset=10)
    assert np.isnan(np.delete(yt, cmap)).all()
    assert_matches(yt[cmap], ref.T.tocsr(), xt[10:50], dtype, 1.0, -1.0,
                   np.ones(cmap.size, dtype))


def test_strips_with_split_blocks(dtype, device) -> None:
    A = arrow(2000)
    plan = [[0, 700, "csr-scalar", {"long_rows": FORCED}], [700, 2000, "sell", {}]]
    M = clspmv.DeviceMatrix.from_scipy(A, format="strips", device=device, dtype=dtype,
                                       blocks=plan)
    assert M._fmt.blocks[0][2].tail_nnz == 2000
    products_match(M, A, dtype)
    np.testing.assert_array_equal(M.to_scipy().toarray(), A.astype(dtype).toarray())


@pytest.mark.parametrize("fmt", SPLIT)
def test_copies_split_alike(fmt: str, device) -> None:
    A = arrow(1500)
    M = upload(A, fmt, device, np.float32, "forced")
    C = M.copy()
    assert C.params["long_rows"] == FORCED and C._fmt.tail_nnz == M._fmt.tail_nnz
    products_match(C, A, np.float32)


@pytest.mark.parametrize("fmt", ["csr-scalar", "csr-vector"])
def test_memory_counts_the_long_rows(fmt: str, device) -> None:
    A = arrow(3000)
    off = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, long_rows=0)
    on = upload(A, fmt, device, np.float64, "forced")
    assert on._fmt.tail_nnz == 3000  # row 0; the others hold 2 entries
    chunks = on.params["long_chunks"]
    assert chunks == -(-3000 // on.params["long_cap"])
    # the long row's number and chunk pointers, each chunk's two ends and its float64 sum; the
    # entries themselves stay in the CSR arrays, counted once
    assert on.nbytes - off.nbytes == 4 + 2 * 4 + chunks * (2 * 4 + 8)


def test_off_keeps_every_row(device) -> None:
    A = long_row(20_000)
    for off in (0, None):
        M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, long_rows=off)
        assert M.params["long_rows"] == 0 and M._fmt.tail_nnz == 0 and M._fmt.has_matmat
        products_match(M, A, np.float64)


@pytest.mark.parametrize("bad", [-1, True, 1.5, "all", [3]])
@pytest.mark.parametrize("fmt", SPLIT)
def test_long_rows_parameter_errors(fmt: str, bad: object, device) -> None:
    with pytest.raises(ValueError, match=r"long_rows must be 'auto', a row length >= 1 \(longer "
                                         r"rows go to a COO tail\), or 0 or None for no tail, "
                                         rf"got {repr(bad).replace('[', '.').replace(']', '.')}"):
        clspmv.DeviceMatrix.from_scipy(arrow(50), format=fmt, device=device, long_rows=bad)


def test_limit_rule() -> None:
    # H200-like: 132 units of 32 lanes
    assert long_row_limit(12_000_000, 32, 132) == 12_000_000 // (132 * 32)
    assert long_row_limit(1000, 32, 132) == MIN_LONG_ROW
    # a 2-core CPU of vector width 8: a row needs a 16th of the entries, half of them where the
    # work-items do not share SIMD lanes (csr-blocks), though not on a GPU
    assert long_row_limit(1_600_000, 8, 2) == 100_000
    assert long_row_limit(1_600_000, 8, 2, lockstep=False) == 800_000
    assert long_row_limit(12_000_000, 32, 132, lockstep=False) == 12_000_000 // (132 * 32)


def test_default_leaves_rows_below_the_limit(device) -> None:
    """A row of half the default limit stays in the format's own arrays; forced, it goes."""
    rng = np.random.default_rng(12)
    ij = rng.integers(0, 20_000, (2, 200_000))
    B = sp.csr_matrix((rng.uniform(0.5, 1.5, ij.shape[1]), tuple(ij)), (20_000, 20_000))
    length = long_row_limit(B.nnz, device.simd_width, device.compute_units) // 2
    if length <= MIN_LONG_ROW:
        pytest.skip(f"{device.name}: every row of this matrix is below MIN_LONG_ROW")
    row = sp.csr_matrix((np.ones(length), (np.full(length, 5), np.arange(length))), B.shape)
    A = sp.csr_matrix(B + row)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    assert M._fmt.tail_nnz == 0
    forced = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device,
                                            long_rows=length - 1)
    assert forced._fmt.tail_nnz == np.diff(A.indptr)[5] >= length


def test_model_counts_main_part_and_tail() -> None:
    """The arrow matrix on an H200-like device: the split formats' main part has its longest
    row capped, the tail holds the full row, and the predicted time adds the tail format's on
    the tail: csr-adaptive's (its chunks) for the CSR kernels, coo's for sell and pjds."""
    A = arrow(200_000)
    plain = features(A, 32)
    f = features(A, 32, compute_units=132)
    assert plain.splits == {} and sorted(f.splits) == sorted(SPLIT)
    for split in f.splits.values():
        assert split.limit == max(MIN_LONG_ROW, A.nnz // (32 * 132))
        assert (split.tail_rows, split.tail_entries, split.main_max_row) == (1, 200_000, 2)
    cpu = features(A, 8, compute_units=2)  # csr-blocks: the row is a third of the entries
    assert "csr-blocks" not in cpu.splits and "csr-scalar" in cpu.splits
    main = main_part("csr-scalar", f)
    assert main.max_row == 2 and main.entries == A.nnz - 200_000
    assert main_part("csr-adaptive", f) is f and tail_part("csr-adaptive", f) is None
    tail = tail_part("pjds", f)
    assert tail.entries == 200_000 and tail.rows == 1
    assert main_part("pjds", f).slots_of("pjds") < f.slots_of("pjds")
    names = (*SPLIT, "coo", "csr-adaptive")
    cal = Calibration.from_json(fixture_data(), ())  # the 2-core CPU's
    after = predict_features(f, cal, formats=names)
    for fmt in SPLIT:
        tail_format = "csr-adaptive" if fmt.startswith("csr-") else "coo"
        expected = (cal.kernel_time(fmt, main_part(fmt, f))
                    + cal.kernel_time(tail_format, tail_part(fmt, f)))
        assert after[fmt].kernel_s == pytest.approx(expected), fmt
    # a GPU's: 56 ns per entry of a row one work-item walks (the H200's, LONG_ROW_SPREAD)
    gpu = quick_default("gpu", "", "", "gpu", names)
    for fmt in SPLIT:
        gpu.kernel[fmt][TERMS.index("longest")] = 56e-9
    before, after = (predict_features(g, gpu, formats=names) for g in (plain, f))
    for fmt in SPLIT:
        assert before[fmt].kernel_s > max(0.5e-3, 5 * after[fmt].kernel_s)


@pytest.mark.parametrize("fmt", ["csr-scalar", "sell"])
def test_tail_runs_wide_groups_on_warp_devices(fmt: str, device) -> None:
    """A layout of SIMD width 32 (GPUs) and groups of 32 (csr-scalar's there): the long rows'
    chunks (csr-scalar), or the tail's segmented reduction (sell, staged), run groups of
    TAIL_WORK_GROUP, and still match scipy."""
    A = arrow(5000)
    layout = Layout(32, 32, device.compute_units, device.local_memory)
    converted = convert(canonical_csr(A, np.float32), fmt, layout, resolve(None, np.float32),
                        long_rows=FORCED)
    if fmt == "sell":
        assert converted.params["tail_wg"] == TAIL_WORK_GROUP and converted.params["tail_staged"]
    else:
        assert converted.params["long_wg"] == TAIL_WORK_GROUP
    M = clspmv.DeviceMatrix.upload(converted, device)
    products_match(M, A, np.float32)
