"""The model on a CPU implementation that vectorises across work-items (Intel's CPU runtime, SIMD
width 1): a one-row-per-work-item kernel's lanes wait for the longest row of their vector
(issue 44)."""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv.bench.generators import generate
from clspmv.canonical import canonical_csr
from clspmv.model.features import VECTOR_BYTES, features, lane_width


def padding_by_hand(lengths: list[int], width: int) -> int:
    """Slots left idle by rows taken ``width`` at a time in order, each group of ``width`` lanes
    as long as its longest row (the last group too, short of rows)."""
    groups = [lengths[i:i + width] for i in range(0, len(lengths), width)]
    return sum(max(g) * width - sum(g) for g in groups)


def rows_of(lengths: list[int], dtype: type = np.float64) -> sp.csr_matrix:
    """A matrix whose rows hold ``lengths`` entries (columns from 0)."""
    cols = np.concatenate([np.arange(n) for n in lengths]).astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(lengths)])
    return canonical_csr(sp.csr_matrix((np.ones(cols.size, dtype), cols, ptr),
                                       shape=(len(lengths), max(lengths))))


@pytest.mark.parametrize(("simd", "itemsize", "lanes"), [
    (1, 8, VECTOR_BYTES // 8), (1, 4, VECTOR_BYTES // 4), (16, 8, 16), (16, 4, 16), (8, 8, 8),
    (32, 8, 32), (64, 4, 64)])
def test_lanes_are_the_simd_width_or_a_vector_of_values(simd, itemsize, lanes) -> None:
    """A device of SIMD width 1 vectorises across work-items, a vector of values at a time (8
    float64, 16 float32 in 64 bytes); any other width is its own (PoCL's 16, a GPU's warp)."""
    assert lane_width(simd, itemsize) == lanes


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_lane_padding_at_simd_width_one_counts_a_vector_of_rows(dtype) -> None:
    """Rows of one length leave no lane idle; rows of mixed lengths at SIMD width 1 pay the
    padding of groups of a vector's values (not none, as lanes of one work-item would)."""
    rng = np.random.default_rng(4)
    lengths = [int(n) for n in rng.integers(1, 40, 203)]
    width = VECTOR_BYTES // np.dtype(dtype).itemsize
    f = features(rows_of(lengths, dtype), 1)
    assert f.lane_padding == padding_by_hand(lengths, width) > 0
    assert features(rows_of(lengths, dtype), 16).lane_padding == padding_by_hand(lengths, 16)
    assert features(rows_of([7] * 208, dtype), 1).lane_padding == 0


INTEL_PROBES_S = {
    ("launch", "csr-scalar"): 4.76e-07, ("launch", "csr-blocks"): 2.73e-07,
    ("launch", "ellr"): 6.21e-07, ("launch", "dia"): 4.26e-07, ("launch", "csr-merge"): 2.73e-07,
    ("banded", "csr-scalar"): 2.07e-04, ("banded", "csr-blocks"): 1.53e-04,
    ("banded", "ellr"): 1.25e-04, ("banded", "dia"): 2.21e-04, ("banded", "csr-merge"): 1.56e-04,
    ("random", "csr-scalar"): 2.42e-04, ("random", "csr-blocks"): 1.86e-04,
    ("random", "ellr"): 1.67e-04, ("random", "csr-merge"): 1.95e-04,
    ("powerlaw", "csr-scalar"): 8.08e-04, ("powerlaw", "csr-blocks"): 2.48e-04,
    ("powerlaw", "csr-merge"): 2.60e-04}
"""The quick calibration's kernel seconds under Intel's CPU runtime on the 2-core Xeon, float64
(``reports/2026-11-28-cpu-2core-xeon-intel-auto``): on the power-law probe ``csr-scalar`` took
3.3 times ``csr-blocks``' time, on the band and random columns 1.3 times."""
INTEL_STREAM_BW = 2.18e10


def test_the_quick_fit_of_intels_probes_ranks_row_per_item_layouts_behind_on_power_law() -> None:
    """Fitted to Intel's probe times, the model ranks ``csr-merge`` and ``csr-blocks`` ahead of
    ``csr-scalar``, a row per work-item in the rows' order, on power-law rows, as measured
    (``csr-scalar`` 3.3 times ``csr-blocks``' time on the power-law probe): with lanes of one
    work-item the probes' lane padding was 0 and the layouts of a row per work-item ranked
    first. (``sell`` and ``pjds``, whose vectors now hold rows sorted by length, pay their own
    padding, :meth:`~clspmv.formats.costs.FormatCosts.idle_lanes`; these probes, measured before
    the quick calibration timed them, do not rank them.)"""
    quick = importlib.import_module("clspmv.model.quick")
    predict = importlib.import_module("clspmv.model.predict")
    device = SimpleNamespace(name="Intel-like", driver_version="1", type="cpu",
                             cache_bytes=2 << 20, simd_width=1, compute_units=2)
    feats = {k: features(canonical_csr(v, np.float64), 1)
             for k, v in quick.probe_matrices(1, 2).items()}
    assert feats["powerlaw"].lane_padding > feats["powerlaw"].entries
    probes = quick.QuickProbes(INTEL_PROBES_S, dict.fromkeys(INTEL_PROBES_S, 4e-3),
                               INTEL_STREAM_BW, 1, 0.03, [])
    cal = quick.fit_quick(probes, feats, device)
    A = canonical_csr(generate("gen:powerlaw:n=50000,k=12,local=0.3,seed=11"), np.float64)
    preds = predict.predict_features(features(A, 1, compute_units=2), cal)
    kernel = {k: p.kernel_s for k, p in preds.items() if p.kernel_s is not None}
    ranked = sorted(kernel, key=kernel.get)
    csr = [f for f in ranked if f.startswith("csr-")]
    assert set(csr[:2]) == {"csr-merge", "csr-blocks"}, ranked
    assert kernel["csr-scalar"] > 1.1 * kernel[csr[0]]


def test_idle_lanes_count_for_formats_whose_rows_share_a_vector() -> None:
    """Where the device vectorises across work-items (SIMD width 1) the ``idle lanes`` term is
    the padding for ``csr-scalar`` and 0 for ``csr-blocks`` (work-groups of one work-item: its
    rows share no vector); at PoCL's width 16 both keep the padding, as their fitted priors
    weigh."""
    timemodel = importlib.import_module("clspmv.model.timemodel")
    lanes = timemodel.TERMS.index("idle lanes")
    rng = np.random.default_rng(5)
    A = rows_of([int(n) for n in rng.integers(1, 60, 512)])
    for simd, blocks_pay in ((1, False), (16, True)):
        f = features(A, simd)
        assert f.lane_padding > 0
        assert timemodel.terms("csr-scalar", f)[lanes] == f.lane_padding
        assert timemodel.terms("csr-blocks", f)[lanes] == (f.lane_padding if blocks_pay else 0)


@pytest.mark.parametrize(("vectorises", "simd", "dtype", "c"), [
    (True, 1, np.float64, 8), (True, 1, np.float32, 16), (False, 16, np.float64, 16),
    (False, 16, np.float32, 16), (False, 32, np.float64, 32)])
@pytest.mark.parametrize("name", ["sell", "pjds"])
def test_slices_fill_a_vector_where_work_items_are_vectorised(vectorises, simd, dtype, c,
                                                               name) -> None:
    """Where the implementation vectorises across work-items (SIMD width 1), a slice holds the
    rows of one vector of values (8 float64, 16 float32), so that a vector's work-items load
    consecutive slots; elsewhere the SIMD width. The slots hold every entry of the matrix."""
    from clspmv.formats import convert
    from clspmv.formats.layout import Layout
    from clspmv.precision import resolve

    A = canonical_csr(generate("gen:powerlaw:n=3000,k=9,local=0.3,seed=4"), np.dtype(dtype))
    layout = Layout(simd, 256, 2, 1 << 18, vectorises_work_items=vectorises)
    fmt = convert(A, name, layout, resolve(np.dtype(dtype), np.dtype(dtype)))
    assert fmt.params["slice_height"] == c
    arrays = fmt.host
    widths = np.diff(arrays["slice_ptr"]) // c
    assert (widths == arrays["row_len"].reshape(-1, c).max(axis=1)).all()
    rows, cols, vals = fmt.to_coo(arrays)
    back = sp.csr_matrix((vals, (rows, cols)), shape=A.shape)
    assert abs(back - A).max() == 0 and back.nnz == A.nnz
