"""``DeviceMatrix.from_scipy``'s ``format`` (:mod:`clspmv.format_choice`): ``format="csr"``
takes the CSR kernel of least predicted time through the selection ``format="auto"`` makes, and
the format parameters a format does not take are refused before any work, naming the valid
ones."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

import clspmv
from clspmv.format_choice import csr_kernels
from clspmv.formats import parameter_names
from clspmv.model import select, store


@pytest.fixture
def stored(device, tmp_path, monkeypatch):
    """The calibration fixture stored as ``device``'s, in a cache of this test's own."""
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    store.forget()
    cal = fixture_calibration(device)
    store.save(cal, device)
    yield cal
    store.forget()


# -- format="csr" ------------------------------------------------------------------------------
def test_csr_takes_the_best_predicted_csr_kernel(device, stored):
    """``format="csr"`` takes the least predicted CSR kernel of the same selection that auto
    makes, on a matrix where auto takes another family; the selection records why."""
    n = 3000
    banded = sp.diags_array([np.full(n - 1, -1.0), np.full(n, 2.0), np.full(n - 1, -1.0)],
                            offsets=[-1, 0, 1], format="csr")
    auto = clspmv.DeviceMatrix.from_scipy(banded, device=device, trial=False)
    M = clspmv.DeviceMatrix.from_scipy(banded, "csr", device=device, trial=False)
    full = select(banded, device, calibration_=stored, trial=False)
    accepted = [p for k, p in full.predictions.items() if k in csr_kernels() and not p.refused]
    best = min(accepted, key=lambda p: (p.kernel_s, p.format))
    assert auto.format not in csr_kernels()  # the case shows the restriction
    assert M.format == best.format == M.selection.format
    assert set(M.selection.predictions) == set(csr_kernels())
    assert [row["format"] for row in M.selection.table() if row["chosen"]] == [M.format]
    assert M.selection.why.startswith("format='csr', among " + ", ".join(csr_kernels()))
    assert "least predicted kernel time" in M.selection.why
    assert f"format={M.format!r} (csr)" in repr(M)
    x = np.linspace(-1, 1, n)
    np.testing.assert_allclose(M @ x, banded @ x, rtol=1e-12)
    named = clspmv.DeviceMatrix.from_scipy(banded, "csr-scalar", device=device)
    assert named.selection is None and "(csr)" not in repr(named)


def test_csr_trial_tries_csr_kernels_only(device, stored):
    if device.is_simulator:
        pytest.skip("no trial on a simulator")
    rng = np.random.default_rng(7)
    A = sp.csr_array(rng.uniform(-1, 1, (400, 400)) * (rng.uniform(size=(400, 400)) < 0.02))
    M = clspmv.DeviceMatrix.from_scipy(A, "csr", device=device, trial=True)
    assert M.format in csr_kernels() and M.selection.strips is None
    assert M.selection.trial_ms and set(M.selection.trial_ms) <= set(csr_kernels())
    assert M.selection.why.startswith("format='csr', among ")
    x = np.linspace(-1, 1, 400)
    np.testing.assert_allclose(M @ x, A @ x, rtol=1e-12)


# -- arguments from_scipy refuses ------------------------------------------------------------
@pytest.mark.parametrize("fmt", clspmv.FORMATS)
def test_unknown_parameter_lists_the_formats_own(device, fmt):
    """Named before anything is converted: the complex matrix, refused later, is not looked at."""
    names = parameter_names(fmt)
    with pytest.raises(TypeError) as err:
        clspmv.DeviceMatrix.from_scipy(sp.eye_array(4, dtype=complex), format=fmt,
                                       device=device, bogus=1)
    assert str(err.value) == (
        f"format '{fmt}' got an unexpected keyword argument 'bogus'; its parameters: "
        f"{', '.join(names)} (and from_scipy's own: {OWN})")


OWN = "device, dtype, work_group_size, column_map, n_cols, expected_products, trial"
"""from_scipy's keyword arguments besides the format's parameters."""


@pytest.mark.parametrize("chosen", ["auto", "csr"])
def test_chosen_formats_take_no_format_parameters(device, chosen):
    owners = ", ".join(f for f in clspmv.FORMATS if "unroll" in parameter_names(f))
    with pytest.raises(ValueError) as err:
        clspmv.DeviceMatrix.from_scipy(sp.eye_array(4), format=chosen, device=device,
                                       bogus=1, unroll=2)
    assert str(err.value) == (
        f"format parameters (bogus, unroll) belong to a named format; format='{chosen}' takes "
        f"none ('bogus' is a parameter of no format; 'unroll' is a parameter of {owners}): "
        f"name the format (format=...) or leave them out (from_scipy's own: {OWN})")
    with pytest.raises(ValueError, match=r"unknown format 'CSR'; choose one of coo, .*, 'csr' "
                                         r"\(the fastest predicted CSR kernel\) or 'auto'"):
        clspmv.DeviceMatrix.from_scipy(sp.eye_array(4), format="CSR", device=device)
