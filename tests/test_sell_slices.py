"""SELL and pJDS with a work-item per slice (``slice_items``, clspmv.formats.sell): the C rows of
a slice summed side by side (a loop over lanes the compiler vectorises), padding slots masked by
each row's length."""

from __future__ import annotations

import dataclasses
import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv.cpu_layout import gathers_slices, pocl_version
from clspmv.formats import FORMAT_CLASSES
from clspmv.formats.layout import Layout
from clspmv.formats.sell import SLICE_VECTORS, SLICES_PER_GROUP, slices_by_default

from oracle import assert_matches, products_match


def uneven_matrix(rows: int = 3001, seed: int = 0) -> sp.csr_matrix:
    """Rows of lengths 0 to 40 in random order (every slice mixes lengths, a tenth of the rows
    are empty), columns over the whole width, and a last, partial slice on every C."""
    rng = np.random.default_rng(seed)
    lengths = np.where(rng.random(rows) < 0.1, 0, rng.integers(1, 41, rows))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    cols = rng.integers(0, rows, int(indptr[-1]))
    A = sp.csr_matrix((rng.uniform(-1, 1, cols.size), cols, indptr), shape=(rows, rows))
    A.sum_duplicates()
    return A


def slices_on(device: clspmv.Device) -> list[bool]:
    """The ``slice_items`` values the device takes: True only where C is a vector length."""
    c = FORMAT_CLASSES["sell"].layout_for(device).simd_width
    return [False, True] if c in SLICE_VECTORS else [False]


@pytest.mark.parametrize("fmt", ["pjds", "sell"])
def test_both_kernels_match_scipy(fmt: str, dtype: np.dtype, device: clspmv.Device) -> None:
    A = uneven_matrix().astype(dtype)
    for slices in slices_on(device):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, slice_items=slices)
        assert M.params["slice_items"] == int(slices)
        products_match(M, A, dtype)
        x = np.random.default_rng(4).uniform(-1, 1, A.shape[0]).astype(dtype)
        assert_matches(M.rmatvec(x), A.T.tocsr(), x, dtype)
        assert np.array_equal(M.to_scipy().toarray(), A.toarray())


@pytest.mark.parametrize("fmt", ["pjds", "sell"])
def test_padding_never_meets_x(fmt: str, device: clspmv.Device) -> None:
    """Padding slots hold column 0 and value 0: were they multiplied, an Inf or NaN in x[0] would
    turn every short row of a slice NaN. Only the rows that hold column 0 may see it."""
    A = uneven_matrix(seed=2)
    for slices in slices_on(device):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device, slice_items=slices)
        for bad in (np.inf, np.nan):
            x = np.random.default_rng(5).uniform(-1, 1, A.shape[1])
            x[0] = bad
            y = M @ x
            assert_matches(y, A, x, np.dtype(np.float64))
            touches = np.diff(A[:, 0].tocsr().indptr) > 0
            assert np.isfinite(y[~touches]).all(), (slices, bad)


def test_default_follows_the_layout(device: clspmv.Device) -> None:
    layout = FORMAT_CLASSES["pjds"].layout_for(device)
    M = clspmv.DeviceMatrix.from_scipy(uneven_matrix(), format="pjds", device=device)
    assert M.params["slice_items"] == int(slices_by_default(layout))
    pocl = Layout(simd_width=16, work_group_size=256, compute_units=2, local_memory=1 << 21,
                  gathers_slices=True)
    assert slices_by_default(pocl)
    assert not slices_by_default(dataclasses.replace(pocl, gathers_slices=False))  # PoCL 1.8
    assert not slices_by_default(dataclasses.replace(pocl, simd_width=32))        # lockstep
    assert not slices_by_default(dataclasses.replace(pocl, vectorises_work_items=True))
    assert not slices_by_default(dataclasses.replace(pocl, simd_width=1))         # no vector


DEBIAN_31 = ("OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF, "
             "DISTRO, POCL_DEBUG")
PYPI_30 = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG"


@pytest.mark.parametrize(("kind", "platform_version", "expected"), [
    ("cpu", DEBIAN_31, True), ("cpu", "OpenCL 3.0 PoCL 5.0+debian  Linux", True),
    ("cpu", PYPI_30, True), ("cpu", "OpenCL 1.2 PoCL 1.8  Linux", False),
    ("gpu", "OpenCL 3.0 PoCL 6.0  Linux, CUDA", False),
    ("cpu", "OpenCL 3.0 WINDOWS", False), ("cpu", "OpenCL 1.2 (Oclgrind 21.10)", False)])
def test_slices_gathered_from_pocl_30_on(kind: str, platform_version: str,
                                         expected: bool) -> None:
    assert gathers_slices(kind, platform_version) is expected


def test_pocl_version_from_the_platform() -> None:
    assert pocl_version(DEBIAN_31) == (3, 1) and pocl_version(PYPI_30) == (3, 0)
    assert pocl_version("OpenCL 3.0 WINDOWS") is None


def test_slices_need_a_vector_length() -> None:
    layout = Layout(simd_width=1, work_group_size=256, compute_units=1, local_memory=32768)
    with pytest.raises(ValueError, match=r"slice_items=True needs a slice height C of "
                                         r"2, 4, 8, 16 .*got C=1; use slice_items=False"):
        FORMAT_CLASSES["sell"].from_csr(uneven_matrix(), layout, slice_items=True)
    with pytest.raises(TypeError, match="slice_items must be True or False, got 'yes'"):
        FORMAT_CLASSES["pjds"].from_csr(uneven_matrix(), layout, slice_items="yes")


def test_pickled_matrix_keeps_its_kernel(device: clspmv.Device) -> None:
    A = uneven_matrix(seed=3)
    for slices in slices_on(device):
        M = clspmv.DeviceMatrix.from_scipy(A, format="sell", device=device, slice_items=slices)
        again = pickle.loads(pickle.dumps(M))
        assert again.params["slice_items"] == int(slices)
        products_match(again, A, np.dtype(np.float64))


@pytest.mark.parametrize("fmt", ["pjds", "sell"])
def test_each_slice_is_a_work_group_and_the_deal_weighs_rows(fmt: str) -> None:
    """The slice kernel runs a work-group per slice (SLICES_PER_GROUP), so PoCL's threads balance
    single slices; the deal still weighs runs of work-groups of the layout's rows (weighing
    single slices, this matrix would stay undealt)."""
    pocl = Layout(simd_width=16, work_group_size=256, compute_units=2, local_memory=1 << 21,
                  gathers_slices=True)
    rng = np.random.default_rng(8)
    # a third of the rows longer: sorted, their slices fill the first 1024 (the first 64
    # work-groups of 256 rows a thread takes, dealt), not the first 512 single slices
    lengths = np.where(rng.random(40000) < 0.32, 20, 4)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    A = sp.csr_matrix((np.ones(indptr[-1]), rng.integers(0, 40000, indptr[-1]), indptr),
                      shape=(40000, 40000))
    window = {} if fmt == "pjds" else {"sigma": 40000}  # every row sorted, as pJDS does
    M = FORMAT_CLASSES[fmt].from_csr(A, pocl, **window)
    assert M.params["slice_items"] == 1
    assert M.forward_kernel(A.shape[0]) == ("sell_spmv_slices", 2500, SLICES_PER_GROUP)
    assert SLICES_PER_GROUP == 1
    assert M.params["spread"] == 1
    rows = FORMAT_CLASSES[fmt].from_csr(A, pocl, slice_items=False)
    assert rows.forward_kernel(A.shape[0]) == ("sell_spmv", A.shape[0], None)
