"""One stored CSR, several kernels (``clspmv/formats/csr_store.py``): every CSR kernel switched
to from every other on the uploaded arrays (forward, transpose, several right-hand sides,
alpha/beta, with and without long rows) against scipy under the oracle bound; the shared
buffers uploaded once; the memory counted once; the refusals; the trial on one upload; and
csr-adaptive's greedy blocks found at their starts alone equal to the walk over every row's
end; the other kernels' metadata searched at its probes alone equal to numpy's searches over
every row (the conversions before)."""

from __future__ import annotations

import gc
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.canonical import canonical_csr
from clspmv.formats import csr_store
from clspmv.formats.csr_adaptive import block_starts
from clspmv.formats.csr_blocks import count_below, row_blocks
from clspmv.formats.csr_chunks import rows_longer
from clspmv.formats.csr_store import total_nbytes
from clspmv.model import trial as trials
from clspmv.precision import resolve

from oracle import assert_matches

KERNELS = ["csr-scalar", "csr-vector", "csr-adaptive", "csr-blocks", "csr-merge"]
LONG = {"csr-scalar", "csr-vector", "csr-blocks", "csr-aligned"}
"""The kernels taking ``long_rows``."""
FORCED = 40
"""A ``long_rows`` below the long rows of :func:`matrix` and above its other rows."""


def matrix(seed: int = 0) -> sp.csr_matrix:
    """600 x 500: about 5 entries a row, rows 3 and 400 full, rows 10..19 empty."""
    rng = np.random.default_rng(seed)
    A = sp.random(600, 500, density=0.01, format="lil", random_state=seed)
    A[3, :] = rng.uniform(-1, 1, 500)
    A[400, ::2] = rng.uniform(-1, 1, 250)
    A[10:20, :] = 0
    A = sp.csr_matrix(A)
    A.eliminate_zeros()
    return A


def params_of(name: str, long_rows: object) -> dict[str, object]:
    return {"long_rows": long_rows} if name in LONG else {}


def check_products(M: clspmv.DeviceMatrix, A: sp.csr_matrix, dtype, device) -> None:
    rng = np.random.default_rng(3)
    m, n = A.shape
    x = rng.uniform(-1, 1, n).astype(dtype)
    y0 = rng.uniform(-1, 1, m).astype(dtype)
    assert_matches(M.matvec(x, np.full(m, np.nan, dtype)), A, x, dtype)
    assert_matches(M.matvec(x, y0.copy(), alpha=-1.5, beta=0.5), A, x, dtype, -1.5, 0.5, y0)
    X = rng.uniform(-1, 1, (n, 3)).astype(dtype)
    Y0 = rng.uniform(-1, 1, (m, 3)).astype(dtype)
    Y = M.matmat(X, Y0.copy(), alpha=2.0, beta=-1.0)
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], dtype, 2.0, -1.0, Y0[:, j])
    if dtype == np.float64 and not device.int64_atomics:
        return
    xt = rng.uniform(-1, 1, m).astype(dtype)
    yt0 = rng.uniform(-1, 1, n).astype(dtype)
    assert_matches(M.rmatvec(xt, yt0.copy(), alpha=0.5, beta=2.0, method="atomic"),
                   A.T.tocsr(), xt, dtype, 0.5, 2.0, yt0)


