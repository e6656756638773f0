"""Seeded, vectorised generators of benchmark matrices, and the ``gen:NAME:key=val,...`` specs.

Every generator returns a canonical ``scipy.sparse.csr_matrix`` (sorted column indices, no
duplicates, float64 values) and is deterministic for given arguments: the random ones take a
``seed``. None loops over rows or entries in Python; loops run over stencil offsets or bit levels
at most.

========== ========================================================== ==============================
name       matrix                                                     row lengths
========== ========================================================== ==============================
poisson2d  5-point Laplacian on a k x k grid                          3..5 (5 inside)
stencil27  27-point stencil on a k x k x k grid (3-D)                 8..27 (27 inside)
block      dense b x b blocks on a 3-D 7-point stencil of k^3 nodes   4b..7b (7b inside), DLR2-like
random     k entries per row at uniformly random distinct columns     exactly k
rmat       R-MAT power-law graph, 2^scale vertices, Kronecker a, b, c  power law, many empty rows
denserows  band of half-width w plus a few rows of ``long`` entries   2w+1, and ``long``: dc1-like
banded     ``diags`` diagonals at random offsets within +-spread      <= diags, DIA-friendly
constrows  k entries per row at fixed periodic offsets                exactly k, QCD-like
powerlaw   Zipf row lengths of mean k, a share near the diagonal      power law, capped
arrow      diagonal + full first row + full first column              n, then 2
emptyrows  k random columns, a share ``empty`` of the rows empty      0 or k
chunglu    Chung-Lu graph: power-law out- and in-degrees              power law, hot columns
stacked    stencil27 rows above rmat (or denserows) rows, diagonal    each block's (row strips)
========== ========================================================== ==============================

The last four live in :mod:`clspmv.bench.generators_irregular`, the pieces the generators share
in :mod:`clspmv.bench.generator_parts`; all are registered in :data:`GENERATORS` here.

``parse_spec("gen:random:n=100000,k=12")`` returns ``("random", {"n": 100000, "k": 12})`` and
:func:`generate` builds the matrix of a spec.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable

import numpy as np
import scipy.sparse as sp

from .generator_parts import check_positive, distinct_sorted, sorted_csr
from .generators_irregular import arrow, chunglu, emptyrows, powerlaw

__all__ = ["GENERATORS", "canonical_spec", "generate", "parse_spec"]

PREFIX = "gen:"


# -- building blocks -------------------------------------------------------------------------
def _stencil(dims: tuple[int, ...], offsets: np.ndarray, values: np.ndarray) -> sp.csr_matrix:
    """The matrix of a stencil on a grid of ``dims`` points (row-major, last axis fastest).

    ``offsets`` is an (s, ndim) array of grid offsets and ``values`` the s matrix values; a
    neighbour outside the grid is left out (Dirichlet boundary).
    """
    dims = tuple(int(d) for d in dims)
    n = int(np.prod(dims))
    strides = np.array([int(np.prod(dims[i + 1:])) for i in range(len(dims))], np.int64)
    linear = offsets.astype(np.int64) @ strides
    order = np.argsort(linear, kind="stable")  # ascending columns within every row
    offsets, linear, values = offsets[order], linear[order], np.asarray(values)[order]
    index_dtype = np.int32 if n < 2**31 - 1 else np.int64
    coords = np.unravel_index(np.arange(n, dtype=index_dtype), dims)
    cols = np.empty((n, len(linear)), index_dtype)
    for j, (off, lin) in enumerate(zip(offsets, linear, strict=True)):  # one pass per offset
        inside = np.ones(n, bool)
        for axis, d in enumerate(off):
            if d:
                c = coords[axis] + d
                inside &= (c >= 0) & (c < dims[axis])
        cols[:, j] = np.where(inside, np.arange(n, dtype=index_dtype) + lin, -1)
    keep = cols >= 0
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    data = np.broadcast_to(values.astype(np.float64), cols.shape)[keep]
    return sorted_csr(indptr, cols[keep], data, (n, n))


def _offset_grid(ndim: int, reach: int = 1) -> np.ndarray:
    """Every offset in {-reach..reach}^ndim, as an (s, ndim) array."""
    axes = [np.arange(-reach, reach + 1)] * ndim
    return np.stack(np.meshgrid(*axes, indexing="ij"), axis=-1).reshape(-1, ndim)


def _axis_offsets(ndim: int) -> np.ndarray:
    """The centre and the 2*ndim nearest neighbours, as an (2*ndim+1, ndim) array."""
    eye = np.eye(ndim, dtype=np.int64)
    return np.concatenate([np.zeros((1, ndim), np.int64), eye, -eye])


def _centre_values(offsets: np.ndarray, centre: float, other: float) -> np.ndarray:
    return np.where(np.all(offsets == 0, axis=1), centre, other)


def _random_offsets(rng: np.random.Generator, count: int, spread: int) -> np.ndarray:
    """``count`` distinct offsets in [-spread, spread] including 0, sorted."""
    if count > 2 * spread + 1:
        raise ValueError(f"cannot place {count} distinct offsets within +-{spread}; "
                         f"raise spread to at least {-(-(count - 1) // 2)}")
    others = rng.choice(np.r_[-spread:0, 1:spread + 1], size=count - 1, replace=False)
    return np.sort(np.r_[0, others]).astype(np.int64)


# -- the generators --------------------------------------------------------------------------
def poisson2d(k: int = 300) -> sp.csr_matrix:
    """The 5-point Laplacian on a k x k grid: k*k rows, 4 on the diagonal, -1 for each
    neighbour (5k^2 - 4k entries)."""
    if k < 1:
        raise ValueError(f"grid size must be >= 1, got {k}")
    offsets = _axis_offsets(2)
    return _stencil((k, k), offsets, _centre_values(offsets, 4.0, -1.0))


def stencil27(k: int = 50) -> sp.csr_matrix:
    """The 27-point stencil on a k x k x k grid: k^3 rows, 26 on the diagonal, -1 for each of
    the up to 26 neighbours ((3k-2)^3 entries)."""
    check_positive(k=k)
    offsets = _offset_grid(3)
    return _stencil((k, k, k), offsets, _centre_values(offsets, 26.0, -1.0))


def block(k: int = 20, b: int = 5, seed: int = 0) -> sp.csr_matrix:
    """Dense b x b blocks on the 7-point stencil of a k x k x k node grid (DLR2-like): k^3 * b
    rows, 7b entries in an interior row; block values uniform in [0, 1)."""
    check_positive(k=k, b=b)
    nodes = _stencil((k, k, k), _axis_offsets(3), np.ones(7))
    blocks = np.random.default_rng(seed).random((nodes.nnz, b, b))
    A = sp.bsr_matrix((blocks, nodes.indices, nodes.indptr),
                      shape=(nodes.shape[0] * b, nodes.shape[1] * b)).tocsr()
    return sorted_csr(A.indptr, A.indices, A.data, A.shape)


def random(n: int = 100_000, k: int = 10, seed: int = 0) -> sp.csr_matrix:
    """n x n with exactly k entries per row at distinct, uniformly spread random columns;
    values uniform in [0, 1)."""
    check_positive(n=n, k=k)
    if k > n:
        raise ValueError(f"k = {k} entries per row do not fit in n = {n} columns")
    rng = np.random.default_rng(seed)
    cols = distinct_sorted(rng, n, k, n)
    indptr = np.arange(n + 1, dtype=np.int64) * k
    return sorted_csr(indptr, cols.ravel(), rng.random(n * k), (n, n))


def rmat(scale: int = 16, edges: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         seed: int = 0) -> sp.csr_matrix:
    """R-MAT power-law graph (Chakrabarti et al.; the Graph500 Kronecker parameters by default):
    2^scale vertices and edges * 2^scale edge draws, each choosing one quadrant per bit level
    with probabilities a, b, c, 1-a-b-c (to 1/65536). Vertices are then relabelled by a random
    permutation; repeated edges are merged (so nnz < edges * 2^scale); values uniform in
    [0, 1)."""
    check_positive(scale=scale, edges=edges)
    if min(a, b, c) < 0 or a + b + c > 1:
        raise ValueError(f"need a, b, c >= 0 and a + b + c <= 1, got {a}, {b}, {c}")
    if scale > 30:
        raise ValueError(f"scale {scale} gives more than 2^30 rows; use scale <= 30")
    rng = np.random.default_rng(seed)
    n, m = 1 << scale, edges << scale
    index = np.int32 if scale < 31 else np.int64
    rows = np.zeros(m, index)
    cols = np.zeros(m, index)
    # Quadrant thresholds on 16-bit random integers (probabilities to 1/65536).
    ta, tab, tabc = (np.uint16(min(round(p * 65536), 65535)) for p in (a, a + b, a + b + c))
    bit = np.empty(m, bool)
    other = np.empty(m, bool)
    for _level in range(scale):  # one vectorised pass per bit, in place
        u = rng.integers(0, 65536, size=m, dtype=np.uint16)
        np.left_shift(rows, 1, out=rows)
        np.left_shift(cols, 1, out=cols)
        np.greater_equal(u, tab, out=bit)  # quadrants c and d: the lower half
        rows |= bit
        np.greater_equal(u, ta, out=other)  # quadrant b (a <= u < a+b) or d (u >= a+b+c)
        other &= ~bit
        np.greater_equal(u, tabc, out=bit)
        other |= bit
        cols |= other
    perm = rng.permutation(n).astype(index)
    A = sp.coo_matrix((np.ones(m, np.int8), (perm[rows], perm[cols])), shape=(n, n)).tocsr()
    del rows, cols
    A.sum_duplicates()
    return sorted_csr(A.indptr, A.indices, rng.random(A.nnz), A.shape)


def denserows(n: int = 200_000, w: int = 4, count: int = 16, long: int = 0,
              seed: int = 0) -> sp.csr_matrix:
    """A band of half-width w (2w+1 entries per inner row) in which ``count`` evenly spaced rows
    are replaced by rows of ``long`` random distinct columns (default n/10): the dc1 / webbase
    pattern of a few very long rows. Values uniform in [0, 1)."""
    check_positive(n=n, count=count)
    if w < 0:
        raise ValueError(f"w must be >= 0, got {w}")
    long = long or max(1, n // 10)
    if long > n or count > n:
        raise ValueError(f"{count} rows of {long} entries do not fit an {n} x {n} matrix")
    rng = np.random.default_rng(seed)
    offsets = np.arange(-w, w + 1)[:, None]
    band = _stencil((n,), offsets, np.ones(offsets.shape[0]))
    dense_rows = np.linspace(0, n - 1, count).astype(np.int64)
    lengths = np.diff(band.indptr).astype(np.int64)
    lengths[dense_rows] = long
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    indices = np.empty(int(indptr[-1]), np.int64)
    is_dense = np.zeros(n, bool)
    is_dense[dense_rows] = True
    band_rows = np.repeat(is_dense, np.diff(band.indptr))  # entries of rows being replaced
    band_target = np.repeat(~is_dense, lengths)  # slots that keep band entries
    indices[band_target] = band.indices[~band_rows]
    indices[~band_target] = distinct_sorted(rng, count, long, n).ravel()
    return sorted_csr(indptr, indices, rng.random(indices.size), (n, n))


def banded(n: int = 200_000, diags: int = 9, spread: int = 1000, seed: int = 0) -> sp.csr_matrix:
    """``diags`` full diagonals (the main one and diags-1 at random offsets within +-spread):
    the pattern DIA stores without padding beyond the triangle corners. Values uniform in
    [0, 1)."""
    check_positive(n=n, diags=diags, spread=spread)
    rng = np.random.default_rng(seed)
    offsets = _random_offsets(rng, diags, spread)
    A = _stencil((n,), offsets[:, None], np.ones(diags))
    A.data = rng.random(A.nnz)
    return A


def constrows(n: int = 100_000, k: int = 39, spread: int = 2000, seed: int = 0) -> sp.csr_matrix:
    """Exactly k entries in every row: columns (i + d) mod n for k fixed distinct offsets d within
    +-spread (a periodic lattice, like the QCD matrices of the ELLPACK-R paper). Values uniform in
    [0, 1)."""
    check_positive(n=n, k=k, spread=spread)
    if 2 * spread + 1 > n:
        raise ValueError(f"spread {spread} wraps around n = {n}; use spread <= {(n - 1) // 2}")
    rng = np.random.default_rng(seed)
    offsets = _random_offsets(rng, k, spread)
    cols = (np.arange(n, dtype=np.int64)[:, None] + offsets[None, :]) % n
    cols.sort(axis=1)
    indptr = np.arange(n + 1, dtype=np.int64) * k
    return sorted_csr(indptr, cols.ravel(), rng.random(n * k), (n, n))


def stacked(k: int = 30, scale: int = 15, edges: int = 16, count: int = 0, long: int = 0,
            seed: int = 0) -> sp.csr_matrix:
    """Differently structured row blocks joined block-diagonally (the case of a strips plan):
    the 27-point stencil on a k x k x k grid (upper rows), then 2^scale rows of an R-MAT
    power-law graph with ``edges`` entries per row on average; with ``count`` > 0 the lower rows
    are instead a band of half-width 3 with ``count`` rows of ``long`` entries (denserows).
    Square; values of the stencil part as in :func:`stencil27`, the others uniform in [0, 1)."""
    upper = stencil27(k)
    lower = (denserows(2**scale, 3, count, long, seed) if count > 0
             else rmat(scale, edges, seed=seed))
    A = sp.block_diag([upper, lower], format="csr")
    return sorted_csr(A.indptr, A.indices, A.data, A.shape)


GENERATORS: dict[str, Callable[..., sp.csr_matrix]] = {
    f.__name__: f
    for f in (poisson2d, stencil27, block, random, rmat, denserows, banded, constrows, powerlaw,
              arrow, emptyrows, chunglu, stacked)
}
"""Generator functions by name; their keyword arguments are the keys of a spec."""


# -- specs -----------------------------------------------------------------------------------
def _keys(name: str) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(GENERATORS[name]).parameters)


def parse_spec(spec: str) -> tuple[str, dict[str, int | float]]:
    """``"gen:NAME:key=val,..."`` (or without the ``gen:`` prefix) -> (NAME, {key: value}).

    Values take the type of the generator's default (int or float). Raises ValueError naming
    what is wrong: an unknown generator, an unknown key (with the valid ones) or a bad value.
    """
    text = spec.removeprefix(PREFIX)
    name, _, args = text.partition(":")
    if name not in GENERATORS:
        raise ValueError(f"unknown generator {name!r} in {spec!r}; choose one of "
                         f"{', '.join(GENERATORS)}")
    keys = _keys(name)
    params: dict[str, int | float] = {}
    for item in filter(None, (part.strip() for part in args.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or key not in keys:
            raise ValueError(f"bad argument {item!r} in {spec!r}: {name} takes "
                             + ", ".join(f"{k}=<{type(p.default).__name__}>"
                                         for k, p in keys.items()))
        kind = type(keys[key].default)
        try:
            params[key] = kind(float(value)) if kind is int and "e" in value.lower() \
                else kind(value)
        except ValueError:
            raise ValueError(f"bad value {value!r} for {key} in {spec!r}: expected "
                             f"{kind.__name__}") from None
    return name, params


def canonical_spec(name: str, params: dict[str, int | float]) -> str:
    """The spec string of a generator call, keys in signature order (a matrix's name)."""
    order = [k for k in _keys(name) if k in params]
    return PREFIX + name + (":" + ",".join(f"{k}={params[k]}" for k in order) if order else "")


def generate(spec: str) -> sp.csr_matrix:
    """The matrix of a ``gen:`` spec."""
    name, params = parse_spec(spec)
    return GENERATORS[name](**params)
