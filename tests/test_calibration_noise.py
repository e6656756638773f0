"""The full calibration's check for noise (clspmv.model.calibrate): a reference product timed
between its matrices; the matrices timed while it ran slow are timed again, and flagged with one
warning where it stayed slow."""

from __future__ import annotations

import importlib
import json
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

from clspmv import bandwidth
from clspmv.errors import ClspmvWarning
from clspmv.model.probes import MEASURE_PASSES, XCacheProbe

calibrate_mod = importlib.import_module("clspmv.model.calibrate")
quick = importlib.import_module("clspmv.model.quick")
store = importlib.import_module("clspmv.model.store")

MATRICES = ("launch", "banded", "random")


@pytest.fixture
def small(device, tmp_path, monkeypatch):
    """``device`` with the full calibration cut down to three small matrices in csr-scalar and
    stand-ins for its probes (x cache, ELL order, bandwidth); the sentinel's slow-downs to
    script: a list of factors, one per reference timing (1 after its end), and the matrices
    timed in order."""
    if device.is_simulator:
        pytest.skip("nothing is measured on a simulator")
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    rng = np.random.default_rng(1)
    mats = {"launch": sp.random(64, 64, density=0.1, format="csr", random_state=rng),
            "banded": sp.diags([1.0, 2.0, 3.0], [-1, 0, 1], shape=(2000, 2000), format="csr"),
            "random": sp.random(2000, 2000, density=4e-3, format="csr", random_state=rng)}
    monkeypatch.setattr(calibrate_mod, "benchmark_matrices", lambda facts: dict(mats))
    probe = XCacheProbe([1 << 20, 1 << 21], [1e-4, 2e-4], 1000.0)
    monkeypatch.setattr(calibrate_mod, "probe_x_cache", lambda *a, **k: probe)
    monkeypatch.setattr(calibrate_mod, "store_ell_order",
                        lambda *a, **k: SimpleNamespace(row_major_width=10,
                                                        scattered_row_major_width=10))
    monkeypatch.setattr(bandwidth, "copy_rate", lambda *a, **k: 1e10)
    monkeypatch.setattr(quick, "PROBE_ROWS", 4096)  # the sentinel's band
    script = SimpleNamespace(factors=[], timed=[])
    real = calibrate_mod.kernel_times

    def scripted(formats, x, y, repeat, run=None):
        got = real(formats, x, y, 2, run)
        if "sentinel" in formats:  # the reference's times, injected
            return {k: 1e-3 * (script.factors.pop(0) if script.factors else 1.0) for k in got}
        script.timed.append(len(y))
        return got
    monkeypatch.setattr(calibrate_mod, "kernel_times", scripted)
    return device, script


def test_matrices_timed_while_the_reference_ran_slow_are_timed_again(small) -> None:
    """The reference product three times slower around the second matrix (between the second
    and third reference timings): the second and third matrices (whose timings it brackets)
    timed again; agreeing then, nothing is flagged and nothing is warned."""
    device, script = small
    script.factors = [1.0, 1.0, 3.0, 1.0]
    meas = calibrate_mod.measure(device, progress=False, formats=("csr-scalar",))
    rows = {k: m.shape[0] for k, m in calibrate_mod.benchmark_matrices(None).items()}
    assert script.timed == [rows[k] for k in MATRICES] + [rows["banded"], rows["random"]]
    assert meas.noisy == [] and len(meas.sentinel_s) == 4 + 3
    assert {k for k, _ in meas.kernel_s} == set(MATRICES)


def test_a_calibration_that_stays_noisy_is_flagged_with_one_warning(small) -> None:
    """The reference product slow after every matrix of every pass: MEASURE_PASSES timings,
    then the calibration stored with its noisy matrices and one ClspmvWarning."""
    device, script = small
    script.factors = [1.0] + [4.0] * 100
    with pytest.warns(ClspmvWarning, match="measured noise: a reference product ran up to") as got:
        cal = calibrate_mod.calibrate(device, progress=False, formats=("csr-scalar",))
    assert len(got) == 1 and "clspmv calibrate --force" in str(got[0].message)
    assert len(script.timed) == len(MATRICES) * MEASURE_PASSES
    assert cal.measurements["noisy"] == list(MATRICES)
    assert store.noisy(cal) == list(MATRICES)
    store.save(cal, device)  # its file's shape checked as it is written and read back
    data = json.loads(store.calibration_path(device).read_text())
    store.CALIBRATION_FILE(data, "")
    assert data["measurements"]["noisy"] == list(MATRICES)
