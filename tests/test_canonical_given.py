"""A CSR matrix the caller gives in canonical form already (issue 42): ``canonical_csr`` checks
its order afresh in pieces over threads and copies only what it must; ``from_scipy`` copies the
caller's arrays once, on the device, and keeps no reference to them; the diagonal is read back
when asked, not computed at the conversion."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import canonical

from oracle import assert_matches


def canonical_random(m: int = 60, n: int = 50, seed: int = 4, empty_rows: bool = True,
                     container: type = sp.csr_matrix) -> sp.csr_matrix:
    """A canonical float64 CSR matrix with int32 indices, some rows empty, explicit zeros."""
    A = sp.random(m, n, density=0.2, format="csr", random_state=seed)
    if empty_rows:
        keep = np.ones(m)
        keep[5:9] = 0
        A = sp.csr_matrix(sp.diags(keep) @ A)
        A.eliminate_zeros()
        A.sort_indices()  # scipy's product leaves them unsorted
    A.data[::7] = 0.0  # explicit zeros, kept
    return container(A)


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few entries: the threaded path on test-sized matrices."""
    monkeypatch.setattr(canonical, "PIECE_ENTRIES", 8)


def assert_same_matrix(csr: sp.csr_matrix, A: sp.csr_matrix, dtype: type = np.float64) -> None:
    """``csr`` is canonical, of 32-bit indices and ``dtype``, with A's entries."""
    assert isinstance(csr, sp.csr_matrix)
    assert csr.indptr.dtype == csr.indices.dtype == np.int32 and csr.dtype == dtype
    reference = sp.csr_matrix(A, dtype=np.float64, copy=True)
    reference.sum_duplicates()
    np.testing.assert_array_equal(csr.indptr, reference.indptr)
    np.testing.assert_array_equal(csr.indices, reference.indices)
    np.testing.assert_array_equal(csr.data, reference.data.astype(dtype))


@pytest.mark.parametrize("pieces", [False, True])
def test_no_copy_shares_indices_and_data_not_indptr(pieces: bool, request) -> None:
    if pieces:
        request.getfixturevalue("small_pieces")
    A = canonical_random()
    csr = canonical.canonical_csr(A, copy=False)
    assert_same_matrix(csr, A)
    assert np.shares_memory(csr.indices, A.indices) and np.shares_memory(csr.data, A.data)
    assert not np.shares_memory(csr.indptr, A.indptr)  # the CSR kernels keep it on the host
    assert csr.has_canonical_format


@pytest.mark.parametrize("pieces", [False, True])
def test_copy_shares_nothing(pieces: bool, request) -> None:
    if pieces:
        request.getfixturevalue("small_pieces")
    A = canonical_random(container=sp.csr_array)
    csr = canonical.canonical_csr(A)
    assert_same_matrix(csr, A)
    for mine, theirs in ((csr.indptr, A.indptr), (csr.indices, A.indices), (csr.data, A.data)):
        assert not np.shares_memory(mine, theirs)


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("copy", [False, True])
def test_wide_indices_and_other_values_are_converted(copy: bool) -> None:
    """int64 index arrays (scipy's for large matrices) become int32; float32 values become the
    dtype asked for; only those arrays are new."""
    A = canonical_random()
    B = sp.csr_array(A)
    B.indices, B.indptr = A.indices.astype(np.int64), A.indptr.astype(np.int64)
    csr = canonical.canonical_csr(B, copy=copy)
    assert_same_matrix(csr, A)
    assert np.shares_memory(csr.data, B.data) != copy
    C = sp.csr_matrix(A, dtype=np.float32)
    assert_same_matrix(canonical.canonical_csr(C, dtype=np.float64, copy=copy), C)
    assert_same_matrix(canonical.canonical_csr(A, dtype=np.float32, copy=copy), A, np.float32)


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("change", ["unsorted", "duplicate"])
def test_scipy_flags_are_not_trusted(change: str) -> None:
    """Arrays changed after scipy found them canonical (its flag stays set) are sorted and
    summed all the same, in any piece."""
    A = canonical_random(empty_rows=False)
    assert A.has_canonical_format
    row = A.shape[0] - 3  # in a late piece
    first = A.indptr[row]
    if change == "unsorted":
        A.indices[first], A.indices[first + 1] = A.indices[first + 1], A.indices[first]
    else:
        A.indices[first + 1] = A.indices[first]
    assert A.has_canonical_format  # scipy's cached flag: stale
    fresh = sp.csr_matrix((A.data.copy(), A.indices.copy(), A.indptr.copy()), shape=A.shape)
    assert not fresh.has_canonical_format
    csr = canonical.canonical_csr(A, copy=False)
    assert_same_matrix(csr, fresh)
    assert csr.nnz == A.nnz - (change == "duplicate")
    assert not np.shares_memory(csr.indices, A.indices)


