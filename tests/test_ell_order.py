"""The ELL order measured per device (:mod:`clspmv.ell_order`, :mod:`clspmv.model.order_probe`):
the rule from the probe's times, the stored width in the layouts and conversions, an unusable
file (damaged in each way the file's check names), and a calibration timed with another order
measured again."""

from __future__ import annotations

import importlib
import json
import logging
from dataclasses import replace

import numpy as np
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

import clspmv
from clspmv import ell_order
from clspmv.ell_order import MEASURED_WIDTHS, ROW_MAJOR_WIDTH, EllOrder, row_major_width_from
from clspmv.errors import ClspmvWarning
from clspmv.formats import FORMAT_CLASSES, Layout, convert
from clspmv.model import order_probe
from clspmv.model.order_probe import measure_ell_order, probe_matrix
from clspmv.precision import resolve

from oracle import assert_matches

store = importlib.import_module("clspmv.model.store")


def order_from(width: int) -> EllOrder:
    """A complete measured order (every :data:`MEASURED_WIDTHS` width) that is row-major from
    ``width`` slots: column-major faster below it, row-major twice as fast from it."""
    return EllOrder({w: (1.0, 1.2) if w < width else (1.0, 0.5) for w in MEASURED_WIDTHS})



@pytest.fixture(autouse=True)
def info_logged(caplog) -> None:
    """The library's INFO notes recorded (where the CLI would print them)."""
    caplog.set_level(logging.INFO, logger="clspmv")


def said(caplog) -> str:
    """What the library logged at INFO or above since the last call (then forgotten)."""
    text = "\n".join(r.getMessage() for r in caplog.records if r.levelno >= logging.INFO)
    caplog.clear()
    return text

@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty cache of this test's own; the stored order forgotten before and after."""
    monkeypatch.setenv("CLSPMV_CACHE_DIR", str(tmp_path))
    ell_order._memory.clear()
    store.forget()
    yield tmp_path
    ell_order._memory.clear()
    store.forget()


@pytest.mark.parametrize(("times", "width"), [
    ({4: (1.0, 0.5), 8: (1.0, 0.5), 16: (1.0, 0.5)}, 4),       # row-major wins everywhere
    ({4: (1.0, 1.2), 8: (1.0, 0.6), 16: (1.0, 0.5)}, 8),       # column-major on the narrowest
    ({4: (1.0, 0.5), 8: (1.0, 1.1), 16: (1.0, 0.5)}, 4),       # one slow width among wins
    ({4: (1.0, 0.85), 8: (1.0, 2.0), 16: (1.0, 0.5)}, 16),     # a loss that outweighs below
    ({4: (1.0, 0.5), 8: (1.0, 0.5), 16: (1.0, 1.5)}, 4),       # the widest loses, less
    ({4: (1.0, 1.2), 8: (1.0, 1.2), 16: (1.0, 1.5)}, 32),      # never faster: beyond
    ({4: (1.0, 0.88), 8: (1.0, 0.95), 16: (1.0, 0.89)}, 16),   # near ties keep column-major
    ({4: (1.0, 0.9)}, 8),                                      # a tie at the margin too
])
def test_width_from_the_probe_times(times, width) -> None:
    assert row_major_width_from(times) == width
    assert EllOrder(times).to_json()["row_major_width"] == width


def test_probe_matrix_rows() -> None:
    A = probe_matrix(6, rows=1000, spread=100)
    assert A.shape == (1000, 1000) and np.all(np.diff(A.indptr) == 6)
    rows = np.repeat(np.arange(1000), 6)
    distance = np.minimum((A.indices - rows) % 1000, (rows - A.indices) % 1000)
    assert distance.max() == 50 and len(set(zip(rows, A.indices, strict=True))) == A.nnz


def test_measure_times_both_orders_at_every_width(device, cache) -> None:
    order = measure_ell_order(device, resolve(np.float32, np.float64), rows=512)
    assert sorted(order.times) == list(MEASURED_WIDTHS)
    assert all(c > 0 and r > 0 for c, r in order.times.values())
    assert order.row_major_width in (*MEASURED_WIDTHS, 2 * max(MEASURED_WIDTHS))


