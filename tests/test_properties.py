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

from oracle import ZEROS_ABSENT, assert_matches, oracle_matrix
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
                   y0, zeros_absent=fmt in ZEROS_ABSENT)


# Runs in a subprocess with every kernel built with -cl-denorms-are-zero (PyOpenCL appends
# PYOPENCL_BUILD_OPTIONS to each build), as NVIDIA's float32 arithmetic behaves by default: the
# oracle's bound must accept the flushed results, and the flushing must really have happened.
FLUSHED = r"""
import dataclasses, json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import clspmv
from oracle import ZEROS_ABSENT, assert_matches, oracle_matrix, reference, rows_ok
from strategies import ProductCase
from test_properties import canonical

dev = next(d for d in clspmv.devices() if d.platform == "Portable Computing Language")
flushed_rows = products = 0
for i, fmt in enumerate(clspmv.FORMATS):
    for seed in range(4):
        case = ProductCase(rows=300, cols=200, lengths="poisson", mean_length=6.0, empty_rows=0.1,
                           used_cols=1.0, duplicates=0.1, zeros=0.05, specials_A=0, specials_x=0,
                           magnitude_A="tiny", magnitude_x="huge", alpha=1.0,
                           beta=0.0 if seed % 2 else 0.5, input_format="coo", vectors="numpy",
                           seed=100 * i + seed)
        A, x, y0 = case.build(np.float32)
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=np.float32)
        y = np.zeros(300, np.float32) if y0 is None else y0.astype(np.float32)
        M.matvec(x, y, alpha=case.alpha, beta=case.beta)
        B = oracle_matrix(fmt, canonical(A), np.float32)
        assert_matches(y, B, x, np.float32, case.alpha, case.beta, y0,
                       zeros_absent=fmt in ZEROS_ABSENT)
        exact = reference(B, x, np.float32, case.alpha, case.beta, y0)
        flushed_rows += int((~rows_ok(y.astype(exact.y.dtype), exact)).sum())
        products += 1
print(json.dumps({"products": products, "flushed_rows": flushed_rows}))
"""


def test_flush_to_zero_device_stays_within_the_bound(tmp_path) -> None:
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    if not any(d.platform == "Portable Computing Language" for d in clspmv.devices()):
        pytest.skip("needs PoCL, which honours -cl-denorms-are-zero")
    env = {**os.environ, "PYOPENCL_BUILD_OPTIONS": "-cl-denorms-are-zero",
           "POCL_CACHE_DIR": str(tmp_path)}  # no kernel binaries from unflushed builds
    run = subprocess.run([sys.executable, "-c", FLUSHED, str(Path(__file__).parent)], env=env,
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.splitlines()[-1])
    assert out["products"] == 4 * len(clspmv.FORMATS)
    # rows that only the flushed reference accepts: the flushing really happened
    assert out["flushed_rows"] > 0, "nothing was flushed: the test proves nothing"
