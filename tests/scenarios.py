"""Matrix scenarios shared by the product tests: edge shapes, awkward row-length distributions,
explicit zeros, duplicates, non-finite values, dense and stencil matrices."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from clspmv.bench.generators import constrows, poisson2d
from clspmv.formats import FORMAT_CLASSES

ALPHA_BETA = [(1.0, 0.0), (2.5, 0.0), (1.0, 1.0), (-0.5, 2.0), (0.0, 3.0), (1.5, -1.0)]
"""(alpha, beta) pairs of the alpha/beta tests."""

PADDED_FORMATS = frozenset(name for name, cls in FORMAT_CLASSES.items() if cls.pads)
"""Formats that pad to the longest row or to whole diagonals and may refuse a matrix (their
``pads`` trait)."""


@dataclass
class Scenario:
    name: str
    A: object  # scipy.sparse matrix or dense array, as a user would pass it
    x: np.ndarray
    unsuitable: frozenset[str] = field(default_factory=frozenset)
    """Formats that must raise UnsuitableFormatError on this matrix."""

    @property
    def csr(self) -> sp.csr_matrix:
        """What the oracle multiplies: the canonical CSR of A (duplicates summed, zeros kept)."""
        m = sp.csr_matrix(self.A, dtype=np.float64, copy=True)
        m.sum_duplicates()
        return m

    @property
    def xt(self) -> np.ndarray:
        """An input of the transpose product (one value per row of A), with x's non-finite
        values copied to the same positions where they fit."""
        rows = self.csr.shape[0]
        xt = _x(rows, seed=12)
        bad = np.flatnonzero(~np.isfinite(self.x))
        bad = bad[bad < rows]
        xt[bad] = self.x[bad]
        return xt


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _x(n: int, seed: int = 1) -> np.ndarray:
    return _rng(seed).standard_normal(n)


def _rows_with_lengths(lengths: np.ndarray, n_cols: int, seed: int) -> sp.csr_matrix:
    """A matrix whose row i has lengths[i] distinct random columns (vectorised)."""
    rng = _rng(seed)
    lengths = np.minimum(lengths, n_cols)
    rows = np.repeat(np.arange(lengths.size), lengths)
    keys = rng.random((lengths.size, n_cols)).argsort(axis=1) if n_cols <= 4096 else None
    if keys is not None:
        pos = np.arange(rows.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        cols = keys[rows, pos]
    else:
        cols = rng.integers(0, n_cols, rows.size)
    vals = rng.standard_normal(rows.size)
    m = sp.csr_matrix((vals, (rows, cols)), shape=(lengths.size, n_cols))
    m.sum_duplicates()
    return m


def _long_row() -> sp.csr_matrix:
    n_cols = 100_000
    rng = _rng(7)
    rows = np.concatenate([np.full(n_cols, 3), rng.integers(0, 64, 400)])
    cols = np.concatenate([np.arange(n_cols), rng.integers(0, n_cols, 400)])
    return sp.csr_matrix((rng.standard_normal(rows.size), (rows, cols)), shape=(64, n_cols))


def _explicit_zeros() -> sp.csr_matrix:
    m = _rows_with_lengths(np.full(120, 6), 90, seed=3)
    m.data[::4] = 0.0  # stored zeros stay stored
    return m


def _duplicates() -> sp.coo_matrix:
    rng = _rng(4)
    rows = rng.integers(0, 70, 900)
    cols = rng.integers(0, 50, 900)
    return sp.coo_matrix((rng.standard_normal(900), (rows, cols)), shape=(70, 50))


def _nonfinite_A() -> sp.csr_matrix:
    m = _rows_with_lengths(np.full(100, 5), 100, seed=5)
    m.data[3] = np.nan
    m.data[17] = np.inf
    m.data[40] = -np.inf
    return m


def _nonfinite_x() -> tuple[sp.csr_matrix, np.ndarray]:
    m = _explicit_zeros()
    x = _x(m.shape[1], 6)
    x[2] = np.nan
    x[9] = np.inf
    x[31] = -np.inf
    return m, x


def _band_rect() -> sp.csr_matrix:
    """120 x 90, five diagonals (offsets -50, -3, 0, 2, 70) with random values."""
    offsets = [-50, -3, 0, 2, 70]
    rng = _rng(13)
    return sp.diags([rng.standard_normal(120) for _ in offsets], offsets, shape=(120, 90),
                    format="csr")


def scenarios() -> list[Scenario]:
    rng = _rng(0)
    imbalanced = rng.poisson(8, 600)
    imbalanced[rng.choice(600, 12, replace=False)] = rng.poisson(150, 12)
    empty_rows = rng.poisson(4, 300) * (rng.random(300) > 0.4)
    zeros_x, inf_x = _nonfinite_x()
    dense = rng.standard_normal((20, 17))
    out = [
        Scenario("0x0", sp.csr_matrix((0, 0)), np.zeros(0)),
        Scenario("0x5", sp.csr_matrix((0, 5)), _x(5)),
        Scenario("5x0", sp.csr_matrix((5, 0)), np.zeros(0)),
        Scenario("1x1", sp.csr_matrix(np.array([[3.5]])), np.array([-2.0])),
        Scenario("all-empty", sp.csr_matrix((50, 40)), _x(40)),
        Scenario("empty-rows", _rows_with_lengths(empty_rows, 200, 8), _x(200)),
        Scenario("long-row", _long_row(), _x(100_000), unsuitable=PADDED_FORMATS),
        Scenario("tall", _rows_with_lengths(rng.poisson(3, 500), 80, 9), _x(80)),
        Scenario("wide", _rows_with_lengths(rng.poisson(40, 80), 500, 10), _x(500)),
        Scenario("imbalanced", _rows_with_lengths(imbalanced, 1000, 11), _x(1000)),
        Scenario("explicit-zeros", _explicit_zeros(), _x(90)),
        Scenario("duplicates", _duplicates(), _x(50)),
        Scenario("nonfinite-A", _nonfinite_A(), _x(100)),
        Scenario("nonfinite-x", zeros_x, inf_x),
        Scenario("dense", dense, _x(17)),
        Scenario("poisson2d", poisson2d(33), _x(33 * 33)),
        # diagonals that wrap around (offsets d and d - n): each row crosses half of them
        Scenario("periodic", constrows(300, 5, 40, seed=3), _x(300)),
        # diagonals that leave a rectangular matrix through its side or its bottom
        Scenario("band-rect", _band_rect(), _x(90)),
    ]
    return out


SCENARIOS = scenarios()
