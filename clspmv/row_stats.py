"""Row-length statistics of sparse matrices, as in Table I of the ELLPACK-R paper.

:func:`stats` gives, for a matrix, its size, number of entries, average row length (Av),
longest row minus average (Max-Av), standard deviation of the row lengths (σ), σ relative
to Av (%σ/Av) and the share of the entries that the ELL part of a HYB matrix holds
(%ELL(HYB)). :func:`hyb_width` is the rule that chooses that ELL width; the HYB format
uses the same function. :func:`format_table` prints rows of :meth:`MatrixStats.as_row`,
:func:`legend` what their columns mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

__all__ = ["MatrixStats", "THIRD", "format_table", "hyb_width", "legend", "reach_share",
           "stats"]

THIRD = Fraction(1, 3)
"""The share of the rows HYB's ELL width must reach in the ELLPACK-R paper (and on GPUs)."""

LEGEND = {
    "N": "rows",
    "Entries": "stored entries (duplicates summed, explicit zeros counted)",
    "Av": "average entries per row",
    "Max-Av": "the longest row's entries minus Av",
    "σ": "standard deviation of the row lengths",
    "%σ/Av": "σ as a percentage of Av (the rows' irregularity)",
    "%ELL(HYB)": "% of the entries in the ELL part of a HYB matrix (its width: the largest "
                 "length a third of the rows reach)",
}
"""What each column of Table I holds (:func:`legend`)."""

COLUMNS = ("Matrix", *LEGEND)
"""Column names of Table I, in order, as produced by :meth:`MatrixStats.as_row`."""


@dataclass(frozen=True)
class MatrixStats:
    """Row-length statistics of one matrix.

    Attributes:
        rows: number of rows (N).
        cols: number of columns.
        entries: stored entries, duplicates summed, explicit zeros included.
        av: average entries per row (``entries / rows``; 0.0 for no rows).
        max_minus_av: longest row minus ``av``.
        sigma: population standard deviation of the row lengths.
        pct_sigma_over_av: ``100 * sigma / av`` (0.0 when ``av`` is 0).
        pct_ell_hyb: percentage of the entries held by the ELL part of a HYB matrix of
            width ``hyb_width`` (100.0 for a matrix without entries).
        hyb_width: the ELL width chosen by :func:`hyb_width`.
    """

    rows: int
    cols: int
    entries: int
    av: float
    max_minus_av: float
    sigma: float
    pct_sigma_over_av: float
    pct_ell_hyb: float
    hyb_width: int

    def as_row(self, name: str) -> dict[str, Any]:
        """The Table I columns for this matrix, keyed by the paper's column names.

        Keys, in order: ``Matrix, N, Entries, Av, Max-Av, σ, %σ/Av, %ELL(HYB)``.
        """
        values = (
            name,
            self.rows,
            self.entries,
            self.av,
            self.max_minus_av,
            self.sigma,
            self.pct_sigma_over_av,
            self.pct_ell_hyb,
        )
        return dict(zip(COLUMNS, values, strict=True))


def reach_share(rows_reaching: np.ndarray, rows: int, share: Fraction = THIRD) -> np.ndarray:
    """Whether ``rows_reaching`` (rows reaching each width) is at least ``share`` of ``rows``,
    elementwise, in exact integer arithmetic (HYB's width rule)."""
    return share.denominator * rows_reaching >= share.numerator * rows


def hyb_width(row_lengths: npt.ArrayLike, share: Fraction = THIRD) -> int:
    """ELL width K of a HYB matrix with these row lengths.

    K is the largest ``k >= 0`` such that at least ``share`` of the rows (a third by default)
    have ``k`` or more entries, i.e. ``3 * count(len >= k) >= rows`` for the third.
    Equivalently, K is the ``ceil(rows * share)``-th largest row length. 0 for a matrix
    without rows.

    Args:
        row_lengths: 1-D array of non-negative integer row lengths.
        share: the share of the rows that must reach K (the paper's third by default; the HYB
            format takes another on CPUs: :func:`clspmv.formats.hyb.ell_share`).

    Raises:
        ValueError: ``row_lengths`` is not 1-D or holds negative or non-integer values.
    """
    lengths = np.asarray(row_lengths)
    if lengths.ndim != 1:
        raise ValueError(f"row_lengths must be 1-D, got {lengths.ndim} dimensions")
    n = lengths.size
    if n == 0:
        return 0
    if not np.issubdtype(lengths.dtype, np.integer):
        if not np.issubdtype(lengths.dtype, np.floating) or not np.all(
            lengths == np.floor(lengths)
        ):
            raise ValueError("row_lengths must hold integers")
        lengths = lengths.astype(np.int64)
    if lengths.min() < 0:
        raise ValueError("row_lengths must be non-negative")
    # at_least[k] = number of rows with length >= k, for k = 0 .. max.
    at_least = np.cumsum(np.bincount(lengths)[::-1])[::-1]
    # at_least is non-increasing and at_least[0] = n passes, so K is the count of k >= 1 that pass
    return int(np.count_nonzero(reach_share(at_least[1:], n, share)))