@pytest.mark.parametrize("long_rows", [0, FORCED], ids=["whole-rows", "long-rows"])
@pytest.mark.parametrize("source", KERNELS)
def test_every_kernel_switched_from_every_other(source: str, long_rows: int, dtype,
                                                device) -> None:
    A = matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format=source, device=device, dtype=dtype,
                                       **params_of(source, long_rows))
    buffers = {key: M._fmt.buffers[key].int_ptr for key in ("row_ptr", "col", "val")}
    lengths = np.diff(A.indptr)
    long_entries = int(lengths[lengths > FORCED].sum())
    assert long_entries >= 750  # rows 3 and 400
    for target in KERNELS:
        S = M.retuned(format=target, **params_of(target, long_rows))
        assert S.format == target
        assert S._fmt.store is M._fmt.store
        assert {key: S._fmt.buffers[key].int_ptr for key in buffers} == buffers
        if target in LONG:
            assert S.params["long_rows"] == long_rows
            assert S._fmt.tail_nnz == (long_entries if long_rows else 0)
            assert S._fmt.has_matmat
        check_products(S, A, dtype, device)


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The sizes of the device buffers made for matrix arrays from now on (every upload of a
    format's or a store's arrays goes through ``csr_store.matrix_buffer``)."""
    sizes: list[int] = []
    real = csr_store.matrix_buffer

    def counting(dev, a, in_place):  # type: ignore[no-untyped-def]
        sizes.append(a.size)
        return real(dev, a, in_place)

    monkeypatch.setattr(csr_store, "matrix_buffer", counting)
    return sizes


def test_switch_uploads_the_shared_arrays_once(device, made: list[int]) -> None:
    A = matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device,
                                       long_rows=FORCED)
    assert made.count(A.nnz) == 2 and A.shape[0] + 1 in made  # col, val and row_ptr
    made.clear()
    S = M.retuned(format="csr-merge")
    assert A.nnz not in made  # the merge path's metadata only
    made.clear()
    M.retuned(format="csr-blocks", long_rows=FORCED)
    assert A.nnz not in made
    assert S._fmt.store.nbytes == A.nnz * 12 + (A.shape[0] + 1) * 4


def test_switched_matrix_outlives_the_original(device) -> None:
    A = matrix(1)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    S = M.retuned(format="csr-adaptive")
    del M
    gc.collect()
    check_products(S, A, np.float64, device)
    np.testing.assert_array_equal(S.to_scipy().toarray(), A.toarray())
    back = pickle.loads(pickle.dumps(S))
    assert back.format == "csr-adaptive"
    check_products(back, A, np.float64, device)
    check_products(S.astype(np.float32), A, np.float32, device)


def test_switch_keeps_transposed_storage_and_column_map(device) -> None:
    A = matrix(2)
    C = clspmv.DeviceMatrix.from_scipy(sp.csc_matrix(A), format="csr-vector", device=device)
    S = C.retuned(format="csr-merge")
    assert S.transposed_storage and S.shape == A.shape
    x = np.random.default_rng(4).uniform(-1, 1, A.shape[1])
    assert_matches(S.matvec(x, method="transpose"), A, x, np.float64)
    n = 900
    cmap = np.sort(np.random.default_rng(5).choice(n, A.shape[1], replace=False))
    B = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, column_map=cmap,
                                       n_cols=n, long_rows=FORCED)
    for target in KERNELS:
        T = B.retuned(format=target)
        xb = np.random.default_rng(6).uniform(-1, 1, n)
        y = np.full(A.shape[0] + 20, np.nan)
        T.matvec(xb, y, row_offset=10)
        assert np.isnan(y[:10]).all() and np.isnan(y[-10:]).all()
        assert_matches(y[10:-10], A, xb[cmap], np.float64)
        np.testing.assert_array_equal(T.to_scipy()[:, cmap].toarray(), A.toarray())


def test_csr_aligned_shares_only_unpadded_rows(device) -> None:
    rows = np.repeat(np.arange(50), 32)
    cols = np.tile(np.arange(32), 50) * 3
    even = sp.csr_matrix((np.random.default_rng(7).uniform(-1, 1, rows.size), (rows, cols)),
                         shape=(50, 100))
    M = clspmv.DeviceMatrix.from_scipy(even, format="csr-scalar", device=device)
    S = M.retuned(format="csr-aligned")
    assert S._fmt.store is M._fmt.store and S._fmt.store.plain
    check_products(S, even, np.float64, device)
    assert S.retuned(format="csr-merge")._fmt.store is M._fmt.store
    P = clspmv.DeviceMatrix.from_scipy(matrix(), format="csr-scalar", device=device)
    with pytest.raises(ValueError, match=r"csr-aligned pads rows to multiples of 16 entries and "
                                         r"this matrix's rows need padding, which the shared CSR "
                                         r"arrays lack: convert the matrix again with "
                                         r"DeviceMatrix.from_scipy\(\.\.\., format='csr-aligned'"):
        P.retuned(format="csr-aligned")
    padded = clspmv.DeviceMatrix.from_scipy(matrix(), format="csr-aligned", device=device)
    assert not padded._fmt.store.plain
    with pytest.raises(ValueError, match=r"this 'csr-aligned' matrix stores its rows padded to "
                                         r"multiples of 16, not the CSR arrays the other kernels "
                                         r"read: convert the matrix again with DeviceMatrix"
                                         r".from_scipy\(\.\.\., format='csr-scalar'\)"):
        padded.retuned(format="csr-scalar")


def test_switch_refusals(device) -> None:
    M = clspmv.DeviceMatrix.from_scipy(matrix(), format="csr-vector", device=device)
    with pytest.raises(ValueError, match=r"format 'ell' does not read the CSR arrays that "
                                         r"'csr-vector' stores \(only the CSR kernels share "
                                         r"them\): convert the matrix again with DeviceMatrix"
                                         r".from_scipy\(\.\.\., format='ell'\)"):
        M.retuned(format="ell")
    with pytest.raises(ValueError, match="unknown format 'csr-nope'"):
        M.retuned(format="csr-nope")
    with pytest.raises(TypeError, match=r"format 'csr-merge' got an unexpected keyword argument "
                                        r"'long_rows'; its parameters: staged, items, shares"):
        M.retuned(format="csr-merge", long_rows=8)
    with pytest.raises(ValueError, match="block_entries must be between 2 and"):
        M.retuned(format="csr-adaptive", block_entries=1)
    H = clspmv.DeviceMatrix.from_scipy(matrix(), format="hyb", device=device)
    with pytest.raises(ValueError, match=r"format 'hyb' stores no CSR arrays for format "
                                         r"'csr-scalar' to share: convert the matrix again"):
        H.retuned(format="csr-scalar")
    # retuning without a format keeps its own rules
    with pytest.raises(ValueError, match="format 'csr-merge' has no kernel options to retune"):
        M.retuned(format="csr-merge").retuned(work_group_size=64)
    R = M.retuned(threads_per_row=4)
    assert R._fmt.store is M._fmt.store and R.params["threads_per_row"] == 4


def test_memory_counts_the_shared_arrays_once(device) -> None:
    A = matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device, long_rows=0)
    store = A.nnz * (4 + 8) + (A.shape[0] + 1) * 4
    assert M.nbytes == store  # csr-scalar holds nothing of its own
    S = M.retuned(format="csr-merge")
    B = M.retuned(format="csr-blocks", long_rows=0)
    assert B.nbytes == store + (B.params["blocks"] + 1) * 4
    assert S.nbytes == store + S._fmt.own_nbytes
    both = total_nbytes([M._fmt, S._fmt, B._fmt])
    assert both == store + S._fmt.own_nbytes + B._fmt.own_nbytes
    assert both < M.nbytes + S.nbytes + B.nbytes


def test_trial_uploads_the_csr_arrays_once(device, made: list[int]) -> None:
    A = canonical_csr(matrix(), np.float64)
    names = ["csr-vector", "csr-adaptive", "csr-merge"]
    result = trials.run(A, device, resolve(np.float64, A.dtype), names)
    assert sorted(result.kernel_ms) == sorted(names)
    assert made.count(A.nnz) == 2  # col and val, once
    store = A.nnz * 12 + (A.shape[0] + 1) * 4
    assert store < result.device_bytes < 2 * store
    assert result.converted.nbytes == store + result.converted.own_nbytes


def old_block_starts(row_ptr: np.ndarray, cap: int, align: int = 1) -> np.ndarray:
    """The walk before: every row's block end computed first, then followed."""
    n = row_ptr.size - 1
    rows = np.arange(n, dtype=np.int64)
    ends = np.searchsorted(row_ptr, row_ptr[:-1] + cap - row_ptr[:-1] % align, "right") - 1
    ends = np.minimum(np.maximum(ends, rows + 1), rows + cap)
    starts, r = [], 0
    while r < n:
        starts.append(r)
        r = int(ends[r])
    starts.append(n)
    return np.asarray(starts, np.int64)


