"""Hypothesis strategies for random products: hypothesis draws the parameters, numpy builds the
arrays from a drawn seed (vectorised, so a 3000 x 3000 matrix costs milliseconds).

A :class:`ProductCase` describes ``y = alpha A x + beta y0``: the shape (0 to 3000 either way), the
row-length distribution (uniform, Poisson, power-law, a few dense rows), empty rows and columns,
duplicates, explicit zeros (both signs), NaN and ±Inf in A, x and y0, and the magnitudes (normal,
huge: near the dtype's largest value, tiny: around its smallest normal, subnormals included,
mixed: the whole range).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

MAX_ENTRIES = 120_000
"""Cap on the stored entries of one case (before duplicates), to bound the time per example."""

LENGTHS = ("uniform", "poisson", "power-law", "dense-rows")
MAGNITUDES = ("normal", "huge", "tiny", "mixed")
SPECIALS = np.array([np.nan, np.inf, -np.inf])


@dataclass(frozen=True)
class ProductCase:
    rows: int
    cols: int
    lengths: str
    mean_length: float
    empty_rows: float
    used_cols: float
    duplicates: float
    zeros: float
    specials_A: int
    specials_x: int
    magnitude_A: str
    magnitude_x: str
    alpha: float
    beta: float
    input_format: str
    vectors: str
    seed: int

    def build(self, dtype: np.dtype) -> tuple[sp.spmatrix, np.ndarray, np.ndarray | None]:
        """(A as the user passes it, x, y0 or None when beta == 0), all float64."""
        rng = np.random.default_rng(self.seed)
        m, n = self.rows, self.cols
        lengths = self._row_lengths(rng, m, n)
        rows = np.repeat(np.arange(m), lengths)
        if n:
            used = rng.choice(n, size=max(1, round(self.used_cols * n)), replace=False)
            cols = used[rng.integers(0, used.size, rows.size)]
        else:
            cols = np.zeros(0, np.int64)
        vals = _values(rng, rows.size, self.magnitude_A, dtype)
        # duplicates: copies of some entries with other values (summed on conversion)
        dup = rng.random(rows.size) < self.duplicates
        rows = np.concatenate([rows, rows[dup]])
        cols = np.concatenate([cols, cols[dup]])
        vals = np.concatenate([vals, _values(rng, int(dup.sum()), self.magnitude_A, dtype)])
        zero = rng.random(vals.size) < self.zeros
        vals[zero] = np.copysign(0.0, rng.standard_normal(int(zero.sum())))
        _inject(rng, vals, self.specials_A)
        A = sp.coo_matrix((vals, (rows, cols)), shape=(m, n))
        if self.input_format == "csr":
            A = A.tocsr()  # scipy sums the duplicates; explicit zeros stay
        x = _values(rng, n, self.magnitude_x, dtype)
        x[rng.random(n) < self.zeros] = -0.0
        _inject(rng, x, self.specials_x)
        y0 = None
        if self.beta != 0:
            y0 = _values(rng, m, self.magnitude_x, dtype)
            _inject(rng, y0, min(self.specials_x, 1))
        return A, x, y0

    def _row_lengths(self, rng: np.random.Generator, m: int, n: int) -> np.ndarray:
        mean = min(self.mean_length, MAX_ENTRIES / max(m, 1))
        if self.lengths == "uniform":
            lengths = rng.integers(0, int(2 * mean) + 1, m)
        elif self.lengths == "poisson":
            lengths = rng.poisson(mean, m)
        elif self.lengths == "power-law":
            lengths = (rng.pareto(1.2, m) * max(mean, 0.5)).astype(np.int64)
        else:  # dense-rows: Poisson rows plus up to three full ones
            lengths = rng.poisson(mean, m)
            if m:
                lengths[rng.choice(m, size=min(m, int(rng.integers(1, 4))), replace=False)] = n
        lengths = np.minimum(lengths, n)
        lengths[rng.random(m) < self.empty_rows] = 0
        # the cap holds for every distribution (a few full rows of a 3000 x 3000 matrix fit)
        while lengths.sum() > MAX_ENTRIES + 3 * n:
            lengths //= 2
        return lengths.astype(np.int64)


def _values(rng: np.random.Generator, size: int, magnitude: str, dtype: np.dtype) -> np.ndarray:
    """Random signed values of the given magnitude class for ``dtype``."""
    finfo = np.finfo(dtype)
    top, bottom = np.log10(float(finfo.max)), np.log10(float(finfo.tiny))
    if magnitude == "normal":
        low, high = -3.0, 3.0
    elif magnitude == "huge":  # float32: some round to Inf; float64: up to its largest value
        low, high = top - 4, min(top + 0.2, np.log10(float(np.finfo(np.float64).max)))
    elif magnitude == "tiny":
        low, high = bottom - 8, bottom + 2  # subnormals, and some round to zero
    else:
        low, high = bottom - 4, top
    signs = np.where(rng.random(size) < 0.5, -1.0, 1.0)
    return signs * 10.0 ** rng.uniform(low, high, size)


def _inject(rng: np.random.Generator, values: np.ndarray, count: int) -> None:
    """Overwrite up to ``count`` random values with NaN, +Inf or -Inf."""
    if values.size and count:
        where = rng.integers(0, values.size, count)
        values[where] = rng.choice(SPECIALS, count)


def product_cases() -> st.SearchStrategy[ProductCase]:
    """Random products; shrinking goes towards small, plain cases."""
    return st.builds(
        ProductCase,
        rows=st.integers(0, 3000),
        cols=st.integers(0, 3000),
        lengths=st.sampled_from(LENGTHS),
        mean_length=st.floats(0.5, 60.0),
        empty_rows=st.sampled_from([0.0, 0.0, 0.0, 0.0, 0.1, 0.1, 0.5, 1.0]),
        used_cols=st.sampled_from([1.0, 0.5, 0.05]),
        duplicates=st.sampled_from([0.0, 0.0, 0.1, 0.5]),
        zeros=st.sampled_from([0.0, 0.05, 0.5]),
        specials_A=st.integers(0, 3),
        specials_x=st.integers(0, 2),
        magnitude_A=st.sampled_from(MAGNITUDES),
        magnitude_x=st.sampled_from(MAGNITUDES),
        alpha=st.one_of(st.sampled_from([1.0, -1.0, 0.0, 2.5]), st.floats(-1e3, 1e3)),
        beta=st.one_of(st.sampled_from([0.0, 1.0, -0.5]), st.floats(-1e3, 1e3)),
        input_format=st.sampled_from(["coo", "csr"]),
        vectors=st.sampled_from(["numpy", "numpy", "pyopencl"]),
        seed=st.integers(0, 2**32 - 1),
    )
