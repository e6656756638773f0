"""numpy operands without copies on CPU devices (clspmv.host_buffers): the in-place path taken
where it can be, a copy (never a wrong result) for read-only, misaligned, strided,
non-contiguous, other-dtype and overlapping arrays, and y updated in place."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import host_buffers

from oracle import assert_matches

IN, COPY = host_buffers.IN_PLACE, host_buffers.COPIED


@pytest.fixture
def cpu(device):
    if not device.host_memory:
        pytest.skip("numpy operands are used in place on CPU devices only")
    return device


def _matrix() -> sp.csr_matrix:
    return sp.random(90, 60, density=0.1, format="csr", random_state=5)


def _offset_view(n: int, byte_offset: int, dtype=np.float64, align: int = 128) -> np.ndarray:
    """n values starting ``byte_offset`` bytes past an ``align``-byte boundary."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(n * itemsize + align + byte_offset, np.uint8)
    start = (-raw.ctypes.data) % align + byte_offset
    return raw[start:start + n * itemsize].view(dtype)


@pytest.mark.parametrize("fmt", ["csr-vector", "ellr", "coo"])
def test_in_place_path_taken(cpu, fmt):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=cpu)
    x = np.random.default_rng(0).random(60)
    y = M @ x
    assert M.last_transfers == {"x": IN, "y": IN}
    assert y.ctypes.data % 64 == 0  # a new y is allocated aligned
    assert_matches(y, A, x, np.float64)
    y0 = np.full(90, 2.0)
    out = M.matvec(x, y0, alpha=3.0, beta=0.5)
    assert out is y0 and M.last_transfers == {"x": IN, "y": IN}
    assert_matches(y0, A, x, np.float64, alpha=3.0, beta=0.5, y0=np.full(90, 2.0))
    X = np.asfortranarray(np.random.default_rng(1).random((60, 3)))
    Y = M @ X
    assert M.last_transfers == {"x": IN, "y": IN} and Y.flags.f_contiguous
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], np.float64)
    z = M.rmatvec(np.ones(90))
    assert M.last_transfers == {"x": IN, "y": IN}
    assert_matches(z, A.T.tocsr(), np.ones(90), np.float64)


def test_kernels_write_into_the_array_itself(cpu):
    """The premise: on this device a buffer on a numpy array's memory is that memory (PoCL uses
    the host pointer, also 8 bytes past a 128-byte boundary), so nothing is copied."""
    prg = cl.Program(cpu.context, "__kernel void w(__global double *a) "
                                  "{ a[get_global_id(0)] = 42; }").build()
    kern = cl.Kernel(prg, "w")
    for offset in (0, 8, 16):
        a = _offset_view(64, offset)
        buf = host_buffers.wrap(cpu, a, writable=True)
        kern(cpu.queue, (64,), None, buf.data).wait()
        if not (a == 42).all():
            pytest.skip(f"{cpu.name} copies host memory at offset {offset}: the path is "
                        "still correct (map/unmap), but not zero-copy")


