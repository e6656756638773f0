"""Tests of clspmv.row_stats: the row-length statistics of Table I of the ELLPACK-R paper."""

from __future__ import annotations

import csv
import dataclasses
import math
import re

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

from clspmv import io as mmio
from clspmv.row_stats import MatrixStats, format_table, hyb_width, stats

from shared_data import MATRICES

needs_matrices = pytest.mark.skipif(
    not MATRICES.is_dir(), reason=f"shared test matrices not found at {MATRICES}"
)


def matrix_with_row_lengths(lengths: list[int], cols: int = 20) -> sp.csr_matrix:
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.arange(n) for n in lengths]) if lengths else np.zeros(0, int)
    return sp.csr_matrix((np.ones(indptr[-1]), indices, indptr), shape=(len(lengths), cols))


# --------------------------------------------------------------------------- hyb_width


@pytest.mark.parametrize(
    ("lengths", "k"),
    [
        ([], 0),
        ([0, 0, 0], 0),
        ([5], 5),
        ([1, 2, 3], 3),  # one row of three has >= 3 entries
        ([1, 2, 3, 4], 3),  # two of four rows (>= 4/3) have >= 3
        ([1, 1, 1, 1, 1, 10], 1),  # only one of six rows has more than 1
        ([0, 0, 7], 7),
        ([0, 0, 0, 7], 0),
        ([4, 4, 4, 4, 4, 4], 4),
    ],
)
def test_hyb_width_examples(lengths: list[int], k: int) -> None:
    assert hyb_width(np.array(lengths, dtype=np.int64)) == k
    assert isinstance(hyb_width(np.array(lengths, dtype=np.int64)), int)


@given(st.lists(st.integers(0, 40), max_size=60))
def test_hyb_width_matches_definition(lengths: list[int]) -> None:
    rows = len(lengths)
    admissible = [
        k for k in range(max(lengths, default=0) + 1) if 3 * sum(n >= k for n in lengths) >= rows
    ]
    assert hyb_width(np.array(lengths, dtype=np.int32)) == max(admissible)
    if rows:  # the ceil(rows/3)-th largest length
        assert hyb_width(lengths) == sorted(lengths, reverse=True)[math.ceil(rows / 3) - 1]


def test_hyb_width_accepts_integral_floats_and_rejects_bad_input() -> None:
    assert hyb_width(np.array([1.0, 2.0, 3.0])) == 3
    with pytest.raises(ValueError, match="integers"):
        hyb_width(np.array([1.5, 2.0]))
    with pytest.raises(ValueError, match="non-negative"):
        hyb_width(np.array([1, -1]))
    with pytest.raises(ValueError, match="1-D"):
        hyb_width(np.ones((2, 2), dtype=int))


# --------------------------------------------------------------------------- stats


def test_stats_small_matrix_by_hand() -> None:
    s = stats(matrix_with_row_lengths([1, 1, 1, 1, 1, 10]))
    assert s == MatrixStats(
        rows=6,
        cols=20,
        entries=15,
        av=2.5,
        max_minus_av=7.5,
        sigma=float(np.std([1, 1, 1, 1, 1, 10])),
        pct_sigma_over_av=100 * float(np.std([1, 1, 1, 1, 1, 10])) / 2.5,
        pct_ell_hyb=100 * 6 / 15,
        hyb_width=1,
    )
    assert s.sigma == pytest.approx(math.sqrt(11.25))


def test_stats_no_rows() -> None:
    s = stats(sp.csr_matrix((0, 5)))
    assert (s.rows, s.cols, s.entries, s.hyb_width) == (0, 5, 0, 0)
    assert (s.av, s.max_minus_av, s.sigma, s.pct_sigma_over_av) == (0.0, 0.0, 0.0, 0.0)
    assert s.pct_ell_hyb == 100.0


