"""The cheap paths of the selection's features: the row-length histogram against the sorts it
replaces, distinct keys by flags against a sort, and the budgeted sample of row blocks against
every block."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv.bench.generators import generate
from clspmv.formats.sell import slice_padding
from clspmv.matrix import canonical_csr
from clspmv.model import sampling
from clspmv.model.rowlengths import LengthHistogram, lane_padding
from clspmv.row_stats import hyb_width

features_mod = importlib.import_module("clspmv.model.features")

LENGTHS = {
    "empty": np.zeros(0, np.int64),
    "constant": np.full(1000, 7),
    "one row": np.array([5]),
    "ragged": np.random.default_rng(1).integers(0, 40, 1001),
    "power law": np.random.default_rng(2).zipf(1.8, 5003).clip(0, 100_000),
    "empty rows": np.r_[np.zeros(37, np.int64), np.arange(50)],
}


@pytest.mark.parametrize("name", sorted(LENGTHS))
@pytest.mark.parametrize("c", [1, 4, 16])
def test_histogram_statistics_equal_the_sorts(name: str, c: int) -> None:
    lengths = LENGTHS[name].astype(np.int64)
    hist = LengthHistogram.of(lengths)
    m, nnz = lengths.size, int(lengths.sum())
    assert (hist.rows, hist.entries) == (m, nnz)
    assert hist.longest == (int(lengths.max()) if m else 0)
    assert hist.empty_rows == int(np.count_nonzero(lengths == 0))
    assert hist.sorted_padding(c) == slice_padding(lengths, c, max(m, 1))
    assert lane_padding(lengths, c, nnz) == slice_padding(lengths, c, 1)
    k = hist.hyb_width()
    assert k == hyb_width(lengths)
    assert hist.beyond(k) == int(np.maximum(lengths - k, 0).sum())
    assert hist.aligned(16) == int((-(-lengths // 16) * 16).sum())
    assert hist.std() == pytest.approx(float(lengths.std()) if m else 0.0, rel=1e-12, abs=1e-12)
    assert hist.constant == (m == 0 or lengths.min() == lengths.max())
    for limit in (0, 3, 30):
        long_row = lengths > limit
        assert hist.rows_beyond(limit) == (int(long_row.sum()), int(lengths[long_row].sum()))
        main = np.where(long_row, 0, lengths)
        cut = hist.without_beyond(limit)
        assert (cut.rows, cut.entries, cut.longest) == (m, int(main.sum()),
                                                         int(main.max()) if m else 0)
        assert cut.sorted_padding(c) == slice_padding(main, c, max(m, 1))


@pytest.mark.parametrize("size", [50, 100_000])  # flags, then a sort
def test_distinct_keys_by_flags_or_sort(size: int) -> None:
    keys = np.random.default_rng(3).integers(0, size, 2000)
    assert np.array_equal(sampling.distinct_keys(keys, size), np.unique(keys))


def test_block_numbers_keep_the_block_before() -> None:
    block = np.array([2, 2, 3, 7, 8, 8, 12])
    number, first = sampling.block_numbers(block)
    assert number.tolist() == [0, 0, 1, 3, 4, 4, 6]
    assert first.tolist() == [True, False, True, True, True, False, True]


def test_sample_is_budgeted_by_entries() -> None:
    """A matrix of long rows samples a few blocks (about SAMPLE_ENTRIES entries, at least
    MIN_SAMPLE_BLOCKS blocks); one of short rows up to SAMPLE_BLOCKS."""
    assert sampling.sample_blocks(10**6, 10**8) == sampling.MIN_SAMPLE_BLOCKS
    assert sampling.sample_blocks(10**6, 10**6) == sampling.SAMPLE_BLOCKS
    A = canonical_csr(generate("gen:random:n=200000,k=40"))
    sample = sampling.sample_rows(A)
    taken = np.unique(sample[0]).size
    assert sample[3].any() and taken <= 2 * sampling.MIN_SAMPLE_BLOCKS
    assert sample[2].size <= 2 * sampling.MIN_SAMPLE_BLOCKS * sampling.ROW_BLOCK * 40


GENERATED = ["gen:rmat:scale=15,edges=16", "gen:random:n=60000,k=8", "gen:stencil27:k=30",
             "gen:banded:n=60000,diags=7,spread=200", "gen:constrows:n=12000,k=39,spread=500",
             "gen:stacked:k=22,scale=13,edges=16"]


@pytest.mark.parametrize("spec", GENERATED)
def test_budgeted_gathers_stay_near_every_block(spec: str, monkeypatch) -> None:
    """The budgeted sample's x lines are within 25 % of those of every block, its near fraction
    within 0.05; the row-length features are exact either way, and the sample is the same on
    every call (the selection is deterministic)."""
    A = canonical_csr(generate(spec))
    budgeted = features_mod.features(A, 16)
    assert features_mod.features(A, 16) == budgeted
    with monkeypatch.context() as m:
        m.setattr(sampling, "SAMPLE_BLOCKS", A.shape[0])
        m.setattr(sampling, "SAMPLE_ENTRIES", 2 * A.nnz * sampling.ROW_BLOCK)
        every = features_mod.features(A, 16)
    assert budgeted.x_lines == pytest.approx(every.x_lines, rel=0.25)
    assert budgeted.near_fraction == pytest.approx(every.near_fraction, abs=0.05)
    assert (budgeted.slots_of("pjds"), budgeted.hyb_width, budgeted.lane_padding) == (
        every.slots_of("pjds"), every.hyb_width, every.lane_padding)
    assert budgeted.diagonals <= every.diagonals


def test_exact_diagonals_when_the_sample_is_the_matrix() -> None:
    A = canonical_csr(sp.random(300, 300, density=0.05, random_state=4, format="csr"))
    f = features_mod.features(A, 8)
    assert f.diagonals_exact
    assert (f.diagonals, f.diagonal_rows) == sampling.exact_diagonals(A)