def random_lengths(rng: np.random.Generator, kind: int) -> np.ndarray:
    """Row lengths: short rows with many empty, power-law rows, rows around 300 entries, or
    no entries at all; sometimes no row or one."""
    rows = int(rng.integers(0, 400)) if rng.random() < 0.8 else int(rng.integers(0, 2))
    return [rng.integers(0, 4, rows) * (rng.random(rows) < 0.6),
            np.minimum(rng.zipf(1.6, rows), 5000), rng.integers(0, 300, rows),
            np.zeros(rows, np.int64)][kind % 4]


@pytest.mark.parametrize("seed", range(40))
def test_row_blocks_equal_the_search_over_every_row(seed: int) -> None:
    """csr-blocks' boundaries, with long rows skipped or not, equal those searched among the
    float targets in the row pointers of the rows that count (made for every row before)."""
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, seed)
    rows = lengths.size
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    limit = int(np.quantile(lengths, 0.9)) if rows else 0
    skipped = np.flatnonzero(lengths > limit)
    for skip in (None, skipped.astype(np.int32)):
        counted = np.concatenate([[0], np.cumsum(np.where(lengths > limit, 0, lengths)
                                                 if skip is not None else lengths)])
        for blocks in sorted({min(rows, 1), rows, int(rng.integers(min(rows, 1), rows + 1))}):
            targets = np.arange(1, blocks, dtype=np.float64) * (float(counted[-1])
                                                                 / max(blocks, 1))
            inner = np.minimum(np.searchsorted(counted, targets, side="left"), rows)
            expected = np.concatenate(([0], inner, [rows][:blocks]))
            np.testing.assert_array_equal(row_blocks(row_ptr, blocks, skip), expected)


