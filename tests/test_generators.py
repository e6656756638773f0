"""The matrix generators: sizes, row-length distributions, determinism, specs and suites."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv.bench import generators as g
from clspmv.bench import suites
from clspmv.row_stats import stats


def assert_canonical(A: sp.csr_matrix) -> None:
    """Sorted, duplicate-free columns within every row, as the flags claim."""
    assert isinstance(A, sp.csr_matrix) and A.dtype == np.float64
    B = sp.csr_matrix((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    B.has_canonical_format = False
    B.sum_duplicates()
    assert B.nnz == A.nnz, "duplicates were stored"
    assert np.array_equal(B.indices, A.indices), "columns are not sorted within rows"
    assert A.indices.min(initial=0) >= 0 and A.indices.max(initial=0) < A.shape[1]


def lengths(A: sp.csr_matrix) -> np.ndarray:
    return np.diff(A.indptr)


ALL_SMALL = [
    "gen:poisson2d:k=7", "gen:stencil27:k=5", "gen:block:k=4,b=3", "gen:random:n=300,k=7",
    "gen:rmat:scale=9,edges=8", "gen:denserows:n=400,w=2,count=3,long=250",
    "gen:banded:n=500,diags=6,spread=40", "gen:constrows:n=200,k=9,spread=30",
    "gen:powerlaw:n=3000,k=12", "gen:arrow:n=40", "gen:emptyrows:n=500,k=6,empty=0.7",
    "gen:chunglu:n=2000,k=8",
    "gen:stacked:k=4,scale=8,edges=4",
]


@pytest.mark.parametrize("spec", ALL_SMALL)
def test_canonical_and_deterministic(spec: str) -> None:
    A, B = g.generate(spec), g.generate(spec)
    assert_canonical(A)
    assert (A != B).nnz == 0 and np.array_equal(A.data, B.data)


@pytest.mark.parametrize("spec", [s for s in ALL_SMALL if "seed" in g._keys(
    g.parse_spec(s)[0]) and not s.startswith(("gen:poisson2d", "gen:stencil27"))])
def test_seed_changes_the_matrix(spec: str) -> None:
    A, B = g.generate(spec), g.generate(spec + ",seed=1")
    assert A.nnz != B.nnz or (A != B).nnz > 0


def test_every_generator_is_covered() -> None:
    assert sorted(g.parse_spec(s)[0] for s in ALL_SMALL) == sorted(g.GENERATORS)


def test_poisson2d() -> None:
    k = 5
    A = g.poisson2d(k)
    assert A.shape == (k * k, k * k) and A.nnz == 5 * k * k - 4 * k
    assert np.all(A.diagonal() == 4) and np.all(A.data != 0)
    assert (A != A.T).nnz == 0
    grid = np.arange(k * k).reshape(k, k)
    # An interior point couples to its four neighbours, a corner to two.
    assert sorted(A[grid[2, 2]].indices) == sorted(
        [grid[1, 2], grid[3, 2], grid[2, 1], grid[2, 3], grid[2, 2]])
    assert A[grid[0, 0]].nnz == 3
    # The same matrix as the Kronecker-sum definition.
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    eye = sp.identity(k)
    assert abs(A - (sp.kron(eye, T) + sp.kron(T, eye))).max() == 0
    with pytest.raises(ValueError, match="grid size must be >= 1"):
        g.poisson2d(0)


def test_stencil27() -> None:
    k = 6
    A = g.stencil27(k)
    assert A.shape == (k**3, k**3) and A.nnz == (3 * k - 2) ** 3
    assert lengths(A).max() == 27 and lengths(A).min() == 8  # interior, corner
    assert np.all(A.diagonal() == 26) and (A != A.T).nnz == 0
    # Row of the interior point (2,2,2): all 27 points (2+-1, 2+-1, 2+-1).
    point = (2 * k + 2) * k + 2
    expected = sorted((z * k + y) * k + x for z in (1, 2, 3) for y in (1, 2, 3) for x in (1, 2, 3))
    assert list(A[point].indices) == expected


def test_block() -> None:
    k, b = 4, 3
    A = g.block(k, b, seed=2)
    assert A.shape == (k**3 * b, k**3 * b)
    assert A.nnz == b * b * (7 * k**3 - 6 * k**2)  # 7-point stencil nodes, b x b each
    assert lengths(A).max() == 7 * b and lengths(A).min() == 4 * b
    # Dense blocks: the b rows of a node have the same columns, in runs of b.
    rows = A[:b].toarray() != 0
    assert np.all(rows == rows[0]) and rows[0].sum() % b == 0


def test_random_rows_have_exactly_k_distinct_columns() -> None:
    A = g.random(2000, 13, seed=5)
    assert A.shape == (2000, 2000) and np.all(lengths(A) == 13)
    assert_canonical(A)
    # Columns spread over the whole range: every tenth of it gets 10% +- 2% of the entries.
    share = np.bincount(A.indices * 10 // 2000, minlength=10) / A.nnz
    assert np.all(np.abs(share - 0.1) < 0.02)
    with pytest.raises(ValueError, match="do not fit"):
        g.random(5, 6)


def test_rmat_is_power_law() -> None:
    A = g.rmat(scale=12, edges=8, seed=3)
    n = 2**12
    assert A.shape == (n, n) and 0.8 * 8 * n < A.nnz <= 8 * n  # repeats merged
    s = stats(A)
    assert s.pct_sigma_over_av > 100 and s.max_minus_av > 10 * s.av  # heavy tail
    assert np.count_nonzero(lengths(A) == 0) > 0.1 * n  # many empty rows
    uniform = g.rmat(scale=12, edges=8, a=0.25, b=0.25, c=0.25, seed=3)
    assert stats(uniform).pct_sigma_over_av < 50  # a = b = c = d: no skew
    with pytest.raises(ValueError, match="a \\+ b \\+ c <= 1"):
        g.rmat(scale=4, a=0.5, b=0.5, c=0.5)


def test_denserows() -> None:
    A = g.denserows(n=1000, w=2, count=4, long=600, seed=1)
    row_len = lengths(A)
    dense = np.flatnonzero(row_len == 600)
    assert list(dense) == [0, 333, 666, 999]
    others = np.delete(row_len, dense)
    # Band rows: 5 entries inside, 4 in rows 1 and 998 (rows 0 and 999 are dense ones).
    assert set(others) == {4, 5} and np.count_nonzero(others == 4) == 2
    assert A.nnz == 4 * 600 + others.sum()
    assert list(A[500].indices) == [498, 499, 500, 501, 502]
    assert g.denserows(n=1000).getrow(0).nnz == 100  # default: n / 10


def test_banded_has_few_diagonals() -> None:
    A = g.banded(n=3000, diags=5, spread=100, seed=4)
    offsets = np.unique(A.indices - np.repeat(np.arange(3000), lengths(A)))
    assert offsets.size == 5 and 0 in offsets and np.abs(offsets).max() <= 100
    assert lengths(A).max() == 5
    with pytest.raises(ValueError, match="cannot place 9 distinct offsets within \\+-3"):
        g.banded(n=100, diags=9, spread=3)


def test_constrows() -> None:
    A = g.constrows(n=500, k=11, spread=40, seed=2)
    assert np.all(lengths(A) == 11)
    # The same offsets (mod n) in every row: a periodic pattern.
    offsets = (A.indices.reshape(500, 11) - np.arange(500)[:, None]) % 500
    assert np.all(np.sort(offsets, axis=1) == np.sort(offsets[0]))
    with pytest.raises(ValueError, match="wraps around"):
        g.constrows(n=50, k=3, spread=30)


def test_stacked_joins_the_blocks_diagonally() -> None:
    A = g.stacked(k=5, scale=9, edges=4, seed=3)
    up = 125
    assert A.shape == (up + 512, up + 512)
    assert (A[:up, :up] != g.stencil27(5)).nnz == 0 and A[:up, up:].nnz == 0
    assert (A[up:, up:] != g.rmat(9, 4, seed=3)).nnz == 0 and A[up:, :up].nnz == 0
    B = g.stacked(k=5, scale=9, count=3, long=200, seed=3)
    assert (B[up:, up:] != g.denserows(512, 3, 3, 200, seed=3)).nnz == 0


# -- specs ----------------------------------------------------------------------------------------
def test_parse_spec() -> None:
    assert g.parse_spec("gen:random:n=1000,k=12") == ("random", {"n": 1000, "k": 12})
    assert g.parse_spec("gen:rmat:scale=10,a=0.6") == ("rmat", {"scale": 10, "a": 0.6})
    assert g.parse_spec("gen:stencil27") == ("stencil27", {})
    assert g.parse_spec("gen:random:n=1e5") == ("random", {"n": 100000})
    assert g.canonical_spec("random", {"k": 3, "n": 10}) == "gen:random:n=10,k=3"


@pytest.mark.parametrize("spec, message", [
    ("gen:nosuch:k=1", "unknown generator 'nosuch'"),
    ("gen:random:m=5", "bad argument 'm=5' in 'gen:random:m=5': random takes n=<int>"),
    ("gen:random:n", "bad argument 'n'"),
    ("gen:random:n=many", "bad value 'many' for n"),
])
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("+", "\\+").replace("(", "\\(")):
        g.parse_spec(spec)


# -- suites ---------------------------------------------------------------------------------------
def test_suites_parse() -> None:
    assert set(suites.SUITES) == {"demo", "cpu", "anchors", "irregular", "irregular-small",
                                  "offsuite", "heldout", "real"}
    for name, specs in suites.SUITES.items():
        for spec in specs:
            if name in suites.FILE_SUITES:
                assert spec.endswith(".mtx.gz")
            else:
                g.parse_spec(spec)
    with pytest.raises(ValueError, match="unknown suite 'big'; choose one of demo, cpu, anchors, "
                                         "irregular, irregular-small, offsuite, heldout, real"):
        suites.suite("big")


@pytest.mark.parametrize("held, low, high", [("offsuite", 1e6, 15e6), ("heldout", 1e5, 3e7)])
def test_evaluation_suites_use_no_other_suites_parameters(held, low, high) -> None:
    """offsuite and heldout evaluate the model on matrices outside every other suite: at least
    10, no generator call (name and parameters) of another suite, entries within their stated
    range where they follow from the parameters."""
    off = suites.SUITES[held]
    assert len(off) >= 10
    others = {g.canonical_spec(*g.parse_spec(s)) for name, specs in suites.SUITES.items()
              if name not in suites.FILE_SUITES and name != held for s in specs}
    for spec in off:
        assert g.canonical_spec(*g.parse_spec(spec)) not in others
        n = expected_nnz(spec)
        assert n is None or low <= n <= high


def test_real_suite_resolves_in_the_shared_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("CLSPMV_MATRICES", str(tmp_path))
    with pytest.raises(ValueError, match=f"suite 'real' reads Matrix Market files from "
                                         f"{tmp_path}, which lacks 1138_bus.mtx.gz.*"
                                         "set CLSPMV_MATRICES"):
        suites.suite("real")
    for name in suites.SUITES["real"]:
        (tmp_path / name).write_bytes(b"")
    assert suites.suite("real") == tuple(str(tmp_path / n) for n in suites.SUITES["real"])


def test_demo_suite_is_small_and_covers_every_generator() -> None:
    """The demo holds one matrix of each regular family; the irregular shapes have their own
    small suite."""
    sizes = [g.generate(spec).nnz for spec in suites.SUITES["demo"]]
    assert all(3e5 < n < 1e6 for n in sizes)
    names = {g.parse_spec(s)[0] for s in suites.SUITES["demo"] + suites.SUITES["irregular-small"]}
    assert sorted(names) == sorted(g.GENERATORS)


def test_irregular_suites_have_the_same_shapes() -> None:
    """irregular-small scales irregular down: the same generators in the same order, seeds
    kept, at most 2.5 M entries each (arrow, emptyrows: known from the parameters)."""
    big, small = suites.SUITES["irregular"], suites.SUITES["irregular-small"]
    assert len(big) >= 6
    assert [g.parse_spec(s)[0] for s in big] == [g.parse_spec(s)[0] for s in small]
    for b, s in zip(big, small, strict=True):
        assert g.parse_spec(b)[1].get("seed") == g.parse_spec(s)[1].get("seed")
    arrow = g.parse_spec(big[0])[1]["n"]
    assert 10e6 <= 3 * arrow - 2 <= 60e6


def expected_nnz(spec: str) -> int | None:
    """Entry counts that follow from the parameters alone (None for the random-pattern ones)."""
    name, p = g.parse_spec(spec)
    if name == "stencil27":
        return (3 * p["k"] - 2) ** 3
    if name == "block":
        return p["b"] ** 2 * (7 * p["k"] ** 3 - 6 * p["k"] ** 2)
    if name in ("random", "constrows"):
        return p["n"] * p["k"]
    if name == "poisson2d":
        return 5 * p["k"] ** 2 - 4 * p["k"]
    return None


@pytest.mark.parametrize("name, low, high", [("cpu", 1e6, 30e6), ("anchors", 25e6, 125e6)])
def test_suite_sizes(name: str, low: float, high: float) -> None:
    counts = [expected_nnz(s) for s in suites.SUITES[name]]
    known = [n for n in counts if n is not None]
    assert len(known) >= 3 and all(low <= n <= high for n in known), counts


# -- the irregular shapes -------------------------------------------------------------------------
@pytest.mark.parametrize("local", [0.0, 0.7])
def test_powerlaw(local: float) -> None:
    n, k = 20000, 10
    A = g.powerlaw(n, k, local=local, spread=50, seed=3)
    L = lengths(A)
    assert A.shape == (n, n) and 0.9 * n * k <= A.nnz <= n * k * 1.02
    assert L.max() > 50 * k and L.max() <= n // 20  # a heavy tail, capped
    assert np.median(L) < k  # most rows are short
    # the share of entries near the diagonal: about `local` plus the uniform ones that land there
    rows = np.repeat(np.arange(n), L)
    reach = np.maximum(50, 2 * L)[rows]
    dist = np.abs(A.indices - rows)
    near = np.mean(np.minimum(dist, n - dist) <= reach)
    assert abs(near - local) < 0.1 + 0.05 * (local == 0.0)
    with pytest.raises(ValueError, match="local must be between 0 and 1, got 2"):
        g.powerlaw(10, 2, local=2)
    with pytest.raises(ValueError, match="alpha must be > 1, got 1.0"):
        g.powerlaw(10, 2, alpha=1.0)


def test_arrow() -> None:
    n = 30
    A = g.arrow(n)
    assert A.shape == (n, n) and A.nnz == 3 * n - 2
    dense = A.toarray() != 0
    expected = np.eye(n, dtype=bool)
    expected[0, :] = expected[:, 0] = True
    assert np.array_equal(dense, expected)
    assert g.arrow(1).nnz == 1


def test_emptyrows() -> None:
    A = g.emptyrows(4000, 7, empty=0.85, seed=2)
    L = lengths(A)
    assert set(np.unique(L)) == {0, 7} and A.nnz == 7 * np.count_nonzero(L)
    assert abs(np.mean(L == 0) - 0.85) < 0.03
    assert g.emptyrows(50, 3, empty=1.0).nnz == 0 and g.emptyrows(50, 3, empty=0.0).nnz == 150
    with pytest.raises(ValueError, match="empty must be between 0 and 1, got -0.5"):
        g.emptyrows(10, 2, empty=-0.5)


def test_chunglu() -> None:
    n, k = 20000, 8
    A = g.chunglu(n, k, seed=5)
    L, C = lengths(A), np.bincount(A.indices, minlength=n)
    assert A.shape == (n, n) and 0.5 * n * k < A.nnz <= n * k
    # power laws both ways, hotter in the columns (in_exp 2.1 < out_exp 2.5)
    assert L.max() > 30 * k and C.max() > 100 * k and C.max() > 2 * L.max()
    assert np.median(L) < k and np.median(C) < k
    with pytest.raises(ValueError, match="exponents must be > 1"):
        g.chunglu(10, 2, in_exp=0.5)