def test_the_stored_width_shapes_layouts_and_conversions(device, cache) -> None:
    """Without a stored order the layouts take ROW_MAJOR_WIDTH; a stored one (here: row-major
    from 4 slots) is taken by the layouts made after it, so ellr and hyb store rows of 5 slots
    row-major where work-items do not run in lockstep, column-major where they do."""
    assert FORMAT_CLASSES["ellr"].layout_for(device).row_major_width == ROW_MAJOR_WIDTH
    path = ell_order.save(device, order_from(4))
    assert json.loads(path.read_text())["row_major_width"] == 4 and ell_order.stored(device)
    layout = FORMAT_CLASSES["ellr"].layout_for(device)
    assert layout.row_major_width == 4
    A = sp.diags([1.0 + k for k in range(5)], range(5), shape=(300, 300), format="csr")
    x = np.linspace(-1, 1, 300)
    for fmt in ("ellr", "hyb"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
        assert M.params["row_major"] == int(not M._fmt.layout.lockstep)
        assert_matches(M @ x, A, x, np.float64)
        cpu = replace(M._fmt.layout, simd_width=8)
        precision = resolve(np.float64, np.float64)
        assert convert(A, fmt, cpu, precision).params["row_major"] == 1
        assert convert(A, fmt, replace(cpu, row_major_width=6), precision).params[
            "row_major"] == 0
        assert convert(A, fmt, replace(cpu, simd_width=32), precision).params["row_major"] == 0


def order_file(of, **change) -> str:
    """A complete order file of device ``of`` (row-major from 4 slots) with ``change`` made."""
    data = {"device": of.name, **order_from(4).to_json(), **change}
    return json.dumps(data, allow_nan=True)


DAMAGES = {  # the file's text from the device, and what the warning says is wrong
    "not json": (lambda d: "not json", "not JSON (Expecting value at line 1 column 1)"),
    "no device": (lambda d: '{"row_major_width": 4, "times": {}}', "no field 'device'"),
    "width 0": (lambda d: order_file(d, row_major_width=0),
                "row_major_width: 0 is out of range (at least 1, at most 4096)"),
    "width text": (lambda d: order_file(d, row_major_width="4"),
                   "row_major_width: '4' is not a number"),
    "1e400": (lambda d: order_file(d, times={"4": {"column_major": 1.0, "row_major": 0.5}})
              .replace("0.5", "1e400"), "the number 1e400 is out of range"),
    "nan": (lambda d: order_file(d, times={"4": {"column_major": float("nan"),
                                                 "row_major": 0.5}}), "NaN is not a number"),
    "zero time": (lambda d: order_file(d, times={"4": {"column_major": 0.0, "row_major": 0.5}}),
                  "times.4.column_major: 0.0 is out of range (above 0"),
    "width key": (lambda d: order_file(d, times={"four": {"column_major": 1.0,
                                                          "row_major": 0.5}}),
                  "times key: 'four' is not an integer from 1 to 2048"),
    "deep": (lambda d: "{" + '"a":{' * 50_000 + "}" * 50_001, "it is nested too deep"),
    "other device": (lambda d: order_file(d, device="another"), "it was made for 'another'"),
    "width its times do not give": (lambda d: order_file(d, row_major_width=8),
                                    "row_major_width 8 is not what its times give (4)"),
}


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_an_unusable_order_file_falls_back_with_one_warning(device, cache, damage) -> None:
    """A damaged order file: the default width, with one warning naming the file and the
    damage, however often the order is read."""
    text, reason = DAMAGES[damage]
    path = ell_order.order_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text(device))
    with pytest.warns(ClspmvWarning) as got:
        assert ell_order.row_major_width(device) == ROW_MAJOR_WIDTH
        assert Layout.for_device(device).row_major_width == ROW_MAJOR_WIDTH
        assert not ell_order.stored(device)
    assert len(got) == 1
    message = str(got[0].message)
    assert message.startswith(f"ELL order file {path} is unusable (") and reason in message
    assert message.endswith(f"rows of {ROW_MAJOR_WIDTH} slots or more are row-major until it is "
                            "measured again (by the next calibration, or by a named ELL format "
                            "where CLSPMV_CALIBRATE allows)")


