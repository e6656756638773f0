"""Unpickling a device matrix checks its CSR arrays once (issue 46 review): in
``matrix_state.check_state``, not again in ``canonical_csr``; a damaged state is still refused
there, and copies made by clspmv itself are not checked at all."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import canonical, matrix_state

from oracle import assert_matches

A = sp.random(40, 30, density=0.2, format="csr", random_state=3)
X = np.linspace(-1.0, 1.0, 30)


@pytest.fixture
def checks(monkeypatch) -> list[str]:
    """The CSR checks run, by who ran them (``check_state`` or ``canonical_csr``)."""
    calls: list[str] = []
    real = canonical.check_compressed

    def counted(indptr, indices, entries, dims, what):
        calls.append(what)
        return real(indptr, indices, entries, dims, what)

    monkeypatch.setattr(canonical, "check_compressed", counted)
    monkeypatch.setattr(matrix_state, "check_compressed", counted)
    return calls


def test_unpickling_checks_the_arrays_once(device, checks) -> None:
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype=np.float64)
    data = pickle.dumps(M)
    checks.clear()
    N = pickle.loads(data)
    assert checks == ["state"]  # check_state's; canonical_csr did not check them again
    assert_matches(N @ X, A, X, np.float64)
    checks.clear()
    assert_matches(M.copy() @ X, A, X, np.float64)  # clspmv's own state: trusted
    assert checks == []


def test_a_damaged_state_is_still_refused(device, checks) -> None:
    M = clspmv.DeviceMatrix.from_scipy(A, format="csr-vector", device=device, dtype=np.float64)
    restore, (cls, state) = M.__reduce__()
    state = dict(state, indices=state["indices"] + 30)
    checks.clear()
    with pytest.raises(clspmv.StoredMatrixError, match=r"the stored device matrix is damaged: "
                                                       r"state.indices holds \d+, outside 0..29"):
        restore(cls, state)
    assert checks == ["state"]


def test_canonical_csr_checks_unless_told(checks) -> None:
    """From the user's matrices canonical_csr checks (a corrupt one is refused), ``checked=True``
    skips it."""
    canonical.canonical_csr(A)
    assert checks == ["A"]
    checks.clear()
    canonical.canonical_csr(A, checked=True)
    assert checks == []
    bad = A.copy()
    bad.indices[0] = 99
    with pytest.raises(ValueError, match=r"A.indices holds 99, outside 0..29"):
        canonical.canonical_csr(bad)
