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

from oracle import assert_matches
from scenarios import PADDED_FORMATS


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
    with pytest.raises(TypeError, match=r"complex vectors are not supported \(x has dtype "
                                        r"complex128\): clspmv has no complex"):
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
    with pytest.raises(TypeError, match="dtype must be float32, float64 or .mixed., got int32"):
        clspmv.DeviceMatrix.from_scipy(sp.eye(3), device=device, dtype=np.int32)
    for dtype in (None, np.float64):  # a named real dtype would drop the imaginary parts
        with pytest.raises(TypeError, match=r"complex matrices are not supported \(A has dtype "
                                            r"complex128\): clspmv has no complex kernels; "
                                            r"take A.real explicitly"):
            clspmv.DeviceMatrix.from_scipy(sp.eye(3, dtype=complex), device=device, dtype=dtype)
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
    for fmt in sorted(PADDED_FORMATS):
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


# -- awkward vectors: converted (copied) when that is safe, a clear error otherwise --------------
@pytest.fixture
def square(device) -> tuple[sp.csr_matrix, clspmv.DeviceMatrix]:
    A = sp.random(25, 25, density=0.3, format="csr", random_state=3)
    return A, clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, dtype=np.float32)


def test_host_x_of_any_real_dtype_and_layout_is_converted(square) -> None:
    A, M = square
    base = np.random.default_rng(0).standard_normal((25, 3))
    fortran = np.asfortranarray(base)
    cases = {
        "int64": np.arange(25),
        "bool": np.arange(25) % 3 == 0,
        "float16": base[:, 0].astype(np.float16),
        "strided column of a C array": base[:, 1],
        "column of a Fortran array": fortran[:, 2],
        "reversed": base[::-1, 0],
        "every other of 50": np.repeat(base[:, 0], 2)[::2],
        "read-only": np.frombuffer(base[:, 0].copy().tobytes()),
        "list": base[:, 0].tolist(),
    }
    for name, x in cases.items():
        want = np.asarray(x).astype(np.float32)
        assert_matches(M.matvec(x), A, want, np.float32), name


def test_non_numeric_x_and_scalars_are_type_errors(square) -> None:
    _, M = square
    with pytest.raises(TypeError, match=r"x has dtype <U1; expected real numbers \(bool, "
                                        r"integers or floats\): convert it explicitly"):
        M.matvec(np.array(["a"] * 25))
    with pytest.raises(TypeError, match=r"complex vectors are not supported \(x has dtype "
                                        r"complex64\): clspmv has no complex kernels; take "
                                        r"x.real explicitly"):
        M.matvec(np.ones(25, np.complex64))
    with pytest.raises(TypeError, match=r"alpha must be a real number, got 1j"):
        M.matvec(np.ones(25), alpha=1j)
    with pytest.raises(TypeError, match=r"beta must be a real number, got '2'"):
        M.matvec(np.ones(25), beta="2")
    with pytest.raises(TypeError, match=r"alpha must be a real number, got array\(\[1., 2.\]\)"):
        M.matvec(np.ones(25), alpha=np.array([1.0, 2.0]))
    y = M.matvec(np.ones(25), alpha=np.array(2.0), beta=np.int8(0))  # 0-d arrays and numpy ints
    np.testing.assert_allclose(y, 2 * M.matvec(np.ones(25)), rtol=1e-6)


def test_strided_host_y_is_updated_in_place(square) -> None:
    A, M = square
    x = np.linspace(-1, 1, 25)
    storage = np.full(50, 7.0, np.float32)
    y = storage[::2]
    y0 = y.copy()
    out = M.matvec(x, y, alpha=2.0, beta=-1.0)
    assert out is y and np.all(storage[1::2] == 7.0)
    assert_matches(storage[::2], A, x, np.float32, 2.0, -1.0, y0)


def test_host_y_aliasing_x(square) -> None:
    A, M = square
    v = np.linspace(-1, 1, 25).astype(np.float32)
    x0 = v.copy()
    M.matvec(v, v, alpha=1.0, beta=0.5)  # x is read before y is written
    assert_matches(v, A, x0, np.float32, 1.0, 0.5, x0)