@pytest.mark.usefixtures("small_pieces")
def test_corrupt_arrays_are_refused_before_the_pieces() -> None:
    A = canonical_random(empty_rows=False)
    A.indices[-1] = -1
    with pytest.raises(ValueError, match=r"A.indices holds -1, outside 0..49"):
        canonical.canonical_csr(A, copy=False)
    A = canonical_random(empty_rows=False)
    A.indptr[30] = A.indptr[31] + 1
    with pytest.raises(ValueError, match=r"A.indptr decreases from \d+ to \d+ at row 30"):
        canonical.canonical_csr(A, copy=False)
    C = canonical_random(empty_rows=False).tocoo()
    C.row[-5] = 60
    with pytest.raises(ValueError, match=r"A.row holds 60, outside 0..59"):
        canonical.canonical_csr(C)
    C.row[-5] = -2
    with pytest.raises(ValueError, match=r"A.row holds -2, outside 0..59"):
        canonical.canonical_csr(C)


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("shape", [(0, 5), (4, 0), (3, 3)])
def test_empty_matrices(shape: tuple[int, int]) -> None:
    A = sp.csr_matrix(shape)
    csr = canonical.canonical_csr(A, copy=False)
    assert csr.shape == shape and csr.nnz == 0
    np.testing.assert_array_equal(csr.indptr, np.zeros(shape[0] + 1))


@pytest.fixture
def uploading_device(device: clspmv.Device, monkeypatch: pytest.MonkeyPatch) -> clspmv.Device:
    """``device`` as if it kept no host memory (a GPU): from_scipy then does not copy A."""
    monkeypatch.setattr(type(device), "shares_host_pointer", property(lambda self: False))
    return device


@pytest.mark.usefixtures("small_pieces")
@pytest.mark.parametrize("format", ["csr-vector", "csr-merge", "ell"])
def test_from_scipy_keeps_no_reference_to_the_callers_arrays(uploading_device, format) -> None:
    A = canonical_random(m=50, n=50)
    expected = A.copy()
    x = np.linspace(-1.0, 1.0, 50)
    M = clspmv.DeviceMatrix.from_scipy(A, format=format, device=uploading_device)
    A.data[:] = 7.0
    A.indices[:] = 0
    A.indptr[:] = 0
    assert_matches(M @ x, expected, x, np.float64)
    if format != "ell":  # a switch builds metadata from the row pointers kept on the host
        assert_matches(M.retuned(format="csr-adaptive") @ x, expected, x, np.float64)
    np.testing.assert_array_equal(M.diagonal(), expected.diagonal())
    np.testing.assert_array_equal(M.to_scipy().toarray(), expected.toarray())
    assert M.nnz == expected.nnz


@pytest.mark.parametrize("format", ["csr-scalar", "csr-adaptive", "ell", "dia"])
@pytest.mark.parametrize("given", ["csr", "csc", "coo"])
def test_the_diagonal_is_read_back_when_asked(device, format: str, given: str) -> None:
    A = canonical_random(m=40, n=40).asformat(given)
    M = clspmv.DeviceMatrix.from_scipy(A, format=format, device=device)
    assert M._diagonal is None  # nothing computed at the conversion
    np.testing.assert_array_equal(M.diagonal(), A.diagonal())
    diagonal = M.diagonal()
    diagonal[:] = 5.0  # a copy
    np.testing.assert_array_equal(M.diagonal(), A.diagonal())
    assert M.trace() == pytest.approx(A.trace())
    wide = sp.csr_matrix(canonical_random(m=30, n=45))
    np.testing.assert_array_equal(
        clspmv.DeviceMatrix.from_scipy(wide, format=format, device=device).diagonal(),
        wide.diagonal())


def test_the_diagonal_of_a_mixed_matrix_is_float32(device) -> None:
    if not device.fp64:
        pytest.skip("mixed precision needs fp64")
    A = canonical_random(m=40, n=40)
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype="mixed")
    assert M.diagonal().dtype == np.float32
    np.testing.assert_array_equal(M.diagonal(), A.diagonal().astype(np.float32))