def test_an_unusable_order_file_is_measured_again(device, cache, monkeypatch, caplog) -> None:
    """A named ELL format on a device whose order file is damaged measures the order again
    (where work-items do not run in lockstep) after one warning, and stores it whole."""
    monkeypatch.setattr(order_probe, "PROBE_ROWS", 256)
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    path = ell_order.order_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(order_file(device, row_major_width=float("inf")))
    A = sp.diags([1.0, 2.0, 3.0], [0, 1, 2], shape=(300, 300), format="csr")
    with pytest.warns(ClspmvWarning, match="Infinity is not a number") as got:
        M = clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device)
    assert len(got) == 1
    assert_matches(M @ np.ones(300), A, np.ones(300), np.float64)
    lockstep = M._fmt.layout.lockstep
    assert ("measuring the ELL order" in said(caplog)) != lockstep
    assert ell_order.stored(device) != lockstep
    if not lockstep:
        ell_order._memory.clear()
        data = json.loads(path.read_text())
        assert data["row_major_width"] == ell_order.row_major_width(device)
        assert sorted(int(w) for w in data["times"]) == list(MEASURED_WIDTHS)


def test_a_calibration_timed_with_another_order_is_measured_again(device, cache) -> None:
    """The calibration records the order its formats were timed in; when the stored order says
    otherwise its times are of other layouts: rebuilt with a warning."""
    ell_order.save(device, order_from(4))
    cal = fixture_calibration(device)
    store.save(replace(cal, ell_row_major_width=4), device)
    assert store.load(device) is not None
    ell_order.save(device, order_from(8))  # now from 8 slots
    with pytest.warns(ClspmvWarning, match="timed with ELL rows of 4 slots .* now says 8"):
        assert store.load(device) is None
    store.save(replace(cal, ell_row_major_width=0), device)  # none recorded: any order
    assert store.load(device) is not None


def test_a_named_ell_format_measures_the_order_once(device, cache, monkeypatch, caplog) -> None:
    """from_scipy(format="ellr") on a device without a stored order measures it first (one line
    in the log) where work-items do not run in lockstep, and converts in it; the next conversion
    reads it; an explicit row_major, CLSPMV_CALIBRATE=0 and lockstep layouts measure nothing."""
    monkeypatch.setattr(order_probe, "PROBE_ROWS", 256)
    A = sp.diags([1.0 + k for k in range(5)], range(5), shape=(300, 300), format="csr")
    monkeypatch.setenv("CLSPMV_CALIBRATE", "0")
    clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device)
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device, row_major=False)
    clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=device)
    assert not ell_order.stored(device) and "ELL order" not in said(caplog)
    lockstep = FORMAT_CLASSES["ellr"].layout_for(device).lockstep
    M = clspmv.DeviceMatrix.from_scipy(A, format="hyb", device=device)
    assert ell_order.stored(device) != lockstep
    assert ("measuring the ELL order" in said(caplog)) != lockstep
    width = ell_order.row_major_width(device)
    assert M.params["row_major"] == int(not lockstep and 5 >= width)
    x = np.linspace(-1, 1, 300)
    assert_matches(M @ x, A, x, np.float64)
    clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=device)
    assert "ELL order" not in said(caplog)  # measured once


def test_an_order_measured_at_fewer_widths_is_measured_again(device, cache, monkeypatch,
                                                             caplog) -> None:
    """An order stored before clspmv measured every width of MEASURED_WIDTHS (here: 4-24 slots
    only, as before 2 and 3 were added) counts as none: a calibration timed in it is rebuilt
    with a warning, and a named conversion measures the order again where work-items do not run
    in lockstep."""
    older = {w: t for w, t in order_from(4).times.items() if w >= 4}
    ell_order.save(device, EllOrder(older))
    assert ell_order.row_major_width(device) == 4 and not ell_order.stored(device)
    store.save(replace(fixture_calibration(device), ell_row_major_width=4), device)
    with pytest.warns(ClspmvWarning, match="ELL order .* measured at fewer row widths"):
        assert store.load(device) is None
    monkeypatch.setattr(order_probe, "PROBE_ROWS", 256)
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    A = sp.diags([1.0, 2.0, 3.0], [0, 1, 2], shape=(300, 300), format="csr")
    clspmv.DeviceMatrix.from_scipy(A, format="hyb", device=device)
    lockstep = FORMAT_CLASSES["hyb"].layout_for(device).lockstep
    assert ("measuring the ELL order" in said(caplog)) != lockstep
    assert ell_order.stored(device) != lockstep
    if not lockstep:
        times = json.loads(ell_order.order_path(device).read_text())["times"]
        assert sorted(int(w) for w in times) == list(MEASURED_WIDTHS)
