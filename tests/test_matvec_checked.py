"""DeviceMatrix.matvec_checked (the distributed product's launch, operands checked by the
caller): every format gives matvec's y, into a row block of a taller y too; CSC storage is
refused with the fix named."""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv

from oracle import assert_matches


def test_same_as_matvec(device: clspmv.Device, fmt: str, dtype: np.dtype) -> None:
    rng = np.random.default_rng(3)
    A = sp.random_array((70, 50), density=0.1, format="lil", rng=rng, dtype=np.float64)
    A[5, :] = 1.0  # a dense row
    A = A.tocsr()
    M = clspmv.DeviceMatrix.from_scipy(A.astype(dtype), format=fmt, device=device)
    q = device.queue
    x = rng.standard_normal(50).astype(dtype)
    x_dev = cl_array.to_device(q, x)
    y0 = rng.standard_normal(80).astype(dtype)
    y_dev = cl_array.to_device(q, y0)
    alpha, beta = dtype.type(-1.5), dtype.type(0.25)
    events = M.matvec_checked(x_dev, y_dev, alpha, beta, row_offset=4)
    assert events == M.last_events and events
    y = y_dev.get(q)
    np.testing.assert_array_equal(y[:4], y0[:4])  # rows outside the block as they were
    np.testing.assert_array_equal(y[74:], y0[74:])
    assert_matches(y[4:74], A, x, dtype, alpha=-1.5, beta=0.25, y0=y0[4:74])
    # bit for bit what matvec gives, checks and all
    same = M.matvec(x_dev, cl_array.to_device(q, y0[4:74]), alpha=-1.5, beta=0.25).get(q)
    np.testing.assert_array_equal(y[4:74], same)


def test_csc_storage_refused(device: clspmv.Device) -> None:
    A = sp.random_array((20, 20), density=0.2, format="csc", rng=1)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    x = cl_array.zeros(device.queue, 20, M.dtype)
    y = cl_array.zeros(device.queue, 20, M.dtype)
    with pytest.raises(ValueError, match=r"needs CSR storage; this matrix holds A\^T"):
        M.matvec_checked(x, y, M.dtype.type(1), M.dtype.type(0))
