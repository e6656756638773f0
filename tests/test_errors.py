"""Bad input and device limits raise the documented errors with messages that name the problem."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import build


@pytest.fixture
def small(device) -> clspmv.DeviceMatrix:
    A = sp.random(30, 20, density=0.2, format="csr", random_state=0)
    return clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype=np.float32)


def test_error_hierarchy() -> None:
    for err in (clspmv.DeviceError, clspmv.UnsuitableFormatError, clspmv.MatrixFormatError,
                clspmv.BuildError, clspmv.IndexOverflowError):
        assert issubclass(err, clspmv.ClspmvError)
    assert issubclass(clspmv.UnsuitableFormatError, ValueError)
    assert issubclass(clspmv.MatrixFormatError, ValueError)
    assert issubclass(clspmv.BuildError, clspmv.DeviceError)


@pytest.mark.parametrize("bad", [np.ones(19), np.ones(21), np.ones((20, 1)), np.ones((1, 20)),
                                 np.float64(1.0)])
def test_wrong_x_shape(small, bad) -> None:
    with pytest.raises(ValueError, match=r"x has shape .*, expected \(20,\)"):
        small.matvec(bad)


def test_wrong_y(small) -> None:
    x = np.ones(20)
    with pytest.raises(ValueError, match=r"y has shape \(29,\), expected \(30,\)"):
        small.matvec(x, np.zeros(29, np.float32))
    with pytest.raises(TypeError, match="y has dtype float64, expected float32"):
        small.matvec(x, np.zeros(30))
    ro = np.zeros(30, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="y is read-only"):
        small.matvec(x, ro)
    with pytest.raises(TypeError, match="complex"):
        small.matvec(np.ones(20, complex))


def test_device_arrays_checked(small, device) -> None:
    q = device.queue
    with pytest.raises(ValueError, match=r"x has shape \(7,\), expected \(20,\)"):
        small.matvec(cl_array.zeros(q, 7, np.float32))
    other = cl.Context([device.cl_device])
    with pytest.raises(ValueError, match="another OpenCL context"):
        small.matvec(cl_array.zeros(cl.CommandQueue(other), 20, np.float32))
    with pytest.raises(TypeError, match="y must be a pyopencl array"):
        small.matvec(cl_array.zeros(q, 20, np.float32), np.zeros(30, np.float32))


def test_unknown_format_and_params(device) -> None:
    with pytest.raises(ValueError, match="unknown format 'csr5'; choose one of coo, csr-scalar"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), format="csr5", device=device)
    with pytest.raises(ValueError, match=r"threads_per_row must be one of \(2, 4, 8, 16, 32\)"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), format="csr-vector", device=device,
                                       threads_per_row=3)
    with pytest.raises(ValueError, match="sigma must be 1 or a positive multiple of C="):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), format="sell", device=device,
                                       sigma=device.simd_width + 1)


def test_bad_dtypes(device) -> None:
    with pytest.raises(TypeError, match="dtype must be float32 or float64, got int32"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), device=device, dtype=np.int32)
    with pytest.raises(TypeError, match="complex matrices are not supported"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3, dtype=complex), device=device)
    with pytest.raises(ValueError, match="expected a 2-D matrix"):
        clspmv.DeviceMatrix.from_scipy(np.ones(4), device=device)
    # integer and boolean input become float64
    M = clspmv.DeviceMatrix.from_scipy(sp.eye(3, dtype=np.int64), device=device, dtype=None)
    assert M.dtype == np.float64 or not device.fp64


def test_float64_without_fp64(device) -> None:
    no_fp64 = dataclasses.replace(device, fp64=False)
    with pytest.raises(clspmv.DeviceError, match="has no float64 support"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(4), device=no_fp64, dtype=np.float64)


def test_allocation_above_device_limit(device) -> None:
    tiny = dataclasses.replace(device, max_allocation=1000)
    A = sp.random(200, 200, density=0.1, format="csr", random_state=1)
    with pytest.raises(clspmv.DeviceError,
                       match=r"format 'ellr' needs a buffer of \d+ bytes for 'col', above the "
                             r"1000 bytes"):
        clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=tiny, dtype=np.float32)
    # the real device still works afterwards
    M = clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device, dtype=np.float32)
    np.testing.assert_allclose(M @ np.ones(200), A @ np.ones(200), rtol=1e-5)


def test_unsuitable_format_names_bytes(device) -> None:
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.zeros(200_000, int), rng.integers(0, 2000, 2000)])
    cols = np.concatenate([np.arange(200_000), rng.integers(0, 200_000, 2000)])
    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(2000, 200_000))
    for fmt in ("ell", "ellr", "ellr-t", "dia"):
        with pytest.raises(clspmv.UnsuitableFormatError,
                           match=rf"format '{fmt}' would need \d+ bytes .* against \d+ bytes in "
                                 r"CSR"):
            clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, dtype=np.float32)


def test_index_overflow_guard(device) -> None:
    huge = sp.coo_matrix((2**31 + 5, 3))  # holds no arrays of that size
    with pytest.raises(clspmv.IndexOverflowError, match="does not fit the 32-bit indices"):
        clspmv.DeviceMatrix.from_scipy(huge, device=device)


def test_second_matrix_builds_nothing(device) -> None:
    A = sp.random(40, 40, density=0.1, format="csr", random_state=2)
    clspmv.DeviceMatrix.from_scipy(A, format="hyb", device=device, dtype=np.float32)
    before = build.builds
    M = clspmv.DeviceMatrix.from_scipy(A * 2, format="hyb", device=device, dtype=np.float32)
    assert build.builds == before
    assert np.allclose(M @ np.ones(40), 2 * (A @ np.ones(40)), rtol=1e-5)


def test_build_error_carries_compiler_log(device) -> None:
    with pytest.raises(clspmv.BuildError, match=r"building csr.cl .* failed:(.|\n)*VALUE_T"):
        build.program(device, "csr.cl", ("-DVALUE_T=not_a_type", "-DWG=64"))
