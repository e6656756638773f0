"""BSR (``bsr``): every block size a matrix can take against scipy, both kernels (a work-item per
run of block rows, a work-item per row), the padding of the blocks meeting non-finite x, the
default block size (:func:`block_tiling`) and what the time model reads of it."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.bench import generators
from clspmv.errors import UnsuitableFormatError
from clspmv.formats import bsr as bsr_module
from clspmv.formats.bsr import (
    MAX_BLOCK,
    Bsr,
    Tiling,
    block_sizes,
    block_tiling,
    sampled_fill,
    tiling_bytes,
)
from clspmv.model.features import features, refusal
from clspmv.model.select import Selection

from oracle import assert_matches, oracle_matrix
from scenarios import SCENARIOS, Scenario

CASES = [s for s in SCENARIOS if "bsr" not in s.unsuitable]


@pytest.mark.parametrize("row_items", [False, True])
@pytest.mark.parametrize("case", CASES, ids=[s.name for s in CASES])
def test_every_block_size_matches_scipy(case: Scenario, row_items: bool, dtype, device) -> None:
    """Forward (alpha, beta) and transposed products and the values read back, at every block
    size the shape takes (blocks mostly padding on these matrices: their zeros meet the
    scenarios' infinite and NaN entries of x and must add nothing), with either kernel."""
    want = oracle_matrix("bsr", case.csr, dtype)
    y0 = np.linspace(-1.0, 1.0, case.csr.shape[0]).astype(dtype)
    for size in block_sizes(case.csr.shape):
        try:
            M = clspmv.DeviceMatrix.from_scipy(case.A, format="bsr", device=device, dtype=dtype,
                                               block_size=size, row_items=row_items)
        except UnsuitableFormatError:
            assert size > 1  # blocks of one entry never pad
            continue
        assert M.params["block_size"] == size and M.params["row_items"] == int(row_items)
        y = y0.copy()
        M.matvec(case.x, y, alpha=1.5, beta=-0.5)
        assert_matches(y, want, case.x, dtype, 1.5, -0.5, y0)
        assert_matches(M.rmatvec(case.xt), want.T.tocsr(), case.xt, dtype)
        got, ref = M.to_scipy().tocsr(), want.astype(M.dtype)
        assert got.nnz == ref.nnz
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_array_equal(got.data, ref.data)  # NaN equal to NaN


def test_padding_meets_infinite_x(device) -> None:
    """A 2x2 block holding three entries: its padded slot's column of x is infinite, and the row
    holding only the finite entry stays finite (as in scipy)."""
    A = sp.csr_matrix(np.array([[1.0, 2.0, 0, 0], [3.0, 0, 0, 0], [0, 0, 4.0, 0], [0, 0, 0, 5.0]]))
    x = np.array([1.0, np.inf, 1.0, 1.0])
    for row_items in (False, True):
        M = clspmv.DeviceMatrix.from_scipy(A, format="bsr", device=device, block_size=2,
                                           row_items=row_items)
        np.testing.assert_array_equal(M @ x, A @ x)  # [inf, 3, 4, 5]


def test_default_block_size_follows_the_blocks() -> None:
    """The block matrices of the suites get their block size, fill 1; a random or stencil matrix
    blocks of one entry; and a block size must tile both dimensions."""
    for k, b in ((4, 3), (3, 4), (3, 5)):
        tiling = block_tiling(generators.block(k=k, b=b))
        assert tiling == Tiling(b, 1.0)
    assert block_tiling(generators.random(n=600, k=5)).size == 1
    assert block_tiling(generators.poisson2d(k=12)).size == 1
    assert block_sizes((12, 18)) == (1, 2, 3, 6)
    assert block_sizes((0, 7)) == (1,)
    assert MAX_BLOCK == 8 and block_sizes((840, 840))[-1] == 8
    A = generators.block(k=3, b=4)
    with pytest.raises(ValueError, match="block_size 5 does not suit a 108x108 matrix.*"
                                         "1, 2, 3, 4, 6"):
        clspmv.DeviceMatrix.from_scipy(A, format="bsr", block_size=5)


def test_sampled_fill_counts_the_blocks() -> None:
    """The fill of 2x2 blocks over a matrix whose block rows each hold one full block and one
    block of a single entry: 5 entries in 8 slots, exactly (every block row sampled)."""
    rows, cols = [], []
    for br in range(50):
        for r in range(2):
            rows += [2 * br + r] * 2
            cols += [2 * br, 2 * br + 1]
        rows.append(2 * br)
        cols.append((2 * br + 4) % 100)
    A = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(100, 100))
    assert sampled_fill(A, 2) == pytest.approx(5 / 8)
    assert sampled_fill(A, 1) == 1.0


def test_model_reads_the_blocks() -> None:
    """The features carry the block size and fill; bsr's bytes are the blocks' (fewer than
    CSR's on dense blocks), and the model leaves bsr out of a matrix without blocks."""
    A = generators.block(k=4, b=4)
    f = features(A, 8)
    assert (f.block_size, f.block_fill) == (4, 1.0)
    blocks = A.nnz // 16
    assert Bsr.matrix_bytes(f) == blocks * (16 * 8 + 4) + (A.shape[0] // 4 + 1) * 4
    assert Bsr.matrix_bytes(f) < A.nnz * 12
    assert refusal("bsr", f) is None
    g = features(generators.random(n=400, k=6), 8)
    assert g.block_size == 1
    assert refusal("bsr", g) == ("format 'bsr' finds no dense blocks in this matrix: its "
                                 "blocks would be single entries")
    assert tiling_bytes(Tiling(1, 1.0), 400, 2400, 8) == 2400 * 12 + 401 * 4


def test_auto_hands_the_features_block_size_to_the_conversion(device, monkeypatch) -> None:
    """A selection that takes bsr passes the features' block size to the conversion
    (Selection.params, from Bsr.chosen_params), which then does not count the blocks again;
    another format's selection passes nothing."""
    A = generators.block(k=4, b=4)
    f = features(A, 8)

    def chosen(fmt: str) -> Selection:
        return Selection(format=fmt, predictions={}, why="", expected_products=None,
                         calibration="measured", cost_ms=0.0, features=f)
    assert chosen("bsr").params == {"block_size": 4} and chosen("csr-vector").params == {}
    monkeypatch.setattr(bsr_module, "block_tiling", lambda csr: pytest.fail("counted again"))
    M = clspmv.DeviceMatrix.from_scipy(A, format="bsr", device=device, **chosen("bsr").params)
    assert M.params["block_size"] == 4


def test_padding_bound_refuses_sparse_blocks() -> None:
    """Blocks of 8 holding one entry each (every eighth row of a diagonal): 64 slots per
    entry, beyond the padding bound (and its floor of 16 MB); the model sees the same."""
    n = 1 << 18
    keep = np.arange(0, n, 8)
    A = sp.csr_matrix((np.ones(keep.size), (keep, keep)), shape=(n, n))
    with pytest.raises(UnsuitableFormatError, match="format 'bsr' would need"):
        clspmv.DeviceMatrix.from_scipy(A, format="bsr", block_size=8)
    assert clspmv.DeviceMatrix.from_scipy(A, format="bsr").params["block_size"] == 1