@pytest.mark.parametrize("seed", range(40))
def test_long_rows_found_in_windows_equal_every_row_length_compared(seed: int) -> None:
    rng = np.random.default_rng(seed)
    lengths = random_lengths(rng, seed)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    for limit in {0, 1, 3, 50, 299, int(lengths.max(initial=0)), 10**6}:
        np.testing.assert_array_equal(rows_longer(row_ptr, limit),
                                      np.flatnonzero(lengths > limit))


def test_count_below_equals_searchsorted() -> None:
    rng = np.random.default_rng(7)
    for size in (0, 1, 2, 3, 17, 1000):
        values = np.sort(rng.integers(-5, 40, size))
        for count in (0, 1, 5, 2000):
            targets = rng.integers(-10, 50, count)
            np.testing.assert_array_equal(count_below(values.__getitem__, size, targets),
                                          np.searchsorted(values, targets, side="left"))


def walk_lengths(rng: np.random.Generator, kind: int) -> np.ndarray:
    """Row lengths for the walk: short rows with many empty, power-law rows (some far beyond a
    block), rows around a block, rows of one length (whose walks from different rows never
    meet), runs of empty rows among rows longer than a block; no row or one at times."""
    rows = int(rng.integers(0, 3000)) if rng.random() < 0.8 else int(rng.integers(0, 2))
    if kind == 0:
        return rng.integers(0, 4, rows) * (rng.random(rows) < 0.6)
    if kind == 1:
        return np.minimum(rng.zipf(1.6, rows), 50_000)
    if kind == 2:
        return rng.integers(0, 300, rows)
    if kind == 3:
        return np.full(rows, int(rng.integers(1, 40)))
    lengths = np.where(rng.random(rows) < 0.02, rng.integers(200, 5000, rows), 0)
    lengths[rng.random(rows) < 0.5] = 5
    return lengths


@pytest.mark.parametrize("index", [np.int32, np.int64])
@pytest.mark.parametrize("seed", range(30))
def test_block_starts_equal_the_walk_over_every_row(seed: int, index: type) -> None:
    rng = np.random.default_rng(seed)
    row_ptr = np.concatenate([[0], np.cumsum(walk_lengths(rng, seed % 5))])
    for cap in (2, 16, 100, 128, 256, 1024):
        for align in (1, 2, 32):
            if align >= cap:
                continue
            np.testing.assert_array_equal(block_starts(row_ptr.astype(index), cap, align),
                                          old_block_starts(row_ptr, cap, align))


def test_block_starts_of_64_bit_row_pointers() -> None:
    """Row pointers beyond 2^31 (int64; no entries stored: the walk reads the pointers
    alone), the rounding down to a multiple of align too."""
    lengths = np.tile([3, 2**31 + 5, 0, 7, 1000, 1, 1], 50)
    row_ptr = np.concatenate([[0], np.cumsum(lengths)])
    assert row_ptr[-1] > 2**35
    for cap, align in ((16, 1), (100, 32), (1024, 32)):
        np.testing.assert_array_equal(block_starts(row_ptr, cap, align),
                                      old_block_starts(row_ptr, cap, align))


def test_retuned_copies_get_their_own_scratch_buffers(device) -> None:
    """Retuned copies share the matrix's arrays but not the buffers its products write and read
    again (the long rows' chunk sums): two copies run from two threads
    on one queue would otherwise mix their values."""
    A = matrix()
    for fmt, options in (("csr-scalar", {"unroll": 2}), ("csr-vector", {"threads_per_row": 4})):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, long_rows=FORCED)
        scratch = set(M._fmt._scratch)
        assert scratch, fmt  # there is a tail of long rows
        R = M.retuned(**options)
        for key, buffer in M._fmt.buffers.items():
            if key in scratch:
                assert R._fmt.buffers[key] is not buffer, (fmt, key)
                assert R._fmt.buffers[key].size == buffer.size
            else:
                assert R._fmt.buffers[key] is buffer, (fmt, key)
        check_products(R, A, np.float64, device)
        check_products(M, A, np.float64, device)


@pytest.mark.parametrize("fmt", ["csr-adaptive", "csr-vector"])
def test_default_threads_per_row_fit_the_work_group(fmt: str, device) -> None:
    """The default work-items per row (from the mean row length) are at most the work-group
    size: csr_matmat's lanes of a row share one work-group (several right-hand sides were
    wrong with csr-adaptive in groups of 4 and rows of about 8 entries)."""
    rng = np.random.default_rng(5)
    A = sp.random(300, 300, density=0.05, format="csr", random_state=rng)
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, work_group_size=4)
    assert M.params["threads_per_row"] == 4
    X = rng.uniform(-1, 1, (300, 3))
    assert np.allclose(M @ X, A @ X, rtol=1e-12, atol=1e-12)
    check_products(M, A, np.float64, device)