def test_stats_no_entries() -> None:
    s = stats(sp.csr_matrix((4, 3)))
    assert (s.rows, s.entries, s.hyb_width) == (4, 0, 0)
    assert (s.av, s.max_minus_av, s.sigma) == (0.0, 0.0, 0.0)
    assert s.pct_sigma_over_av == 0.0
    assert s.pct_ell_hyb == 100.0
    values = [v for v in dataclasses.astuple(s) if isinstance(v, float)]
    assert not any(math.isnan(v) for v in values)


def test_stats_sums_duplicates_keeps_explicit_zeros_and_leaves_input_alone() -> None:
    # (0,0) twice, an explicit zero at (1,2), a pair summing to zero at (2,1).
    A = sp.coo_matrix(
        (np.array([1.0, 2.0, 0.0, 3.0, -3.0]), ([0, 0, 1, 2, 2], [0, 0, 2, 1, 1])), shape=(3, 3)
    )
    s = stats(A)
    assert s.entries == 3
    assert (s.av, s.max_minus_av, s.sigma) == (1.0, 0.0, 0.0)
    assert A.nnz == 5  # not canonicalised in place
    C = sp.csr_matrix((np.array([1.0, 2.0]), np.array([0, 0]), np.array([0, 2, 2])), shape=(2, 2))
    assert stats(C).entries == 1
    assert C.nnz == 2 and not C.has_canonical_format


def test_stats_dense_and_sparse_agree() -> None:
    rng = np.random.default_rng(0)
    M = rng.standard_normal((30, 17)) * (rng.random((30, 17)) < 0.2)
    reference = stats(sp.csr_matrix(M))
    assert stats(M) == reference
    assert stats(M.tolist()) == reference
    assert stats(sp.csc_array(M)) == reference
    assert stats(sp.coo_matrix(M)) == reference
    assert reference.entries == np.count_nonzero(M)


def test_stats_rejects_non_matrices() -> None:
    with pytest.raises(ValueError, match="2-D"):
        stats(np.ones(3))


