"""A CSR kernel's copy of the caller's indices and values started before the checks and the
metadata (``clspmv.early_upload``): the buffers it makes are the ones the matrix uses, the
product is scipy's, and where the copy cannot be used (A not canonical, a padded format, other
values) the conversion copies as before."""

from __future__ import annotations

import dataclasses

import numpy as np
import pyopencl as cl
import pytest
import scipy.sparse as sp
from test_canonical_given import canonical_random

import clspmv
from clspmv import early_upload
from clspmv.early_upload import EarlyUpload, of_given_csr

from oracle import assert_matches


@pytest.fixture
def uploading_device(device: clspmv.Device, monkeypatch: pytest.MonkeyPatch) -> clspmv.Device:
    """``device`` as if it were a GPU keeping no host memory: from_scipy copies A to it."""
    if device.is_simulator:
        pytest.skip("the early copy never runs on the simulator (not thread-safe)")
    monkeypatch.setattr(type(device), "shares_host_pointer", property(lambda self: False))
    return dataclasses.replace(device, type="gpu")


@pytest.fixture
def taken(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, bool]]:
    """Each :meth:`EarlyUpload.take`: the array's bytes and whether a buffer was handed over."""
    calls: list[tuple[int, bool]] = []
    take = EarlyUpload.take

    def recording(self: EarlyUpload, a: np.ndarray):
        buf = take(self, a)
        calls.append((a.nbytes, buf is not None))
        return buf

    monkeypatch.setattr(EarlyUpload, "take", recording)
    return calls


def read(device: clspmv.Device, buf: cl.Buffer, like: np.ndarray) -> np.ndarray:
    """The values of ``buf``, of ``like``'s shape and type."""
    out = np.empty_like(like)
    cl.enqueue_copy(device.queue, out, buf)
    return out


def test_the_buffers_hold_the_arrays_and_views_of_them_find_them(uploading_device) -> None:
    a = np.arange(1000, dtype=np.int32)
    b = np.linspace(0.0, 1.0, 300)
    early = EarlyUpload.start(uploading_device, [a, b])
    assert early is not None
    assert early.take(np.arange(1000, dtype=np.int32)) is None  # equal, elsewhere: not it
    assert early.take(a[:10]) is None  # part of it: not it
    buf = early.take(a.view())  # a view of the same bytes, as scipy makes
    np.testing.assert_array_equal(read(uploading_device, buf, a), a)
    assert early.take(a) is None  # handed over once
    np.testing.assert_array_equal(read(uploading_device, early.take(b), b), b)
    early.close()


def test_nothing_starts_on_a_cpu_device_nor_the_simulator(device) -> None:
    if device.type == "gpu" and not device.is_simulator:
        pytest.skip("a GPU")
    assert EarlyUpload.start(device, [np.ones(10)]) is None


def test_nothing_starts_beyond_half_the_device_memory(uploading_device) -> None:
    small = dataclasses.replace(uploading_device, global_memory=100, max_allocation=100)
    assert EarlyUpload.start(small, [np.ones(10)]) is None  # 80 of 100 bytes
    assert EarlyUpload.start(small, [np.ones(5), np.ones(3)]) is None  # 64 bytes together
    started = EarlyUpload.start(small, [np.ones(4), np.ones(2)])  # 48 bytes
    assert started is not None
    started.close()


def test_a_copy_the_driver_refuses_leaves_the_upload_to_the_conversion(uploading_device,
                                                                       monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise cl.MemoryError("clCreateBuffer", cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
                             "out of memory")

    monkeypatch.setattr(early_upload.cl, "Buffer", refuse)
    a = np.ones(10)
    early = EarlyUpload.start(uploading_device, [a])
    assert early is not None and early.take(a) is None


@pytest.mark.parametrize("format", ["csr-scalar", "csr-adaptive", "csr-merge", "csr"])
@pytest.mark.parametrize("given", ["csr", "csc", "csr_array"])
def test_from_scipy_takes_the_early_copies(uploading_device, taken, format, given) -> None:
    A = canonical_random(m=70, n=70)
    expected = A.copy()
    if given == "csc":
        A = sp.csc_matrix(A)  # stored as its transpose, a CSR matrix of the same arrays
        assert A.has_canonical_format
    elif given == "csr_array":
        A = sp.csr_array(A)
    x = np.linspace(-1.0, 1.0, 70)
    M = clspmv.DeviceMatrix.from_scipy(A, format=format, device=uploading_device)
    used = sorted(nbytes for nbytes, found in taken if found)
    assert used == sorted([A.indices.nbytes, A.data.nbytes])  # the row pointers: clspmv's
    A.data[:] = 9.0  # the copies were made during the call: nothing of A is read afterwards
    assert_matches(M @ x, expected, x, np.float64)


def test_a_matrix_that_is_not_canonical_is_copied_as_before(uploading_device, taken) -> None:
    A = canonical_random(m=40, n=40)
    expected = A.copy()
    A.indices[[0, 1]] = A.indices[[1, 0]]  # one row's columns out of order
    A.data[[0, 1]] = A.data[[1, 0]]
    A.has_sorted_indices = False
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=uploading_device)
    assert taken and not any(found for _, found in taken)
    x = np.linspace(-1.0, 1.0, 40)
    assert_matches(M @ x, expected, x, np.float64)


@pytest.mark.parametrize("format,options", [
    ("ell", {}), ("csr-aligned", {}), ("auto", {"trial": False}),
    ("csr", {"trial": True}), ("csr", {"expected_products": 1000}),  # a trial may time kernels
])
def test_formats_that_lay_out_anew_or_may_try_start_no_copy(uploading_device, monkeypatch,
                                                            format, options) -> None:
    started = []
    monkeypatch.setattr(EarlyUpload, "start", classmethod(
        lambda cls, device, arrays: started.append(arrays)))
    A = canonical_random(m=40, n=40)
    M = clspmv.DeviceMatrix.from_scipy(A, format=format, device=uploading_device, **options)
    assert started == []
    x = np.linspace(-1.0, 1.0, 40)
    assert_matches(M @ x, A, x, np.float64)


def test_other_values_or_wide_indices_start_no_copy(uploading_device) -> None:
    A = canonical_random(m=30, n=30)
    assert of_given_csr(A, "float32", uploading_device) is None  # values to round first
    wide = A.copy()
    wide.indices = wide.indices.astype(np.int64)
    assert of_given_csr(wide, None, uploading_device) is None
    assert of_given_csr(A.tocoo(), None, uploading_device) is None
    early = of_given_csr(A, None, uploading_device)
    assert early is not None
    early.close()
