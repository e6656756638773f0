"""Generators of matrices with irregular row lengths (the ``irregular`` suites of
:mod:`clspmv.bench.suites`, issue 11): power-law rows, the arrow matrix, mostly empty rows and a
Chung-Lu web/social graph. Seeded and vectorised like the others; they are registered in
:data:`clspmv.bench.generators.GENERATORS`, whose docstring lists every generator."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .generator_parts import (
    check_fraction,
    check_positive,
    distinct_sorted,
    from_pairs,
    sorted_csr,
)

__all__ = ["arrow", "chunglu", "emptyrows", "powerlaw"]


def powerlaw(n: int = 200_000, k: int = 20, alpha: float = 2.0, local: float = 0.7,
             spread: int = 1000, longest: int = 0, seed: int = 0) -> sp.csr_matrix:
    """n x n with power-law (Zipf) row lengths: P(length >= L) ~ L^(1 - alpha), scaled to a
    mean of k and capped at ``longest`` (default n/20), rows in random order. A share ``local``
    of each row's columns lies near the diagonal (uniform within +-max(spread, 2 * length),
    wrapping around), the rest uniform over all columns. Repeated columns are merged, so nnz is
    a little below n * k. Values uniform in [0, 1)."""
    check_positive(n=n, k=k, spread=spread)
    check_fraction("local", local)
    if alpha <= 1:
        raise ValueError(f"alpha must be > 1, got {alpha}")
    longest = min(longest or max(1, n // 20), n)
    rng = np.random.default_rng(seed)
    raw = np.minimum((1 - rng.random(n)) ** (-1 / (alpha - 1)), longest)
    lengths = np.minimum(np.floor(raw * (k * n / raw.sum()) + rng.random(n)),
                         longest).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    near = rng.random(rows.size) < local
    reach = np.maximum(spread, 2 * lengths)[rows[near]]
    cols = rng.integers(0, n, rows.size, dtype=np.int64)
    cols[near] = (rows[near] + rng.integers(-reach, reach + 1)) % n
    return from_pairs(rows, cols, (n, n), rng)


def arrow(n: int = 100_000, seed: int = 0) -> sp.csr_matrix:
    """The arrow matrix: the diagonal, a full first row and a full first column (3n - 2
    entries); one row and one column of n entries each. Values uniform in [0, 1)."""
    check_positive(n=n)
    indptr = np.r_[0, n + 2 * np.arange(n, dtype=np.int64)]
    below = np.stack([np.zeros(n - 1, np.int64), np.arange(1, n)], axis=1)  # (i, 0), (i, i)
    indices = np.r_[np.arange(n, dtype=np.int64), below.ravel()]
    return sorted_csr(indptr, indices, np.random.default_rng(seed).random(indices.size), (n, n))


def emptyrows(n: int = 200_000, k: int = 20, empty: float = 0.8, seed: int = 0
              ) -> sp.csr_matrix:
    """n x n in which each row is empty with probability ``empty`` and otherwise holds k
    distinct uniformly random columns. Values uniform in [0, 1)."""
    check_positive(n=n, k=k)
    check_fraction("empty", empty)
    if k > n:
        raise ValueError(f"k = {k} entries per row do not fit in n = {n} columns")
    rng = np.random.default_rng(seed)
    full = rng.random(n) >= empty
    lengths = np.where(full, k, 0)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    cols = distinct_sorted(rng, int(full.sum()), k, n)
    return sorted_csr(indptr, cols.ravel(), rng.random(cols.size), (n, n))


def chunglu(n: int = 200_000, k: int = 10, out_exp: float = 2.5, in_exp: float = 2.1,
            seed: int = 0) -> sp.csr_matrix:
    """A Chung-Lu graph shaped like a web or social graph: n * k edge draws, each from vertex
    i to vertex j with probability proportional to w_out(i) w_in(j), where the weights
    (i + 1)^(-1 / (exp - 1)) give power-law out-degrees (row lengths, exponent ``out_exp``) and
    in-degrees (column counts, ``in_exp``: a few very hot columns). Vertices are relabelled by a
    random permutation; repeated edges are merged (nnz < n * k). Values uniform in [0, 1)."""
    check_positive(n=n, k=k)
    if min(out_exp, in_exp) <= 1:
        raise ValueError(f"exponents must be > 1, got {out_exp}, {in_exp}")
    rng = np.random.default_rng(seed)
    ranks = np.arange(1, n + 1, dtype=np.float64)
    perm = rng.permutation(n)

    def ends(exponent: float) -> np.ndarray:  # the edges' sources (targets), by vertex rank
        weights = ranks ** (-1 / (exponent - 1))
        counts = rng.multinomial(n * k, weights / weights.sum())
        return np.repeat(np.arange(n, dtype=np.int64), counts)

    return from_pairs(perm[ends(out_exp)], perm[rng.permutation(ends(in_exp))], (n, n), rng)