def test_matrix_stats_is_frozen() -> None:
    s = stats(np.eye(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.av = 2.0  # type: ignore[misc]


def test_as_row() -> None:
    s = stats(matrix_with_row_lengths([1, 1, 1, 1, 1, 10]))
    row = s.as_row("m")
    assert list(row) == ["Matrix", "N", "Entries", "Av", "Max-Av", "σ", "%σ/Av", "%ELL(HYB)"]
    assert row == {
        "Matrix": "m",
        "N": 6,
        "Entries": 15,
        "Av": 2.5,
        "Max-Av": 7.5,
        "σ": s.sigma,
        "%σ/Av": s.pct_sigma_over_av,
        "%ELL(HYB)": 40.0,
    }


def test_format_table() -> None:
    rows = [
        stats(matrix_with_row_lengths([1, 1, 1, 1, 1, 10])).as_row("1_000"),
        stats(np.eye(2)).as_row("eye"),
    ]
    table = format_table(rows)
    lines = table.splitlines()
    assert lines[0].split() == ["Matrix", "N", "Entries", "Av", "Max-Av", "σ", "%σ/Av", "%ELL(HYB)"]
    assert lines[2].split() == ["1_000", "6", "15", "2.50", "7.50", "3.35", "134.16", "40.0"]
    assert lines[3].split() == ["eye", "2", "2", "1.00", "0.00", "0.00", "0.00", "100.0"]
    assert "|" in format_table(rows, tablefmt="github")


# --------------------------------------------------------------------------- real matrices


@needs_matrices
def test_table1_qh1484() -> None:
    s = stats(mmio.read(MATRICES / "qh1484.mtx.gz"))
    assert (s.rows, s.entries) == (1484, 6110)
    assert f"{s.av:.2f}" == "4.12"
    assert f"{s.max_minus_av:.2f}" == "8.88"
    assert f"{s.sigma:.2f}" == "1.60"
    assert f"{s.pct_sigma_over_av:.2f}" == "38.87"
    assert f"{s.pct_ell_hyb:.1f}" == "86.8"


@needs_matrices
def test_table1_dw2048() -> None:
    s = stats(mmio.read(MATRICES / "dw2048.mtx.gz"))
    assert (s.rows, s.entries) == (2048, 10114)
    assert f"{s.av:.2f}" == "4.94"
    assert f"{s.max_minus_av:.2f}" == "3.06"
    # Misprint in the paper: it prints σ = 0.61, but the true value is 0.506, which is
    # also what the paper's own %σ/Av of 10.24 implies (0.506 / 4.94 = 10.24 %).
    assert f"{s.sigma:.3f}" == "0.506"
    assert f"{s.pct_sigma_over_av:.2f}" == "10.24"
    assert f"{s.pct_ell_hyb:.1f}" == "98.7"


@needs_matrices
def test_table1_bcsstk24() -> None:
    s = stats(mmio.read(MATRICES / "bcsstk24.mtx.gz"))
    assert (s.rows, s.entries) == (3562, 159910)
    # Misprint in the paper: it prints Av = 45.00, but 159910 / 3562 = 44.89 (its σ and
    # %σ/Av, 11.49 and 25.59, agree with 44.89: 11.49 / 44.89 = 25.59 %).
    assert f"{s.av:.2f}" == "44.89"
    # Misprint in the paper, following from the one above: Max-Av is printed as 12.00
    # (57 - 45.00) but is 57 - 44.89 = 12.11.
    assert f"{s.max_minus_av:.2f}" == "12.11"
    assert f"{s.sigma:.2f}" == "11.49"
    assert f"{s.pct_sigma_over_av:.2f}" == "25.59"
    # The paper prints 100.0: the true 99.95 rounds to it.
    assert f"{s.pct_ell_hyb:.2f}" == "99.95"
    assert f"{s.pct_ell_hyb:.1f}" == "100.0"


def manifest() -> list[dict[str, str]]:
    if not MATRICES.is_dir():
        return []
    with open(MATRICES / "MANIFEST.csv", newline="") as fh:
        return list(csv.DictReader(fh))


@needs_matrices
def test_manifest_lists_eight_matrices() -> None:
    assert len(manifest()) == 8


@needs_matrices
@pytest.mark.parametrize("entry", manifest(), ids=lambda e: e["name"])
def test_stats_match_manifest(entry: dict[str, str]) -> None:
    A = mmio.read(MATRICES / f"{entry['name']}.mtx.gz")
    s = stats(A)
    assert s.rows == int(entry["rows"])
    assert s.cols == int(entry["cols"])
    assert s.entries == int(entry["nnz_expanded"])
    assert s.av == pytest.approx(float(entry["avg_nnz_per_row"]), abs=5e-4 + 1e-12)
    assert round(s.max_minus_av + s.av) == int(entry["max_nnz_per_row"])
    assert s.sigma == pytest.approx(float(entry["std_nnz_per_row"]), abs=5e-4 + 1e-12)
    assert (A != A.T).nnz == 0 or entry["symmetric"] == "false"


def test_cli_stats_on_broken_files(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    # The files: a clean error (exit 2), or the statistics of a valid empty matrix.
    from clspmv.cli import main

    no_rows = tmp_path / "norows.mtx"
    no_rows.write_bytes(b"%%MatrixMarket matrix array real general\n0 3\n")
    assert main(["stats", str(no_rows)]) == 0
    assert "norows" in capsys.readouterr().out
    for name, data, reason in (
            ("point.mtx", b"1 1 1.2.3\n", r"line 3: value '1\.2\.3' is not a number"),
            ("nul.mtx", b"1 1 1\x00\n", r"line 3: invalid control byte 0x00"),
            ("long.mtx", b"1" * (2 << 20), r"line 3: line longer than 1048576 bytes")):
        path = tmp_path / name
        path.write_bytes(b"%%MatrixMarket matrix coordinate real general\n2 2 1\n" + data)
        assert main(["stats", str(path)]) == 2
        err = capsys.readouterr().err
        assert re.search(rf"{re.escape(str(path))}: {reason}", err), err
        assert "Traceback" not in err
