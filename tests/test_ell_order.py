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
from ell_orders import order_from

import clspmv
from clspmv import ell_order
from clspmv.ell_order import (
    MEASURED_WIDTHS,
    ROW_MAJOR_WIDTH,
    SCATTERED_WIDTHS,
    EllOrder,
    row_major_width_from,
)
from clspmv.errors import ClspmvWarning
from clspmv.formats import FORMAT_CLASSES, Layout, convert
from clspmv.formats.ell import scattered_rows
from clspmv.model import order_probe
from clspmv.model.order_probe import measure_ell_order, probe_matrix
from clspmv.precision import resolve

from oracle import assert_matches

store = importlib.import_module("clspmv.model.store")


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
    assert EllOrder({}, times).scattered_row_major_width == width


def test_an_order_keeps_the_widths_of_both_kinds_of_rows() -> None:
    order = order_from(11, 2)
    assert (order.row_major_width, order.scattered_row_major_width) == (11, 2)
    data = order.to_json()
    assert (data["row_major_width"], data["scattered_row_major_width"]) == (11, 2)
    assert sorted(data["scattered_times"]) == sorted(str(w) for w in SCATTERED_WIDTHS)
    regular_only = EllOrder(order.times)  # as clspmv stored it before the scattered rows
    assert "scattered_times" not in regular_only.to_json()
    assert regular_only.scattered_row_major_width == ROW_MAJOR_WIDTH


