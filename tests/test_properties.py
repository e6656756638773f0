"""Property: for any matrix, x, alpha and beta, every format in every dtype on every device gives
scipy's product within the oracle's per-row bound (``oracle.py``), or (padded formats only) refuses
the matrix with UnsuitableFormatError. Never a silently wrong vector.

The random cases come from ``strategies.py``. Hypothesis profiles (``conftest.py``): ``ci``, the
default, runs a fixed, derandomized set of 100 cases per format x dtype x device; ``fuzz``
(``tox -e fuzz``) runs 1000 per combination, freshly random each time.
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp
from hypothesis import event, given

import clspmv

from oracle import assert_matches, oracle_matrix
from scenarios import PADDED_FORMATS
from strategies import ProductCase, product_cases


def _size_class(n: int) -> str:
    return next(f"<= {limit}" for limit in (0, 10, 100, 1000, 10_000, 10**9) if n <= limit)


def canonical(A: sp.spmatrix) -> sp.csr_matrix:
    """What the oracle multiplies: duplicates summed in float64, explicit zeros kept."""
    csr = sp.csr_matrix(A, dtype=np.float64, copy=True)
    csr.sum_duplicates()
    return csr


@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
@given(case=product_cases())
def test_random_products_match_scipy(case: ProductCase, fmt: str, dtype: np.dtype,
                                      device: clspmv.Device) -> None:
    A, x, y0 = case.build(dtype)
    event(f"rows {_size_class(A.shape[0])}, columns {_size_class(A.shape[1])}")
    event(f"stored entries {_size_class(A.nnz)}")
    try:
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=dtype)
    except clspmv.UnsuitableFormatError:
        assert fmt in PADDED_FORMATS, f"{fmt} refused a matrix"
        return
    m = A.shape[0]
    # BLAS semantics: with beta == 0 the old y is never read, so NaN there must not show
    start = np.full(m, np.nan, dtype) if y0 is None else y0.astype(dtype)
    if case.vectors == "pyopencl":
        q = device.queue
        y_dev = cl_array.to_device(q, start)
        out = M.matvec(cl_array.to_device(q, x.astype(dtype)), y_dev, case.alpha, case.beta)
        assert out is y_dev
        y = y_dev.get()
    else:
        y = start.copy()
        out = M.matvec(x, y, alpha=case.alpha, beta=case.beta)
        assert out is y
    assert_matches(y, oracle_matrix(fmt, canonical(A), dtype), x, dtype, case.alpha, case.beta,
                   y0)