def test_device_vectors(square, device) -> None:
    A, M = square
    q = device.queue
    x = np.linspace(-1, 1, 50).astype(np.float32)
    big = cl_array.to_device(q, x)
    # an offset view is copied; a float64 or integer array is converted on the device
    assert_matches(M.matvec(big[25:]).get(), A, x[25:], np.float32)
    assert_matches(M.matvec(cl_array.to_device(q, np.arange(25))).get(), A, np.arange(25),
                   np.float32)
    with pytest.raises(ValueError, match=r"x is a non-contiguous pyopencl array \(strides"):
        M.matvec(big[::2])
    with pytest.raises(TypeError, match=r"complex vectors are not supported \(x has dtype "
                                        r"complex64\)"):
        M.matvec(cl_array.to_device(q, np.ones(25, np.complex64)))
    # y in the same buffer as x: x is copied first, or the kernels would read what they write
    v = cl_array.to_device(q, x[:25].copy())
    out = M.matvec(v, v, alpha=1.0, beta=0.5)
    assert out is v
    assert_matches(v.get(), A, x[:25], np.float32, 1.0, 0.5, x[:25])
    with pytest.raises(ValueError, match="y must be a contiguous array without offset"):
        M.matvec(v, big[25:])
    other = cl.CommandQueue(cl.Context([device.cl_device]))
    with pytest.raises(ValueError, match="y lives in another OpenCL context"):
        M.matvec(v, cl_array.zeros(other, 25, np.float32))


# -- index overflow, with mocked limits (no terabytes allocated) ---------------------------------
def test_index_guards_with_a_mocked_limit(device, monkeypatch: pytest.MonkeyPatch) -> None:
    from clspmv import canonical

    monkeypatch.setattr(canonical, "INDEX_LIMIT", 100)
    with pytest.raises(clspmv.IndexOverflowError, match=r"a 101x5 matrix .* \(limit 100\)"):
        clspmv.DeviceMatrix.from_scipy(sp.csr_matrix((101, 5)), device=device)
    with pytest.raises(clspmv.IndexOverflowError, match=r"a 5x101 matrix"):
        clspmv.DeviceMatrix.from_scipy(sp.csr_matrix((5, 101)), device=device)
    dup = sp.coo_matrix((np.ones(150), (np.zeros(150, int), np.zeros(150, int))), shape=(5, 5))
    with pytest.raises(clspmv.IndexOverflowError, match="150 stored entries"):
        clspmv.DeviceMatrix.from_scipy(dup, device=device)  # counted before summing
    ok = sp.random(100, 100, density=0.005, format="csr", random_state=0)
    clspmv.DeviceMatrix.from_scipy(ok, device=device)


def test_layout_and_launch_guards(device, monkeypatch: pytest.MonkeyPatch) -> None:
    from clspmv.formats import base
    from clspmv.formats.csr import CsrScalar

    layout = base.Layout.for_device(device)
    # an array of 2**31 elements that takes no memory: a zero-stride view
    huge = np.broadcast_to(np.float32(0), (2**31,))
    arrays = {"row_ptr": np.zeros(2, np.int32), "col": np.zeros(1, np.int32), "val": huge}
    with pytest.raises(clspmv.IndexOverflowError,
                       match=r"csr-scalar: array 'val' has 2147483648 elements"):
        CsrScalar((1, 1), np.float32, layout, arrays, threads_per_row=1)
    # padding alone can overflow: csr-aligned pads every row to 16 entries
    A = sp.csr_matrix((np.ones(300), (np.arange(300), np.zeros(300, int))), shape=(300, 1))
    monkeypatch.setattr(base, "INDEX_LIMIT", 4000 + device.simd_width * 32)
    with pytest.raises(clspmv.IndexOverflowError, match="csr-aligned: array 'col' has 4800"):
        clspmv.DeviceMatrix.from_scipy(A, format="csr-aligned", device=device)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device,
                                       threads_per_row=32)
    monkeypatch.setattr(base, "INDEX_LIMIT", 5000)  # 300 rows x 32 work-items = 9600 > 5000
    with pytest.raises(clspmv.IndexOverflowError, match="work-items exceed the 32-bit"):
        M.matvec(np.ones(1))


def test_kernels_know_their_scalar_types(device) -> None:
    """build.typed: scalars are converted to the declared types (a Python int for a double, a
    float for an int would otherwise be passed with the wrong size); a kernel with an argument of
    another type (a vector) stays untyped."""
    src = ("__kernel void k(__global double *y, int n, double a) "
           "{ if (get_global_id(0) < n) y[get_global_id(0)] = a * n; }\n"
           "__kernel void v(__global float *y, float2 p) { y[0] = p.x + p.y; }")
    if not device.fp64:
        pytest.skip("needs fp64")
    prg = cl.Program(device.context, src).build(options=[build.ARG_INFO_OPTION])
    k = build.typed(cl.Kernel(prg, "k"))
    y = cl_array.zeros(device.queue, 4, np.float64)
    k(device.queue, (4,), None, y.data, 4, 2).wait()  # Python ints for int and double
    assert (y.get() == 8.0).all()
    v = build.typed(cl.Kernel(prg, "v"))  # left untyped: float2 is passed as it is
    z = cl_array.zeros(device.queue, 1, np.float32)
    v(device.queue, (1,), None, z.data, cl.cltypes.make_float2(1.5, 2.0)).wait()
    assert z.get()[0] == 3.5