def test_read_only_x_used_in_place(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    x = np.random.default_rng(2).random(60)
    x.flags.writeable = False
    y = M @ x
    assert M.last_transfers["x"] == IN
    assert_matches(y, A, x, np.float64)


@pytest.mark.parametrize("offset", [8, 16, 4])
def test_misaligned_views(cpu, offset):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    x = _offset_view(60, offset)  # offset 4: not even aligned to a float64
    x[:] = np.random.default_rng(3).random(60)
    y = _offset_view(90, offset)
    y[:] = 1.0
    out = M.matvec(x, y, beta=1.0)
    assert out is y
    assert_matches(y, A, np.array(x), np.float64, beta=1.0, y0=np.ones(90))
    expected = IN if offset % 8 == 0 else COPY
    assert M.last_transfers == {"x": expected, "y": expected}


def test_strided_and_non_contiguous_are_copied(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    rng = np.random.default_rng(4)
    big = rng.random(120)
    x = big[::2]
    y = np.zeros(180)[::2]
    M.matvec(x, y)
    assert M.last_transfers == {"x": COPY, "y": COPY}
    assert_matches(y, A, x, np.float64)
    X = rng.random((60, 6))[:, ::2]
    Y = M @ X
    assert M.last_transfers["x"] == COPY
    for j in range(3):
        assert_matches(Y[:, j], A, X[:, j], np.float64)
    Yv = np.zeros((90, 6))[:, ::2]
    M.matmat(X, Yv)
    assert M.last_transfers["y"] == COPY
    for j in range(3):
        assert_matches(Yv[:, j], A, X[:, j], np.float64)


def test_other_dtype_x_copied_y_refused(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu, dtype=np.float32)
    x = np.random.default_rng(5).random(60)  # float64 into a float32 matrix
    y = M @ x
    assert M.last_transfers == {"x": COPY, "y": IN} and y.dtype == np.float32
    assert_matches(y, A, x, np.float32)
    with pytest.raises(TypeError, match="expected float32"):
        M.matvec(x, np.zeros(90))


def test_x_and_y_sharing_memory(cpu):
    A = sp.random(60, 60, density=0.2, format="csr", random_state=6)
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    v = np.random.default_rng(6).random(60)
    expected = A @ v
    M.matvec(v, v)
    assert M.last_transfers == {"x": COPY, "y": IN}
    np.testing.assert_allclose(v, expected, rtol=1e-12)


def test_block_product_keeps_other_rows(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    x = np.random.default_rng(7).random(60)
    y = np.full(100, 7.0)
    M.matvec(x, y, row_offset=5)
    assert M.last_transfers["y"] == IN
    assert (y[:5] == 7).all() and (y[95:] == 7).all()
    assert_matches(y[5:95], A, x, np.float64)


def test_new_outputs_reuse_memory_only_when_nothing_refers_to_it(cpu):
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    rng = np.random.default_rng(8)
    xs = [rng.random(60) for _ in range(4)]
    kept = M @ xs[0]
    view = (M @ xs[1])[3:]  # only a view of the second output is held
    for i in range(6):
        y = M @ xs[i % 4]
        assert_matches(y, A, xs[i % 4], np.float64)
    assert_matches(kept, A, xs[0], np.float64)
    assert_matches(view, A[3:], xs[1], np.float64)
    del kept, view, y
    first = M @ xs[2]
    address = first.ctypes.data
    del first
    again = M @ xs[3]  # the same memory, now that nothing refers to it
    assert again.ctypes.data == address
    assert_matches(again, A, xs[3], np.float64)


def test_new_outputs_start_at_the_device_alignment(cpu):
    """New outputs (pooled or not, vectors and column-major blocks, zeroed on request) start at
    a multiple of the device's buffer alignment, CL_DEVICE_MEM_BASE_ADDR_ALIGN in bytes."""
    align = host_buffers.buffer_alignment(cpu)
    assert align == max(64, cpu.cl_device.mem_base_addr_align // 8)
    pool = host_buffers.OutputPool()
    for shape, order, zeros, source in (((100,), "C", False, pool), ((7, 3), "F", True, None),
                                        ((33,), "C", True, pool)):
        a = host_buffers.aligned_empty(shape, np.float32, order, cpu, zeros=zeros, pool=source)
        assert a.shape == shape and a.dtype == np.float32 and a.ctypes.data % align == 0
        assert a.flags.f_contiguous if order == "F" else a.flags.c_contiguous
        assert not zeros or not a.any()
    y = clspmv.DeviceMatrix.from_scipy(_matrix(), device=cpu) @ np.ones(60)
    assert y.ctypes.data % align == 0


def test_x_written_in_place_between_products(cpu):
    """Nothing is cached between products: new values written into x are read, and the given y
    is updated in place."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    x = np.random.default_rng(9).random(60)
    y = np.zeros(90)
    M.matvec(x, y)
    first = A @ x
    x *= -2.0
    x[7] = 5.0
    out = M.matvec(x, y, beta=0.5)
    assert out is y and M.last_transfers == {"x": IN, "y": IN}
    assert_matches(y, A, x, np.float64, beta=0.5, y0=first)


def test_map_path_where_the_device_keeps_a_copy(cpu, monkeypatch):
    """A device whose USE_HOST_PTR buffers are not the arrays' memory (shares_host_pointer
    False) takes the map/unmap path: same results."""
    monkeypatch.setattr(type(cpu), "shares_host_pointer", property(lambda self: False))
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    x = np.random.default_rng(10).random(60)
    assert_matches(M @ x, A, x, np.float64)
    y = np.ones(90)
    M.matvec(x, y, beta=2.0)
    assert M.last_transfers == {"x": IN, "y": IN}
    assert_matches(y, A, x, np.float64, beta=2.0, y0=np.ones(90))


def test_inputs_declared_read_only_only_where_numpy_says_so(cpu):
    """A writable x gets a read-write buffer (Intel's CPU runtime copies a read-only one at its
    creation unless it is 128-byte aligned), a read-only x a read-only one; neither is written:
    x is unchanged after the product."""
    x = np.random.default_rng(13).random(60)
    assert host_buffers.wrap(cpu, x, writable=False).data.get_info(
        cl.mem_info.FLAGS) & cl.mem_flags.READ_WRITE
    frozen = x.copy()
    frozen.flags.writeable = False
    assert host_buffers.wrap(cpu, frozen, writable=False).data.get_info(
        cl.mem_info.FLAGS) & cl.mem_flags.READ_ONLY
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, device=cpu)
    kept = x.copy()
    assert_matches(M @ x, A, kept, np.float64)
    assert M.last_transfers["x"] == IN and (x == kept).all()


def test_shares_host_pointer_probe(cpu):
    """The probe's answer agrees with what a kernel does to an array 8 bytes past a 128-byte
    boundary."""
    prg = cl.Program(cpu.context, "__kernel void w(__global double *a) "
                                  "{ a[get_global_id(0)] = 42; }").build()
    a = _offset_view(64, 8)
    buf = host_buffers.wrap(cpu, a, writable=True)
    cl.Kernel(prg, "w")(cpu.queue, (64,), None, buf.data).wait()
    assert cpu.shares_host_pointer == bool((a == 42).all())


def _uses_host_pointer(buf: cl.Buffer) -> bool:
    return bool(buf.get_info(cl.mem_info.FLAGS) & cl.mem_flags.USE_HOST_PTR)


@pytest.mark.parametrize("fmt", ["csr-scalar", "hyb", "sell", "dia"])
def test_matrix_arrays_used_in_place_by_from_scipy(device, fmt):
    """from_scipy's conversion is of its own canonical copy, so on a device that uses host
    pointers in place its buffers are made on the format's arrays (no copy); elsewhere copies.
    Either way a change to the caller's matrix afterwards does not reach the device matrix."""
    A = sp.diags([1.0, -2.0, 3.0], [-1, 0, 2], shape=(120, 120), format="csr")
    M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
    x = np.linspace(-1, 1, 120)
    in_place = device.shares_host_pointer
    arrays = [b for k, b in M._fmt.buffers.items() if k in M._fmt._specs and b.size > 8]
    assert arrays and all(_uses_host_pointer(b) == in_place for b in arrays)  # not scratch;
    # an empty array's one-element stand-in is always a copy
    A.data *= 5.0
    assert_matches(M @ x, A / 5.0, x, np.float64)
    assert_matches(M.rmatvec(x), (A / 5.0).T.tocsr(), x, np.float64)


def test_convert_without_owned_copies(device):
    """convert()'s default: the caller may keep using its CSR arrays, so the upload copies them,
    and a later change to them does not reach the device; owned=True hands them over (in place
    where the device shares host memory)."""
    from clspmv.canonical import canonical_csr
    from clspmv.formats import FORMAT_CLASSES, convert
    from clspmv.precision import resolve

    csr = canonical_csr(_matrix(), np.float64)
    layout = FORMAT_CLASSES["csr-scalar"].layout_for(device)
    precision = resolve(np.float64, np.float64)
    fmt = convert(csr, "csr-scalar", layout, precision)
    fmt.upload(device)
    assert not any(_uses_host_pointer(b) for b in fmt.buffers.values())
    owned = convert(csr.copy(), "csr-scalar", layout, precision, owned=True)
    owned.upload(device)
    assert _uses_host_pointer(owned.buffers["val"]) == device.shares_host_pointer
    expected = _matrix()
    csr.data[:] = 0.0
    M = clspmv.DeviceMatrix(fmt, device)
    x = np.random.default_rng(2).random(60)
    assert_matches(M @ x, expected, x, np.float64)


def test_interrupted_product_drains_the_queue_first(device, drained, monkeypatch):
    """Ctrl-C in a product's wait (any device, the general path): the queue is drained before
    the product's buffers on numpy memory go, the interrupt reaches the caller, and the
    matrix's next product is right."""
    A = _matrix()
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    x, y0 = np.random.default_rng(8).random(60), np.random.default_rng(9).random(90)

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(clspmv.arguments.Operands, "result", interrupted)
    with pytest.raises(KeyboardInterrupt):
        M.matvec(x, y0.copy(), alpha=2.0, beta=0.5)
    assert drained == [device.queue]
    monkeypatch.undo()
    y = y0.copy()
    assert_matches(M.matvec(x, y, alpha=2.0, beta=0.5), A, x, np.float64, alpha=2.0, beta=0.5,
                   y0=y0)