def _row_lengths(A: Any) -> tuple[int, int, np.ndarray]:
    """``(rows, cols, entries per row)`` of ``A`` in CSR form with duplicates summed."""
    if sp.issparse(A):
        if A.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {A.ndim} dimensions")
        csr = sp.csr_matrix(A, copy=True)  # copy: sum_duplicates works in place
        csr.sum_duplicates()
    else:
        dense = np.asarray(A)
        if dense.ndim != 2:
            raise ValueError(f"expected a 2-D matrix, got {dense.ndim} dimensions")
        csr = sp.csr_matrix(dense)
    rows, cols = csr.shape
    return int(rows), int(cols), np.diff(csr.indptr).astype(np.int64, copy=False)


def stats(A: Any) -> MatrixStats:
    """Row-length statistics (Table I of the ELLPACK-R paper) of a matrix.

    Args:
        A: any scipy.sparse matrix or array, or a dense 2-D array-like. Sparse input is
            taken in CSR form with duplicates summed, and its explicitly stored zeros count
            as entries; in dense input only non-zeros are entries.

    Returns:
        A :class:`MatrixStats`. A matrix without rows gets 0.0 for every average; one
        without entries gets ``pct_sigma_over_av == 0.0`` and ``pct_ell_hyb == 100.0``.
    """
    rows, cols, lengths = _row_lengths(A)
    entries = int(lengths.sum())
    k = hyb_width(lengths)
    if rows:
        av = entries / rows
        max_minus_av = float(lengths.max()) - av
        sigma = float(np.std(lengths))
    else:
        av = max_minus_av = sigma = 0.0
    pct_sigma = 100.0 * sigma / av if av > 0 else 0.0
    pct_ell = 100.0 * float(np.minimum(lengths, k).sum()) / entries if entries else 100.0
    return MatrixStats(
        rows=rows,
        cols=cols,
        entries=entries,
        av=float(av),
        max_minus_av=float(max_minus_av),
        sigma=sigma,
        pct_sigma_over_av=float(pct_sigma),
        pct_ell_hyb=float(pct_ell),
        hyb_width=k,
    )


def legend() -> str:
    """The meaning of each column of :func:`format_table`, one per line."""
    width = max(map(len, LEGEND))
    return "\n".join(f"{name:<{width}}  {text}" for name, text in LEGEND.items())


def format_table(rows: list[dict[str, Any]], *, tablefmt: str = "simple") -> str:
    """Format rows of :meth:`MatrixStats.as_row` as a text table.

    Floats get two decimals except ``%ELL(HYB)``, which gets one; integers (``N``,
    ``Entries``) are printed as integers. Columns are the union of the rows' keys, in
    order of first appearance.

    Args:
        rows: one dict per matrix, e.g. ``[stats(A).as_row("A")]``.
        tablefmt: a :mod:`tabulate` table format (``"simple"``, ``"github"``, ...).
    """
    from tabulate import tabulate  # imported here: only tables need it

    headers: list[str] = list(dict.fromkeys(key for row in rows for key in row))
    data = [[row.get(key) for key in headers] for row in rows]
    floatfmt = tuple(".1f" if key == "%ELL(HYB)" else ".2f" for key in headers)
    # Text columns must stay text even where a name looks like a number ("1_000").
    text_columns = [i for i in range(len(headers)) if any(isinstance(row[i], str) for row in data)]
    return tabulate(
        data, headers=headers, tablefmt=tablefmt, floatfmt=floatfmt, disable_numparse=text_columns
    )
