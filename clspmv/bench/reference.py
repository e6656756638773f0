"""One benchmark problem: a matrix in one precision, its random x, the float64 reference product
and the per-row error bound every measured product is checked against.

The bound is the test suite's oracle: |y_i - ref_i| <= ERROR_FACTOR (len_i + 1) (eps (|A||x|)_i +
tiny), len_i the entries of row i. ``mixed`` (float32 values summed in float64) is checked
against float32's bound.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from ..matrix import canonical_csr
from ..precision import MIXED, Precision
from ..row_stats import MatrixStats
from .records import Record, min_bytes

ERROR_FACTOR = 2.0
"""The checked product must satisfy |y_i - ref_i| <= ERROR_FACTOR (len_i + 1) (eps (|A||x|)_i
+ tiny) in every row (the bound of the test suite's oracle)."""


@dataclass(frozen=True)
class Problem:
    """One matrix in one precision: its CSR (float32 values for ``mixed``), x, the float64
    reference product and the error bound (float32's for ``mixed`` too)."""

    name: str
    csr: sp.csr_matrix
    stats: MatrixStats
    x: np.ndarray
    """The input: a vector, or an n x k array for several right-hand sides."""
    reference: np.ndarray
    bound: np.ndarray
    seed: int = 0
    derived: dict[Any, Problem] = field(default_factory=dict, repr=False, compare=False)
    """Problems made from this one (:meth:`transposed`, :meth:`columns`), kept for reuse."""
    precision: Precision | None = None
    """None: the CSR's value type, summed in it."""

    @property
    def accuracy(self) -> Precision:
        """How the formats store and sum this problem."""
        return self.precision or Precision.of(self.csr.dtype)

    def mixed(self) -> Problem:
        """The same float32 problem run with float64 sums (``dtype="mixed"``)."""
        return replace(self, precision=Precision.of(MIXED))

    @classmethod
    def build(cls, name: str, A: sp.spmatrix, s: MatrixStats, dtype: np.dtype,
              seed: int) -> Problem:
        csr = canonical_csr(A, dtype)
        x = np.random.default_rng(seed).uniform(-1.0, 1.0, csr.shape[1]).astype(dtype)
        return cls(name, csr, s, x, *reference_and_bound(csr, x), seed=seed)

    def transposed(self) -> Problem:
        """A^T with a random x of its own (seed + 1): the check of A^T x. Its ``csr`` is A^T;
        records are still made from this problem, which describes A."""
        if "T" not in self.derived:
            csr_t = self.csr.T.tocsr()
            csr_t.sort_indices()
            x = np.random.default_rng(self.seed + 1).uniform(-1.0, 1.0, csr_t.shape[1])
            x = x.astype(self.csr.dtype)
            self.derived["T"] = Problem(self.name, csr_t, self.stats, x,
                                        *reference_and_bound(csr_t, x), seed=self.seed + 1)
        return self.derived["T"]

    def columns(self, k: int, order: str = "C") -> Problem:
        """A with an n x k random X in ``order``: the first k columns of the widest X asked for
        so far (column j is the same for every k: seed + 2, drawn column after column), with
        its reference and bound. Ask for the widest first to draw it once."""
        widest = self.derived.get("X")
        if widest is None or widest.x.shape[1] < k:
            n = self.csr.shape[1]
            X = np.random.default_rng(self.seed + 2).uniform(-1.0, 1.0, (k, n)).T
            X = X.astype(self.csr.dtype)
            widest = self.derived["X"] = Problem(self.name, self.csr, self.stats, X,
                                                 *reference_and_bound(self.csr, X),
                                                 seed=self.seed + 2)
        as_order = np.asfortranarray if order == "F" else np.ascontiguousarray
        return Problem(self.name, self.csr, self.stats, as_order(widest.x[:, :k]),
                       widest.reference[:, :k], widest.bound[:, :k], seed=widest.seed)

    def error_ratio(self, y: np.ndarray) -> float:
        """max |y - reference| / bound over the rows (NaN counts as infinitely wrong)."""
        if y.size == 0:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            ratio = np.abs(np.asarray(y, np.float64) - self.reference) / self.bound
        return float("inf") if np.isnan(ratio).any() else float(ratio.max())

    def max_rel_error(self, y: np.ndarray) -> float:
        """max |y - reference| / max |reference| (NaN counts as infinitely wrong)."""
        if y.size == 0:
            return 0.0
        with np.errstate(invalid="ignore", over="ignore"):
            err = np.abs(np.asarray(y, np.float64) - self.reference)
        if np.isnan(err).any():
            return float("inf")
        scale = float(np.abs(self.reference).max())
        return float(err.max()) / scale if scale > 0 else float(err.max())

    def record(self, device: str, device_type: str, fmt: str, kind: str = "format") -> Record:
        m, n = self.csr.shape
        rec = Record(matrix=self.name, rows=m, cols=n, nnz=self.csr.nnz, device=device,
                     device_type=device_type, format=fmt, dtype=self.accuracy.name, kind=kind,
                     host=socket.gethostname())
        rec.set_matrix_stats(self.stats)
        rec.min_bytes = min_bytes(m, n, self.csr.nnz, self.csr.dtype.itemsize)
        return rec


def reference_and_bound(csr: sp.csr_matrix, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """scipy's float64 product A x (x a vector or an n x k array) and the per-entry error
    bound ERROR_FACTOR (len + 1) (eps (|A||x|) + tiny), len the entries of the row."""
    x64 = x.astype(np.float64)
    A64 = sp.csr_matrix((csr.data.astype(np.float64), csr.indices, csr.indptr),
                        shape=csr.shape)
    reference = A64 @ x64
    A64.data = np.abs(A64.data)
    magnitude = A64 @ np.abs(x64)
    finfo = np.finfo(csr.dtype)
    lengths = np.diff(csr.indptr).astype(np.float64) + 1
    if x.ndim == 2:
        lengths = lengths[:, None]
    bound = ERROR_FACTOR * lengths * (finfo.eps * magnitude + finfo.tiny)
    return reference, bound
