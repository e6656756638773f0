"""Which calibration the store takes and measures (clspmv.model.store): the quick one on first
use, the full one when asked, a stored full one always over a quick one."""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import replace

import pytest
from calibration_fixture import fixture_calibration

import clspmv
from clspmv.errors import ClspmvWarning
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.calibrate import MEASUREMENT
from clspmv.model.quick import QUICK_MEASUREMENT
from clspmv.model.timemodel import Calibration, quick_default

store = importlib.import_module("clspmv.model.store")


def _stand_in(device, kind: str) -> Calibration:
    cal = quick_default(device.name, device.driver_version, clspmv.__version__, device.type,
                        SINGLE_FORMATS, device.cache_bytes)
    cal.kind = kind
    cal.measurement = MEASUREMENT if kind == "measured" else QUICK_MEASUREMENT
    return cal


@pytest.fixture
def measured(monkeypatch) -> list[str]:
    """Both measurements replaced by stand-ins; the kinds measured, in order."""
    runs: list[str] = []

    def full(device, progress=True):
        runs.append("measured")
        return _stand_in(device, "measured")

    def quick(device, progress=True):
        runs.append("quick")
        return _stand_in(device, "quick")

    monkeypatch.setattr(store, "calibrate", full)
    monkeypatch.setattr(store, "quick_calibrate", quick)
    return runs


def _stored_kind(device) -> str:
    return json.loads(store.calibration_path(device).read_text())["kind"]


def test_first_use_measures_and_stores_the_quick_one(measured_device, first_use_cache, measured,
                                                     caplog) -> None:
    with caplog.at_level(logging.INFO, logger="clspmv.model.store"):
        cal = store.calibration(measured_device, progress=False)
    assert cal.kind == "quick" and measured == ["quick"]
    assert _stored_kind(measured_device) == "quick"
    assert "measuring a quick calibration" in caplog.text and "seconds" in caplog.text
    store.forget()
    assert store.calibration(measured_device).kind == "quick" and measured == ["quick"]


@pytest.mark.parametrize("ask", ["argument", "full", "1", "force"])
def test_the_full_one_replaces_a_stored_quick_one_when_asked(measured_device,
                                                             first_use_cache, measured,
                                                             monkeypatch, ask) -> None:
    """full=True, CLSPMV_CALIBRATE=full (or 1, what measured on first use before) and force
    measure the full calibration where a quick one is stored; it replaces the file."""
    store.calibration(measured_device, progress=False)
    if ask in ("full", "1"):
        monkeypatch.setenv("CLSPMV_CALIBRATE", ask)
    cal = store.calibration(measured_device, progress=False,
                            full=True if ask == "argument" else None,
                            force=ask == "force")
    assert cal.kind == "measured" and measured == ["quick", "measured"]
    assert _stored_kind(measured_device) == "measured"
    store.forget()
    monkeypatch.delenv("CLSPMV_CALIBRATE", raising=False)
    assert store.calibration(measured_device).kind == "measured" and len(measured) == 2


def test_a_stored_full_one_is_always_taken(measured_device,
                                           first_use_cache, measured, monkeypatch) -> None:
    """A stored full calibration serves every caller, quick or full, and a forced quick one
    does not replace its file (it serves this process only)."""
    store.save(fixture_calibration(measured_device), measured_device)
    store.forget()
    for env in (None, "quick", "full", "1"):
        if env is None:
            monkeypatch.delenv("CLSPMV_CALIBRATE", raising=False)
        else:
            monkeypatch.setenv("CLSPMV_CALIBRATE", env)
        assert store.calibration(measured_device, progress=False).kind == "measured"
    assert measured == []
    cal = store.calibration(measured_device, progress=False, force=True, full=False)
    assert cal.kind == "quick" and measured == ["quick"]
    assert _stored_kind(measured_device) == "measured"


def test_nothing_is_measured_with_calibrate_0(measured_device, first_use_cache, measured,
                                              monkeypatch) -> None:
    monkeypatch.setenv("CLSPMV_CALIBRATE", "0")
    assert store.calibration(measured_device).kind == "quick-default" and measured == []
    store.save(_stand_in(measured_device, "quick"), measured_device)
    store.forget()
    assert store.calibration(measured_device).kind == "quick" and measured == []  # still read


def test_a_quick_one_of_another_prior_is_measured_again(measured_device,
                                                        first_use_cache, measured) -> None:
    store.save(replace(_stand_in(measured_device, "quick"), measurement=QUICK_MEASUREMENT + 1),
               measured_device)
    store.forget()
    with pytest.warns(ClspmvWarning, match=r"other kernels, timing or prior \(quick measurement"):
        assert store.calibration(measured_device, progress=False).kind == "quick"
    assert measured == ["quick"] and store.load(measured_device).measurement == QUICK_MEASUREMENT


def test_doctor_names_the_kind_and_the_full_calibration(measured_device,
                                                        first_use_cache, measured) -> None:
    (finding,) = store.calibration_findings([measured_device])
    assert "the first format='auto' measures a quick one (seconds)" in finding["detail"]
    store.calibration(measured_device, progress=False)
    (finding,) = store.calibration_findings([measured_device])
    assert finding["detail"].startswith("quick, stored in ")
    assert "clspmv calibrate measures the full one" in finding["detail"]
    assert finding["fix"].startswith("clspmv calibrate --device ")