def test_scattered_rows_are_those_whose_neighbours_read_far_apart() -> None:
    """Bands, stencils and block rows read neighbouring columns side by side; rows of random
    columns and graphs do not."""
    rng = np.random.default_rng(3)
    n = 20_000
    band = sp.diags([np.ones(n)] * 5, [-300, -1, 0, 1, 300], shape=(n, n), format="csr")
    assert not scattered_rows(band)
    assert not scattered_rows(sp.kron(sp.random(n // 4, n // 4, density=2e-3, random_state=rng),
                                      np.ones((4, 4)), format="csr"))
    assert scattered_rows(sp.random(n, n, density=5e-4, format="csr", random_state=rng))
    assert scattered_rows(sp.random(30, n, density=0.01, format="csr", random_state=rng))
    assert not scattered_rows(sp.csr_matrix((n, n)))
    assert not scattered_rows(sp.csr_matrix((0, 5)))
    # a long row read only up to its first slots: a random tail does not count
    long_band = band.tolil()
    long_band[0, :] = 1.0
    assert not scattered_rows(long_band.tocsr())


def test_probe_matrix_rows() -> None:
    A = probe_matrix(6, rows=1000, spread=100)
    assert A.shape == (1000, 1000) and np.all(np.diff(A.indptr) == 6)
    rows = np.repeat(np.arange(1000), 6)
    distance = np.minimum((A.indices - rows) % 1000, (rows - A.indices) % 1000)
    assert distance.max() == 50 and len(set(zip(rows, A.indices, strict=True))) == A.nnz
    assert not scattered_rows(A)
    S = probe_matrix(6, rows=1000, scattered=True)
    assert S.shape == (1000, 1000) and np.all(np.diff(S.indptr) == 6)
    assert len(set(zip(rows, S.indices, strict=True))) == S.nnz and S.has_sorted_indices
    assert S.indices.min() >= 0 and S.indices.max() < 1000 and scattered_rows(S)


def test_measure_times_both_orders_at_every_width(device, cache) -> None:
    order = measure_ell_order(device, resolve(np.float32, np.float64), rows=512)
    assert sorted(order.times) == list(MEASURED_WIDTHS)
    assert sorted(order.scattered_times) == list(SCATTERED_WIDTHS)
    assert all(c > 0 and r > 0 for times in (order.times, order.scattered_times)
               for c, r in times.values())
    assert order.row_major_width in (*MEASURED_WIDTHS, 2 * max(MEASURED_WIDTHS))
    assert order.scattered_row_major_width in (*SCATTERED_WIDTHS, 2 * max(SCATTERED_WIDTHS))


def test_the_stored_widths_shape_layouts_and_conversions(device, cache) -> None:
    """Without a stored order the layouts take ROW_MAJOR_WIDTH for both kinds of rows; a stored
    one (here: row-major from 4 slots, rows of scattered columns from 16) is taken by the
    layouts made after it, so ellr and hyb store a band of 5 diagonals row-major and rows of 5
    random columns column-major where work-items do not run in lockstep, both column-major where
    they do."""
    layout = FORMAT_CLASSES["ellr"].layout_for(device)
    assert (layout.row_major_width, layout.scattered_row_major_width) == (ROW_MAJOR_WIDTH,) * 2
    path = ell_order.save(device, order_from(4, 16))
    data = json.loads(path.read_text())
    assert (data["row_major_width"], data["scattered_row_major_width"]) == (4, 16)
    assert ell_order.stored(device) and ell_order.row_major_widths(device) == (4, 16)
    layout = FORMAT_CLASSES["ellr"].layout_for(device)
    assert (layout.row_major_width, layout.scattered_row_major_width) == (4, 16)
    band = sp.diags([1.0 + k for k in range(5)], range(5), shape=(300, 300), format="csr")
    scattered = probe_matrix(5, rows=300, scattered=True)
    x = np.linspace(-1, 1, 300)
    precision = resolve(np.float64, np.float64)
    for fmt in ("ellr", "hyb"):
        for A, row_major in ((band, 1), (scattered, 0)):
            M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
            assert M.params["row_major"] == row_major * int(not M._fmt.layout.lockstep)
            assert_matches(M @ x, A, x, np.float64)
            cpu = replace(M._fmt.layout, simd_width=8)
            assert convert(A, fmt, cpu, precision).params["row_major"] == row_major
            assert convert(A, fmt, replace(cpu, simd_width=32), precision).params[
                "row_major"] == 0
        cpu = replace(layout, simd_width=8)
        for change, band_row_major, scattered_row_major in (
                ({"row_major_width": 6}, 0, 0), ({"scattered_row_major_width": 5}, 1, 1),
                ({"row_major_width": 6, "scattered_row_major_width": 2}, 0, 1)):
            assert [convert(A, fmt, replace(cpu, **change), precision).params["row_major"]
                    for A in (band, scattered)] == [band_row_major, scattered_row_major], change


def order_file(of, **change) -> str:
    """A complete order file of device ``of`` (row-major from 4 slots, rows of scattered
    columns from 2) with ``change`` made (a field changed to None: left out)."""
    data = {"device": of.name, **order_from(4, 2).to_json(), **change}
    return json.dumps({k: v for k, v in data.items() if v is not None}, allow_nan=True)


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
    "scattered width its times do not give": (
        lambda d: order_file(d, scattered_row_major_width=4),
        "scattered_row_major_width 4 is not what its scattered times give (2)"),
    "scattered width without times": (
        lambda d: order_file(d, scattered_times=None),
        "scattered_row_major_width 2 is not what its scattered times give (none)"),
    "scattered times without width": (
        lambda d: order_file(d, scattered_row_major_width=None),
        "scattered_row_major_width none is not what its scattered times give (2)"),
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
        assert ell_order.row_major_widths(device) == (ROW_MAJOR_WIDTH, ROW_MAJOR_WIDTH)
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
        assert (data["row_major_width"], data["scattered_row_major_width"]) == (
            ell_order.row_major_widths(device))
        assert sorted(int(w) for w in data["times"]) == list(MEASURED_WIDTHS)
        assert sorted(int(w) for w in data["scattered_times"]) == list(SCATTERED_WIDTHS)


def test_a_calibration_timed_with_another_order_is_measured_again(device, cache) -> None:
    """The calibration records the order its formats were timed in (both widths); when the
    stored order says otherwise its times are of other layouts: rebuilt with a warning."""
    ell_order.save(device, order_from(4, 2))
    cal = replace(fixture_calibration(device), ell_row_major_width=4,
                  ell_scattered_row_major_width=2)
    store.save(cal, device)
    assert store.load(device) is not None
    ell_order.save(device, order_from(8, 2))  # now from 8 slots
    with pytest.warns(ClspmvWarning, match=(
            "timed with ELL rows of 4 slots or more row-major, rows of scattered columns from 2, "
            "the device's stored order now says ELL rows of 8 slots")):
        assert store.load(device) is None
    ell_order.save(device, order_from(4, 16))  # the scattered rows' width alone changed
    store.save(cal, device)
    with pytest.warns(ClspmvWarning, match="columns from 2, .* scattered columns from 16"):
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
    width = ell_order.row_major_widths(device)[0]  # a band's rows are not scattered
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
    assert ell_order.row_major_widths(device)[0] == 4 and not ell_order.stored(device)
    ell_order.save(device, EllOrder(order_from(4).times))  # every width, no scattered rows
    assert ell_order.row_major_widths(device) == (4, ROW_MAJOR_WIDTH)
    assert not ell_order.stored(device)
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
        data = json.loads(ell_order.order_path(device).read_text())
        assert sorted(int(w) for w in data["times"]) == list(MEASURED_WIDTHS)
        assert sorted(int(w) for w in data["scattered_times"]) == list(SCATTERED_WIDTHS)
