"""clspmv.model: features, refusals, the calibration store, predictions and format="auto".

No test measures a device: a stored calibration (``tests/data/calibration-fixture.json``,
measured once with PoCL 3.1 on a 2-core CPU) makes the selection deterministic, the quick
default covers ``CLSPMV_CALIBRATE=0``, and a counting stand-in replaces the measurement where a
rebuild is checked.
"""

from __future__ import annotations

import importlib
import json
import logging
import re
import warnings
from dataclasses import replace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import pytest
import scipy.sparse as sp
from calibration_fixture import fixture_calibration

import clspmv
from clspmv import bandwidth as bandwidth_mod
from clspmv import cache_files
from clspmv.bench.generators import generate
from clspmv.cli import main
from clspmv.device import events_ns
from clspmv.errors import ClspmvWarning
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, convert
from clspmv.matrix import canonical_csr
from clspmv.model import Calibration, predict, select
from clspmv.model.calibrate import MEASUREMENT
from clspmv.model.launches import LOCAL_MEMORY, launches, work_items
from clspmv.model.rowlengths import length_changes
from clspmv.model.timemodel import (
    TERMS,
    WIDE_ROW,
    miss_share,
    quick_default,
    terms,
)
from clspmv.precision import resolve

store = importlib.import_module("clspmv.model.store")
features_mod = importlib.import_module("clspmv.model.features")
sampling = importlib.import_module("clspmv.model.sampling")
calibrate_mod = importlib.import_module("clspmv.model.calibrate")
probes = importlib.import_module("clspmv.model.probes")

FORMATS = SINGLE_FORMATS


@pytest.fixture
def stored(device, calibration_cache) -> Calibration:
    """The fixture stored as ``device``'s calibration (format="auto" reads it)."""
    cal = fixture_calibration(device)
    store.save(cal, device)
    return cal


@pytest.fixture
def no_measuring(monkeypatch) -> list[clspmv.Device]:
    """Replace the measurement by the quick default, recording the devices it was asked for."""
    calls: list[clspmv.Device] = []

    def fake(device, progress=True):
        calls.append(device)
        cal = quick_default(device.name, device.driver_version, clspmv.__version__, device.type,
                            FORMATS)
        cal.kind, cal.measurement = "measured", MEASUREMENT
        return cal

    monkeypatch.setattr(store, "calibrate", fake)
    return calls


# -- features -----------------------------------------------------------------------------------
SMALL = sp.csr_matrix(np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [3, 4, 5, 0], [0, 0, 0, 6]]))


def test_features_by_hand() -> None:
    f = features_mod.features(canonical_csr(SMALL), simd_width=2)
    assert (f.rows, f.cols, f.entries, f.empty_rows, f.max_row) == (4, 4, 6, 1, 3)
    assert f.mean_row == 1.5 and f.std_row == pytest.approx(np.std([2, 0, 3, 1]))
    assert f.slots_of("csr-scalar") == 6  # no padding
    assert f.slots_of("ell") == 4 * 3  # rows padded to C=2 (4), times the longest row
    assert f.slots_of("csr-aligned") == 3 * 16  # three non-empty rows of 16 slots
    assert f.diagonals == 4 and f.slots_of("dia") == 4 * 4  # offsets -2, -1, 0, 2
    # HYB on a CPU (SIMD 2): K=1 (three of four rows reach it: 3/4 in float64), ELL part 4 x 1,
    # three entries beyond in COO; on a GPU (SIMD 32): K=2 (two of four rows, at least a third),
    # ELL part 32 x 2, one entry beyond
    assert f.hyb_width == 1 and f.slots_of("hyb") == 7
    g = features_mod.features(canonical_csr(SMALL), simd_width=32)
    assert g.hyb_width == 2 and g.slots_of("hyb") == 65
    # pJDS: lengths sorted 3,2 | 1,0: slices of widths 3 and 1, 2 rows each
    assert f.slots_of("pjds") == 8
    # one block of rows, all columns within one 64-byte line of float64: one line of x
    assert f.x_lines == 1 and f.near_fraction == 1.0
    assert f.mean_distance == pytest.approx(np.mean([0, 2, 2, 1, 0, 0]))


def test_features_of_a_row_block_and_locality() -> None:
    f = features_mod.features(canonical_csr(SMALL), 2, rows=slice(2, 4))
    assert (f.rows, f.entries, f.max_row, f.empty_rows) == (2, 4, 3, 0)
    n = 1 << 16  # x of 512 KiB: random columns of one block are mostly not the block before's
    rng = np.random.default_rng(0)
    rows = np.repeat(np.arange(n), 4)
    banded = sp.csr_matrix((np.ones(4 * n), (rows, np.minimum(rows + np.tile(np.arange(4), n),
                                                                n - 1))), shape=(n, n))
    scattered = sp.csr_matrix((np.ones(4 * n), (rows, rng.integers(0, n, 4 * n))), shape=(n, n))
    fb = features_mod.features(canonical_csr(banded), 8)
    fs = features_mod.features(canonical_csr(scattered), 8)
    assert fb.near_fraction == 1.0 and fs.near_fraction < 0.5
    assert fb.x_lines < fs.x_lines / 5
    # a band's lines follow each other (one stream), random columns' mostly do not
    assert fb.x_scattered < 0.01 * fb.x_lines and fs.x_scattered > 0.6 * fs.x_lines


def test_gathers_count_the_lines_the_block_before_did_not_read() -> None:
    # row r reads columns r, r + 8, ..., r + 248: 32 lines of float64 x, one per entry; a block of
    # 256 rows reads 63 lines, 31 of which the block before read too: 32 new (63 in the first)
    n = 16 * sampling.ROW_BLOCK
    rows = np.repeat(np.arange(n), 32)
    cols = rows + np.tile(np.arange(0, 256, 8), n)
    A = canonical_csr(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n + 256)))
    f = features_mod.features(A, 8)
    assert f.x_lines == 63 + 15 * 32
    assert f.x_scattered == 1  # each block's new lines continue the block before's


def test_long_rows_are_sampled_by_a_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row of more than ROW_SAMPLE_ENTRIES gives a window of them, its lines scaled: the
    estimate stays within 3 % of the exact count (every block, whole rows) on dense band rows
    and on random ones, and its near fraction within 0.02 of the whole rows' sample."""
    n = 1 << 17
    rng = np.random.default_rng(3)
    long_rows = np.arange(0, n, n // 64)
    band = [np.arange(max(0, r - 20_000), min(n, r + 20_000)) for r in long_rows]
    scattered = [np.sort(rng.choice(n, 30_000, replace=False)) for _ in long_rows]
    for cols_of_long in (band, scattered):
        rows = np.concatenate([np.arange(n), *[np.full(c.size, r) for r, c in
                                                zip(long_rows, cols_of_long, strict=True)]])
        cols = np.concatenate([np.arange(n), *cols_of_long])
        A = canonical_csr(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)))
        windowed = features_mod.features(A, 8)
        assert sampling.sample_rows(A)[1].size < 64 * 2 * (256 + 4096)
        with monkeypatch.context() as m:
            m.setattr(sampling, "ROW_SAMPLE_ENTRIES", A.nnz)
            whole = features_mod.features(A, 8)
            m.setattr(sampling, "SAMPLE_BLOCKS", A.shape[0])
            m.setattr(sampling, "SAMPLE_ENTRIES", 2 * A.nnz * sampling.ROW_BLOCK)
            exact = features_mod.features(A, 8)
        assert windowed.x_lines == pytest.approx(exact.x_lines, rel=0.03)
        assert windowed.near_fraction == pytest.approx(whole.near_fraction, abs=0.02)


def test_a_few_long_rows_are_not_extrapolated_with_the_sampled_blocks(monkeypatch) -> None:
    """Rows of 4 entries on a band and 4 rows of 60 k entries: the long rows are counted as a
    stratum of their own, so the estimate stays within 10 % of the exact count whether or not a
    sampled block holds one (scaled with the blocks, one sampled long row stood for 16)."""
    n = 1 << 18
    long_rows = np.array([1000, 90_000, 150_000, 240_000])
    rows = np.concatenate([np.repeat(np.arange(n), 4), np.repeat(long_rows, 60_000)])
    cols = np.concatenate([np.clip(np.repeat(np.arange(n), 4) + np.tile([-1, 0, 1, 2], n), 0,
                                   n - 1),
                           np.concatenate([np.arange(r, r + 60_000) % n for r in long_rows])])
    A = canonical_csr(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)))
    estimate = features_mod.features(A, 8).x_lines
    with monkeypatch.context() as m:
        m.setattr(sampling, "ROW_SAMPLE_ENTRIES", A.nnz)
        m.setattr(sampling, "SAMPLE_BLOCKS", A.shape[0])
        m.setattr(sampling, "SAMPLE_ENTRIES", 2 * A.nnz * sampling.ROW_BLOCK)
        exact = features_mod.features(A, 8).x_lines
    assert estimate == pytest.approx(exact, rel=0.1)


def test_sampled_diagonals_are_a_lower_bound_made_exact() -> None:
    n = 100_000
    A = canonical_csr(sp.diags([np.ones(n), np.ones(n - 1)], [0, 1], format="csr")
                      + sp.csr_matrix(([1.0], ([n // 2 + 7], [3])), shape=(n, n)))
    f = features_mod.features(A, 8)
    exact = features_mod.with_exact_diagonals(f, A)
    assert exact.diagonals == 3 and exact.diagonals_exact and f.diagonals <= 3
    # offsets 0, 1 and -(n/2 + 4) cross n, n - 1 and n/2 - 4 rows of the matrix
    assert exact.diagonal_rows == n + n - 1 + n // 2 - 4 and f.diagonal_rows <= exact.diagonal_rows


def test_dia_reads_only_the_stretches_of_its_diagonals_inside_the_matrix() -> None:
    """A periodic lattice's wrapped diagonals are mostly padding that DIA's kernel skips: it reads
    one slot per entry, half the slots it stores, and the model counts those bytes."""
    A = canonical_csr(generate("gen:constrows:n=20000,k=5,spread=300"))
    f = features_mod.with_exact_diagonals(features_mod.features(A, 8), A)
    assert f.diagonals >= 9 and f.diagonal_rows == A.nnz  # 5 offsets, 4 or 5 of them wrapped
    stored = f.slots_of("dia") * 8 + f.diagonals * 4
    assert features_mod.matrix_bytes("dia", f) == A.nnz * 8 + f.diagonals * 4 < stored / 1.7


# -- refusals -----------------------------------------------------------------------------------
def long_row_matrix() -> sp.csr_matrix:
    rng = np.random.default_rng(0)
    rows = np.concatenate([np.zeros(200_000, int), rng.integers(1, 2000, 2000)])
    cols = np.concatenate([np.arange(200_000), rng.integers(0, 200_000, 2000)])
    return sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(2000, 200_000))


def test_refusal_mirrors_the_formats() -> None:
    A = canonical_csr(long_row_matrix(), np.float32)
    f = features_mod.features(A, 8)
    for fmt in ("ell", "ellr", "ellr-t", "dia"):
        why = features_mod.refusal(fmt, features_mod.with_exact_diagonals(f, A))
        assert why is not None and f"format '{fmt}' would need" in why
    for fmt in ("csr-vector", "sell", "hyb", "coo"):
        assert features_mod.refusal(fmt, f) is None


def test_predict_gives_times_and_refusal_reasons(device, stored) -> None:
    preds = predict(long_row_matrix(), device, np.float32)
    assert set(preds) == set(FORMATS)
    assert preds["ell"].kernel_s is None and "would need" in preds["ell"].refused
    assert preds["csr-vector"].refused is None and preds["csr-vector"].kernel_s > 0
    assert preds["csr-vector"].conversion_s > 0


# -- selection ----------------------------------------------------------------------------------
def test_auto_never_takes_a_format_that_refuses(device, stored) -> None:
    cal = fixture_calibration(device)
    for fmt in ("ell", "ellr", "ellr-t", "dia"):
        cal.kernel[fmt] = [0.0] * len(TERMS)  # predicted free: the best, were it not refused
    csr = canonical_csr(long_row_matrix(), np.float32)
    sel = select(csr, device, calibration_=cal)
    assert sel.format not in sel.refusals and sel.refusals.keys() >= {"ell", "dia"}
    cal.kernel["dia"] = [0.0] * len(TERMS)
    banded = canonical_csr(sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(5000, 5000), format="csr"))
    assert select(banded, device, calibration_=cal).format in ("ell", "ellr", "ellr-t", "dia")


def test_selection_is_deterministic_with_the_fixture(device, stored) -> None:
    rng = np.random.default_rng(1)
    n = 20_000
    mats = {
        "tridiagonal": sp.diags([1.0, 2.0, 1.0], [-1, 0, 1], shape=(n, n), format="csr"),
        "random": sp.random(n, n, density=4e-4, format="csr", random_state=rng),
        "long rows": long_row_matrix(),
    }
    first = {k: clspmv.DeviceMatrix.from_scipy(A, device=device).format for k, A in mats.items()}
    store.forget()  # read again from the file
    again = {k: clspmv.DeviceMatrix.from_scipy(A, device=device).format for k, A in mats.items()}
    assert first == again
    sel = clspmv.DeviceMatrix.from_scipy(mats["random"], device=device).selection
    assert sel.calibration == "measured" and sel.format == min(
        (p for p in sel.predictions.values() if p.kernel_s is not None),
        key=lambda p: p.kernel_s).format
    assert sel.cost_ms > 0 and sel.format in sel.why or "least predicted" in sel.why


def test_expected_products_weighs_the_conversion(device, stored) -> None:
    cal = fixture_calibration(device)
    for fmt in FORMATS:
        cal.kernel[fmt] = [1e-3] + [0.0] * (len(TERMS) - 1)
        cal.conversion[fmt] = [1e-3, 0, 0]
    cal.kernel["sell"] = [0.5e-3] + [0.0] * (len(TERMS) - 1)  # faster products ...
    cal.conversion["sell"] = [1.0, 0, 0]  # ... after a conversion worth 2000 of them
    csr = canonical_csr(sp.random(500, 500, density=0.02, format="csr", random_state=0))
    assert select(csr, device, calibration_=cal).format == "sell"
    once = select(csr, device, expected_products=1, calibration_=cal)
    assert once.format != "sell" and "does not pay off" in once.why
    assert select(csr, device, expected_products=10_000, calibration_=cal,
                  trial=False).format == "sell"
    with pytest.raises(ValueError, match="expected_products must be at least 1"):
        select(csr, device, expected_products=0, calibration_=cal)


def test_from_scipy_auto_hook(device, stored) -> None:
    A = sp.random(300, 300, density=0.03, format="csr", random_state=2)
    M = clspmv.DeviceMatrix.from_scipy(A, device=device)
    assert M.selection is not None and M.format == M.selection.format
    assert f"format={M.format!r} (auto)" in repr(M)
    x = np.arange(300.0)
    assert np.allclose(M @ x, A @ x)
    named = clspmv.DeviceMatrix.from_scipy(A, "csr-vector", device=device)
    assert named.selection is None and "(auto)" not in repr(named)
    with pytest.raises(ValueError, match="format parameters .*unroll.* belong to a named format"):
        clspmv.DeviceMatrix.from_scipy(A, device=device, unroll=2)
    with pytest.raises(ValueError, match="unknown format 'fast'.* or 'auto'"):
        clspmv.DeviceMatrix.from_scipy(A, "fast", device=device)


# -- the store ----------------------------------------------------------------------------------
def test_quick_default_when_calibration_is_off(device, calibration_cache, monkeypatch,
                                               no_measuring) -> None:
    monkeypatch.setenv("CLSPMV_CALIBRATE", "0")
    M = clspmv.DeviceMatrix.from_scipy(sp.eye(50, format="csr"), device=device)
    assert M.selection.calibration == "quick-default" and not no_measuring
    assert not list(calibration_cache.iterdir())  # nothing measured, nothing stored


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "stale", "other-model",
                                    "previous-form", "missing-format"])
def test_unusable_file_is_rebuilt_with_a_warning(device, stored, monkeypatch, no_measuring,
                                                 damage) -> None:
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    path = store.calibration_path(device)
    text = path.read_text()
    if damage == "corrupt":
        path.write_bytes(b"\x00\xffnot json")
    elif damage == "truncated":
        path.write_text(text[: len(text) // 2])
    else:
        data = json.loads(text)
        if damage == "stale":
            data["clspmv"] = "0.0.1"
        elif damage == "missing-format":
            del data["kernel"]["sell"]
        elif damage == "previous-form":  # the six terms before "wide bytes", no timings kept
            data["terms"] = list(TERMS[:6])
            data["kernel"] = {k: v[:6] for k, v in data["kernel"].items()}
            data["measurements"] = None
        else:
            data["terms"] = ["launch", "bytes"]
            data["measurements"] = None
        path.write_text(json.dumps(data))
    store.forget()
    with pytest.warns(ClspmvWarning, match="is unusable .* it will be rebuilt"):
        cal = store.calibration(device, progress=False)
    assert no_measuring == [device] and cal.kind == "measured"
    assert store.load(device) is not None  # the rebuilt file reads back


def test_a_file_of_an_earlier_model_form_is_fitted_again(device, stored, monkeypatch,
                                                        no_measuring) -> None:
    """A calibration of an earlier model form (fewer terms) that keeps its timings is fitted
    again to them and saved in this form, with a warning; nothing is measured."""
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    path = store.calibration_path(device)
    data = json.loads(path.read_text())
    data["terms"] = list(TERMS[:-1])
    data["kernel"] = {k: v[:-1] for k, v in data["kernel"].items()}
    path.write_text(json.dumps(data))
    store.forget()
    with pytest.warns(ClspmvWarning, match="fitted in an earlier model form"):
        cal = store.calibration(device, progress=False)
    assert no_measuring == [] and cal.kind == "measured"
    assert json.loads(path.read_text())["terms"] == list(TERMS)
    assert all(len(c) == len(TERMS) for c in cal.kernel.values())
    assert cal.kernel == calibrate_mod.refit(cal).kernel  # the fit of the stored timings
    store.forget()
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # read back: no refit, no warning
        assert store.calibration(device, progress=False).kernel == cal.kernel


@pytest.mark.parametrize("damage", ["old-measurement", "no-measurement"])
def test_a_calibration_measured_another_way_is_rebuilt(device, stored, monkeypatch,
                                                       no_measuring, damage) -> None:
    """A calibration timed before the kernels or their timing changed (or written before the
    field) is measured again, on every type of device."""
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    path = store.calibration_path(device)
    data = json.loads(path.read_text())
    if damage == "old-measurement":
        data["measurement"] = MEASUREMENT - 1
    else:
        del data["measurement"]
    for kind in ("cpu", "gpu"):
        typed = replace(device, type=kind)
        store.calibration_path(typed).write_text(json.dumps(data))  # a CPU's key: the host too
        store.forget()
        with pytest.warns(ClspmvWarning, match="measured with other kernels"):
            store.calibration(typed, progress=False)
        assert no_measuring[-1] == typed and store.load(typed) is not None
    assert len(no_measuring) == 2


def test_missing_calibration_is_measured_once_and_stored(device, calibration_cache, monkeypatch,
                                                         no_measuring, caplog) -> None:
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    with caplog.at_level(logging.INFO, logger="clspmv.model.store"):
        store.calibration(device, progress=False)
        store.calibration(device, progress=False)
    assert no_measuring == [device] and store.calibration_path(device).exists()
    notes = [(r.name, r.levelno) for r in caplog.records if "measuring it once" in r.getMessage()]
    # a WARNING: minutes of blocking that a library user without logging set sees too
    assert notes == [("clspmv.model.store", logging.WARNING)], notes


def test_cpu_calibration_is_keyed_by_the_host_processor(device, calibration_cache, monkeypatch,
                                                       no_measuring) -> None:
    """A CPU device's calibration file names the host's processor (PoCL gives different
    processors one device name): the same device on another processor finds no calibration and
    measures its own, and the first one's file stays; a GPU's key holds no processor."""
    monkeypatch.setenv("CLSPMV_CALIBRATE", "1")
    cpu, gpu = replace(device, type="cpu"), replace(device, type="gpu")
    here = re.sub(r"[^A-Za-z0-9._-]+", "_", cache_files.host_cpu())
    assert here and here in store.calibration_path(cpu).name
    assert here not in store.calibration_path(gpu).name
    store.calibration(cpu, progress=False)
    first = store.calibration_path(cpu)
    monkeypatch.setattr(cache_files, "host_cpu", lambda: "OtherVendor-99-1")
    store.forget()
    assert store.calibration_path(cpu) != first and store.load(cpu) is None
    store.calibration(cpu, progress=False)
    assert no_measuring == [cpu, cpu] and first.exists() and store.calibration_path(cpu).exists()
    assert "OtherVendor-99-1" in store.calibration_path(cpu).name


def test_cli_calibrate_show(device, stored, capsys) -> None:
    spec = f"{device.index[0]}:{device.index[1]}"
    assert main(["calibrate", "--device", spec, "--show", "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["device"] == device.name and set(shown["kernel"]) == set(FORMATS)


# -- the fit --------------------------------------------------------------------------------------
def test_fit_recovers_known_coefficients() -> None:
    rng = np.random.default_rng(3)
    rows = np.column_stack([np.ones(20), rng.uniform(1e5, 1e8, 20), rng.uniform(0, 1e7, 20),
                            rng.uniform(1e3, 1e6, 20), rng.uniform(1, 1e4, 20)])
    truth = np.array([1e-5, 1e-11, 4e-11, 0.0, 2e-8])
    fitted = calibrate_mod._fit(rows, rows @ truth, [1e-5, 1e-11, 1e-11, 0, 0])
    error = np.abs(rows @ fitted - rows @ truth) / (rows @ truth)
    assert np.median(error) < 0.02 and error.max() < 0.1  # the prior's pull is small
    assert min(fitted) >= 0


def test_fit_holds_fixed_coefficients() -> None:
    rng = np.random.default_rng(4)
    rows = np.column_stack([np.ones(30), rng.uniform(1e5, 1e8, 30), rng.uniform(0, 1e7, 30)])
    truth = np.array([1e-5, 1e-11, 3e-11])
    fitted = calibrate_mod._fit(rows, rows @ truth, [1e-5, 1e-11, 3e-11], fixed=(2,))
    assert fitted[2] == 3e-11
    assert fitted[:2] == pytest.approx(truth[:2], rel=0.02)
    # a fixed coefficient stays even where the times call for another
    assert calibrate_mod._fit(rows, rows @ truth, [1e-5, 1e-11, 6e-11], fixed=(2,))[2] == 6e-11


def test_x_cache_probe_curve() -> None:
    """The miss curve is the rise of the probe's times (made non-decreasing) beyond the time at
    a reference size over the whole rise beyond it, interpolated in log size; ``far_x_bytes``
    the first size at 3/4 of the rise from the smallest size."""
    sizes = [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20]
    probe = probes.XCacheProbe(sizes, [1.0, 1.1, 1.05, 2.0, 5.0], 100.0)
    assert [m for _, m in probe.curve(1 << 20)] == pytest.approx([0, 0.025, 0.025, 0.25, 1])
    assert probe.far_s(1 << 20) == 4.0 and probe.far_s_per_byte(1 << 20) == 4.0 / (100 * 64)
    assert probe.far_x_bytes == 16 << 20
    # from the reference on: 8 MiB took 2.0, so the rise beyond it is 3.0
    assert [m for _, m in probe.curve(8 << 20)] == pytest.approx([0, 0, 0, 0, 1])
    assert probe.far_s(8 << 20) == 3.0
    assert probe.far_s(2 ** 21.5) == pytest.approx(5.0 - 1.1)  # between 2 and 4 MiB: 1.1
    curve = probe.curve(1 << 20)
    assert miss_share(curve, 12 << 20) == pytest.approx(0.25 + 0.75 * np.log2(1.5))
    assert miss_share(curve, 1 << 10) == 0 and miss_share(curve, 1 << 30) == 1
    assert miss_share([], 1 << 30) == 0
    flat = probes.XCacheProbe(sizes, [1.0] * 5, 100.0)
    assert flat.far_s(1 << 20) == 0 and all(m == 0 for _, m in flat.curve(1 << 20))
    again = probes.XCacheProbe.from_json(json.loads(json.dumps(probe.to_json())))
    assert again.curve(4 << 20) == probe.curve(4 << 20)
    with pytest.raises(ValueError, match="as many sizes as times"):
        probes.XCacheProbe.from_json({"x_bytes": sizes, "seconds": [1.0],
                                      "scattered_lines": 1.0})


def test_far_gathers_term_counts_scattered_lines_beyond_the_x_cache() -> None:
    """``far xbytes``: the scattered lines of x times 64 times the miss share of the probed curve
    at the size of x; zero where x fits the cache or the curve was not probed."""
    rng = np.random.default_rng(5)
    n = 1 << 18  # x of 2 MiB in float64
    rows = np.repeat(np.arange(n), 4)
    A = canonical_csr(sp.csr_matrix((np.ones(4 * n), (rows, rng.integers(0, n, 4 * n))),
                                    shape=(n, n)))
    f = features_mod.features(A, 8)
    far = TERMS.index("far xbytes")
    curve = [[1 << 20, 0.0], [4 << 20, 0.5], [16 << 20, 1.0]]
    assert terms("csr-scalar", f, 0, None)[far] == 0  # not probed
    assert terms("csr-scalar", f, 0, [[4 << 20, 0.0], [8 << 20, 1.0]])[far] == 0  # x fits
    assert terms("csr-scalar", f, 0, curve)[far] == pytest.approx(0.25 * f.x_scattered * 64)
    cal = quick_default("d", "1", "0", "cpu", FORMATS)
    assert cal.x_miss == [] and all(c[far] == 0 for c in cal.kernel.values())


def test_x_gathers_term_is_zero_for_formats_streaming_x_along_diagonals() -> None:
    """``xbytes``: the lines of x per row block times 64 for the formats that gather x entry by
    entry; 0 for dia, which reads x along each diagonal as a stream (its ``x_streamed`` hook),
    so that a Poisson matrix's far diagonals are not priced as gathers."""
    f = features_mod.features(canonical_csr(generate("gen:poisson2d:k=60")), 8)
    xbytes = TERMS.index("xbytes")
    assert f.x_lines > 0
    assert [n for n in FORMATS if FORMAT_CLASSES[n].x_streamed] == ["dia"]
    assert terms("dia", f)[xbytes] == 0
    for fmt in ("csr-scalar", "csr-blocks", "ell", "sell"):
        assert terms(fmt, f)[xbytes] == f.x_lines * 64, fmt


def test_benchmark_matrices_add_random_far_where_the_x_cache_was_probed() -> None:
    """The probe's far x size adds a matrix of random columns over that much float64 x; the
    other matrices stay those of calibrations measured without it (a refit makes them again)."""
    plain = calibrate_mod.benchmark_matrices(FakeDevice())
    probed = FakeDevice()
    probed.far_x_bytes = 24 << 20
    more = calibrate_mod.benchmark_matrices(probed)
    assert set(more) - set(plain) == {"random-far"} and "random-far" not in plain
    assert more["random-far"].shape[1] * 8 == probed.far_x_bytes
    for key, A in plain.items():
        assert (A != more[key]).nnz == 0, key


def test_wide_bytes_terms_count_slots_per_row_beyond_and_in_the_cache() -> None:
    """``wide bytes`` / ``cached wide bytes``: the streamed bytes beyond / in the cache times
    the slots a row stores in the format (its padding included) over WIDE_ROW, capped at 1."""
    band = canonical_csr(sp.diags([1.0] * 9, range(-4, 5), shape=(4000, 4000), format="csr"))
    f = features_mod.features(band, simd_width=8)
    wide, cached_wide = TERMS.index("wide bytes"), TERMS.index("cached wide bytes")
    t = terms("ell", f, cache_bytes=1 << 30)  # all in the cache
    assert t[wide] == 0 and t[cached_wide] == pytest.approx(
        t[TERMS.index("cached bytes")] * 9 / WIDE_ROW)
    t = terms("ell", f, cache_bytes=0)
    assert t[wide] == pytest.approx(t[TERMS.index("bytes")] * 9 / WIDE_ROW)
    assert t[cached_wide] == 0
    # csr: entries per row (8.998); ell pads every row to the longest (9)
    assert terms("csr-scalar", f, 0)[wide] / terms("csr-scalar", f, 0)[1] == pytest.approx(
        band.nnz / 4000 / WIDE_ROW)
    row = canonical_csr(sp.csr_matrix(np.ones((8, 200))))
    g = features_mod.features(row, simd_width=8)
    assert terms("csr-scalar", g, 0)[wide] == terms("csr-scalar", g, 0)[1]  # capped at 1


def test_fit_of_measurements_recovers_a_wide_row_penalty() -> None:
    """fit() on synthetic measurements (times from known coefficients on the calibration's own
    matrices, scaled down) recovers them: the form can express what ELL pays for wide rows and
    what a row per work-item pays for irregular rows on SIMD lanes."""
    mats = {k: canonical_csr(v) for k, v in calibrate_mod.benchmark_matrices(FakeDevice()).items()}
    feats = {k: features_mod.features(v, 8) for k, v in mats.items()}
    truth = {"ell": [2e-5, 1e-10, 5e-11, 2e-11, 0.0, 0.0, 4e-10, 0.0, 0.0, 2e-10, 0.0],
             "csr-scalar": [1e-5, 1e-10, 5e-11, 2e-11, 1e-9, 1e-9, 0.0, 2e-9, 0.0, 0.0, 3e-9]}
    cache = 1 << 20
    meas = calibrate_mod.Measurements("d", "1", cache, 1e10, feats)
    for k, f in feats.items():
        for fmt, coef in truth.items():
            if features_mod.refusal(fmt, f) is None:
                meas.kernel_s[(k, fmt)] = float(np.dot(coef, terms(fmt, f, cache)))
                meas.conversion_s[(k, fmt)] = 1e-3 + 1e-8 * f.entries
    cal = calibrate_mod.fit(meas, tuple(truth))
    for fmt in truth:
        assert cal.fit[fmt] < 0.05, (fmt, cal.fit[fmt])
    assert cal.launch_s == pytest.approx(meas.kernel_s[("launch", "csr-scalar")])
    wide = feats["wide-32"]
    assert cal.kernel_time("ell", wide) == pytest.approx(
        float(np.dot(truth["ell"], terms("ell", wide, cache))), rel=0.1)
    irregular = feats["powerlaw"]
    assert irregular.lane_padding > irregular.entries  # Zipf rows: most lanes idle
    assert cal.kernel_time("csr-scalar", irregular) == pytest.approx(
        float(np.dot(truth["csr-scalar"], terms("csr-scalar", irregular, cache))), rel=0.1)


def test_length_changes_by_hand() -> None:
    """Rows whose length differs from both rows before them; a constant length and two lengths
    alternating count none."""
    lengths = np.array([2, 2, 2, 5, 2, 5, 2, 7, 1])
    assert length_changes(lengths) == 3  # the first row of 5, the rows of 7 and 1
    assert length_changes(np.full(50, 9)) == 0
    assert length_changes(np.tile([6, 12], 25)) == 0
    assert length_changes(lengths[:2]) == 0
    cols = np.concatenate([np.arange(n) for n in lengths])  # row i: columns 0 .. length - 1
    rows = sp.csr_matrix((np.ones(cols.size), cols, np.r_[0, np.cumsum(lengths)]),
                         shape=(lengths.size, 8))
    assert features_mod.features(canonical_csr(rows), simd_width=8).length_changes == 3


def test_length_changes_term_on_cpus_in_the_cache_for_row_loops() -> None:
    """``length changes``: the changes times the cached share, for the formats with a loop per
    row in row order on a CPU; 0 for the formats whose ``even_loops`` hook says their loops do
    not (ell, dia, sell, pjds) and on lockstep devices (a GPU pays uneven rows as idle lanes)."""
    rng = np.random.default_rng(3)
    lengths = rng.poisson(8, 4000) + 1
    A = canonical_csr(sp.csr_matrix((np.ones(lengths.sum()), rng.integers(0, 4000, lengths.sum()),
                                     np.r_[0, np.cumsum(lengths)]), shape=(4000, 4000)))
    f = features_mod.features(A, simd_width=8)
    assert f.length_changes > 2000
    at = TERMS.index("length changes")
    assert terms("csr-blocks", f, cache_bytes=1 << 40)[at] == f.length_changes
    assert 0 < terms("csr-scalar", f, cache_bytes=1)[at] < 1e-3 * f.length_changes
    even = [n for n in FORMATS if FORMAT_CLASSES[n].even_loops]
    assert sorted(even) == ["dia", "ell", "pjds", "sell"]
    for fmt in even:
        assert terms(fmt, f, cache_bytes=1 << 40)[at] == 0
    gpu = features_mod.features(A, simd_width=32)
    assert terms("csr-blocks", gpu, cache_bytes=1 << 40)[at] == 0


def test_cache_share_from_the_probed_curve() -> None:
    """With the probe's whole miss curve, the share of a product's bytes in the cache is 1 less
    the curve's miss share at those bytes (a working set near the reported cache size mostly
    misses); without one, the reported cache over the bytes."""
    f = features_mod.features(canonical_csr(generate("gen:poisson2d:k=300")), 8)
    streamed = terms("csr-scalar", f, cache_bytes=1 << 40)[TERMS.index("cached bytes")]
    curve = [[streamed / 4, 0.0], [streamed * 4, 1.0]]  # half way up at the product's bytes
    t = terms("csr-scalar", f, cache_bytes=1 << 40, stream_miss=curve)
    assert t[TERMS.index("cached bytes")] == pytest.approx(streamed / 2)
    assert t[TERMS.index("bytes")] == pytest.approx(streamed / 2)
    assert terms("csr-scalar", f, cache_bytes=int(streamed // 4))[1] == pytest.approx(
        streamed * 3 / 4)


def test_lane_padding_by_hand() -> None:
    """Rows in SIMD-width groups in order, each group padded to its longest row."""
    f = features_mod.features(canonical_csr(SMALL), simd_width=2)  # lengths 2, 0 | 3, 1
    assert f.lane_padding == (2 * 2 - 2) + (2 * 3 - 4)


@pytest.mark.parametrize("simd", [8, 16, 32])
def test_idle_lanes_of_sorted_slices_are_their_own_padding_on_cpus(simd: int) -> None:
    """``idle lanes``: the rows in order for a format that runs them so (``csr-scalar``,
    ``ellr``); on CPUs for ``sell`` and ``pjds``, whose slices hold rows sorted by length,
    their own padding (slots less entries), which no order of the rows changes: on rows of
    Zipf lengths a small share of the rows in order's. On lockstep devices (SIMD width 32)
    theirs too are the rows in order's."""
    rng = np.random.default_rng(11)
    lengths = np.minimum(rng.zipf(1.8, 6000), 400)
    cols = rng.integers(0, 6000, lengths.sum())
    A = canonical_csr(sp.csr_matrix((np.ones(cols.size), cols, np.r_[0, np.cumsum(lengths)]),
                                    shape=(6000, 6000)))
    shuffled = canonical_csr(A[rng.permutation(6000)])
    at = TERMS.index("idle lanes")
    f, g = (features_mod.features(m, simd_width=simd) for m in (A, shuffled))
    assert f.lane_padding > f.entries
    for fmt in ("csr-scalar", "ellr"):
        assert terms(fmt, f)[at] == f.lane_padding
    for fmt in ("sell", "pjds"):
        own = f.slots_of(fmt) - f.entries
        if simd >= 32:
            assert terms(fmt, f)[at] == f.lane_padding
            continue
        assert terms(fmt, f)[at] == own == terms(fmt, g)[at]
        assert 0 < own < 0.1 * f.lane_padding


class FakeDevice:
    """The device facts benchmark_matrices reads (a 2-core CPU's, with a 1 MiB cache: the
    matrices' smallest sizes)."""

    type, simd_width, compute_units, cache_bytes = "cpu", 8, 2, 1 << 20


def test_calibrate_end_to_end_on_small_matrices(device, monkeypatch) -> None:
    """The measuring path, on three small matrices and two formats (seconds, not minutes)."""
    full = calibrate_mod.benchmark_matrices(device)
    small = {k: full[k][:2048, :2048] for k in ("tiny", "banded", "random")}
    monkeypatch.setattr(calibrate_mod, "benchmark_matrices", lambda dev: small)
    monkeypatch.setattr(probes, "X_PROBE_ENTRIES", 4096)
    monkeypatch.setattr(probes, "X_PROBE_MIB", (1, 2, 4))
    streams, copy_rate = [], bandwidth_mod.copy_rate

    def recorded(dev, repeat, progress=True):  # the reports' copy kernels, on 1 MiB buffers
        streams.append(copy_rate(dev, repeat, progress))
        return streams[-1]
    monkeypatch.setattr(bandwidth_mod, "buffer_bytes", lambda dev: 1 << 20)
    monkeypatch.setattr(bandwidth_mod, "copy_rate", recorded)
    cal = calibrate_mod.calibrate(device, progress=False, dtype=np.float32,
                                  formats=("csr-scalar", "ell"))
    assert cal.kind == "measured" and set(cal.kernel) == {"csr-scalar", "ell"}
    assert cal.launch_s >= 0 and cal.seconds > 0
    # the streaming prior is the best copy's rate, as the reports' yardstick measures it
    assert len(streams) == 1 and cal.stream_bw == streams[0] > 0
    probe = cal.measurements["x_probe"]
    assert len(probe["x_bytes"]) == len(probe["seconds"]) == 3 and probe["scattered_lines"] > 0
    assert [b for b, _ in cal.x_miss] == [1 << 20, 2 << 20, 4 << 20]
    for fmt in ("csr-scalar", "ell"):
        assert len(cal.kernel[fmt]) == len(TERMS) and min(cal.kernel[fmt]) >= 0
        assert len(cal.conversion[fmt]) == 3 and min(cal.conversion[fmt]) >= 0
    assert Calibration.from_json(json.loads(json.dumps(cal.to_json())), ("csr-scalar", "ell"))


def test_kernel_times_take_rounds_over_the_formats(device, monkeypatch) -> None:
    """One warm-up product per format, then rounds of one timed product of each format (a slow
    phase of the machine falls on every format alike), each after an untimed one of the same
    format; the fastest product is kept."""
    csr = canonical_csr(generate("gen:banded:n=3000,diags=5"), np.float32)
    precision = resolve(np.float32, np.float64)
    order: list[str] = []
    formats = {}
    for name in ("csr-scalar", "ell", "coo"):
        fmt = convert(csr, name, FORMAT_CLASSES[name].layout_for(device), precision)
        fmt.upload(device)
        launch = fmt.launch

        def logged(*args, _name=name, _launch=launch):
            order.append(_name)
            return _launch(*args)

        monkeypatch.setattr(fmt, "launch", logged)
        formats[name] = fmt
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], np.float32))
    y = cl_array.zeros(device.queue, csr.shape[0], np.float32)

    def once(dev, enqueue):  # a GPU's spin may time a product again (clspmv.cover): not here
        return events_ns(list(enqueue())), False

    monkeypatch.setattr(probes, "covered_ns", once)
    monkeypatch.setattr(probes, "STEADY_S", 0.0)
    times = probes.kernel_times(formats, x, y, 3)
    names = ["csr-scalar", "ell", "coo"]
    # a warm-up round, then rounds in which each timed product follows an untimed one of its
    # own format (its matrix back in the cache)
    paired = [n for n in names for _ in range(2)]
    assert order == names + paired * 3
    assert set(times) == set(formats) and all(t > 0 for t in times.values())
    # short products: rounds go on until each format's add up to STEADY_S, at most MAX_ROUNDS
    order.clear()
    monkeypatch.setattr(probes, "STEADY_S", 10.0)
    monkeypatch.setattr(probes, "MAX_ROUNDS" if device.type == "cpu" else "MAX_COVERED_ROUNDS",
                        7)
    probes.kernel_times(formats, x, y, 3)
    assert order == names + paired * 7
    # each format's rounds end at its own STEADY_S (at least `repeat` of them): a slow format
    # is not repeated while a fast one still needs products
    monkeypatch.setattr(probes, "STEADY_S", 0.01)
    per_product = {"csr-scalar": 0.004, "ell": 0.001, "coo": 0.0001}  # seconds

    def covered(device, enqueue):
        enqueue()
        return int(per_product[order[-1]] * 1e9), False

    monkeypatch.setattr(probes, "covered_ns", covered)
    order.clear()
    times = probes.kernel_times(formats, x, y, 2)
    fast = [n for n in ("ell", "coo") for _ in range(2)]
    assert order == names + paired * 3 + fast * 4  # csr-scalar: 3 x 4 ms >= 10 ms
    assert times == pytest.approx(per_product)
    assert probes.planned_rounds(per_product, 2, device.type) == {"csr-scalar": 3, "ell": 7,
                                                                  "coo": 7}


@pytest.mark.parametrize("spec", ["gen:powerlaw:n=30000,k=8,local=0.5", "gen:arrow:n=20000",
                                  "gen:emptyrows:n=40000,k=6,empty=0.7",
                                  "gen:banded:n=5000,diags=5"])
@pytest.mark.parametrize("fmt", ["coo", "hyb", "csr-merge", "csr-adaptive", "sell"])
@pytest.mark.parametrize("simd", ["device", 32])
def test_launches_count_the_kernels_a_product_enqueues(device, spec, fmt, simd) -> None:
    """The model's launch term is the number of kernels the format's product really enqueues
    (its events), for the default parameters of the device and of a GPU-like layout (SIMD
    width 32: the staged kernels, the GPU work-group sizes, the model's local memory)."""
    csr = canonical_csr(generate(spec))
    layout = FORMAT_CLASSES[fmt].layout_for(device)
    if simd != "device":
        cls = FORMAT_CLASSES[fmt]
        layout = replace(layout, simd_width=simd, local_memory=LOCAL_MEMORY,
                         work_group_size=cls.default_work_group("gpu"))
    m = convert(csr, fmt, layout, resolve(np.float64, np.float64), long_rows=0) if getattr(
        FORMAT_CLASSES[fmt], "splits_long_rows", False) else convert(
        csr, fmt, layout, resolve(np.float64, np.float64))
    m.upload(device)
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1]))
    y = cl_array.zeros(device.queue, csr.shape[0], np.float64)
    events = m.launch(device.queue, x.data, y.data, np.float64(1), np.float64(0))
    cl.wait_for_events(events)
    f = features_mod.features(csr, layout.simd_width)
    assert launches(fmt, f, layout.work_group_size) == len(events)


@pytest.mark.parametrize("spec", ["gen:powerlaw:n=30000,k=8,local=0.5", "gen:arrow:n=20000",
                                  "gen:emptyrows:n=40000,k=6,empty=0.7",
                                  "gen:banded:n=5000,diags=5"])
def test_work_items_follow_the_launch_geometry(device, spec) -> None:
    """The model's work-items term against the work-items the formats' main kernels really run
    on a GPU-like layout (SIMD width 32): csr-adaptive's row blocks and chunks times its
    work-group (estimated from the entries and rows: within 50 % on power-law rows),
    csr-merge's shares of the merge path
    and coo's shares of the entries (within rounding), csr-vector's rows times their lanes."""
    csr = canonical_csr(generate(spec))
    f = features_mod.features(csr, 32, compute_units=device.compute_units)
    for fmt in ("csr-adaptive", "csr-merge", "coo", "csr-vector"):
        cls = FORMAT_CLASSES[fmt]
        layout = replace(cls.layout_for(device), simd_width=32, local_memory=LOCAL_MEMORY,
                         work_group_size=cls.default_work_group("gpu"))
        p = convert(csr, fmt, layout, resolve(np.float64, np.float64)).params
        wg = layout.work_group_size
        if fmt == "csr-adaptive":
            actual, tolerance = (p["blocks"] + p["chunks"]) * wg, 0.5
        elif fmt == "csr-merge":
            actual, tolerance = p["shares"] * wg, 1.0 / p["shares"]
        elif fmt == "coo":
            actual, tolerance = csr.nnz / p["items"], 0.0
        else:  # csr-vector's kernel runs on the main part of its long-row split
            actual, tolerance = csr.shape[0] * p["threads_per_row"], 0.0
        part = features_mod.main_part(fmt, f)
        assert work_items(fmt, part, wg) == pytest.approx(actual, rel=tolerance + 1e-9), fmt


def test_measurements_round_trip_and_refit(tmp_path) -> None:
    """A calibration stores its measurements; refit() makes the same matrices from the stored
    device facts and fits the same coefficients without the device."""
    dev = FakeDevice()
    sizes = [1 << 20, 2 << 20, 4 << 20, 8 << 20, 16 << 20]
    seconds = [1e-3, 1e-3, 1.2e-3, 1.6e-3, 1.8e-3]
    probe = probes.XCacheProbe(sizes, seconds, 5e4)
    dev.far_x_bytes = probe.far_x_bytes
    mats = {k: canonical_csr(v) for k, v in calibrate_mod.benchmark_matrices(dev).items()}
    feats = {k: features_mod.features(v, 8) for k, v in mats.items()}
    facts = {"type": dev.type, "simd_width": dev.simd_width, "compute_units": dev.compute_units,
             "cache_bytes": dev.cache_bytes, "far_x_bytes": dev.far_x_bytes}
    meas = calibrate_mod.Measurements("d", "1", dev.cache_bytes, 1e10, feats, facts=facts,
                                      x_probe=probe)
    reference = feats["random"].cols * feats["random"].itemsize
    far = TERMS.index("far xbytes")
    coef = [1e-5, 1e-10, 5e-11, 2e-11, 1e-9, 1e-9, 0.0, 2e-9, probe.far_s_per_byte(reference),
            0.0, 0.0]
    for k, f in feats.items():
        meas.kernel_s[(k, "csr-scalar")] = float(np.dot(coef, terms(
            "csr-scalar", f, dev.cache_bytes, probe.curve(reference), probe.curve(sizes[0]))))
        meas.conversion_s[(k, "csr-scalar")] = 1e-3 + 1e-8 * f.entries
    cal = calibrate_mod.fit(meas, ("csr-scalar",))
    stored = Calibration.from_json(json.loads(json.dumps(cal.to_json())), ("csr-scalar",))
    again = calibrate_mod.refit(stored)
    assert again.kernel["csr-scalar"] == pytest.approx(cal.kernel["csr-scalar"], rel=1e-6)
    # the curve starts at the x of the random matrix, whose gathers the formats' own fit
    assert again.x_miss == cal.x_miss == probe.curve(reference)
    # a CPU's cache share by the probe's whole curve (a GPU's by its cache, measured apart)
    assert again.stream_miss == cal.stream_miss == probe.curve(sizes[0])
    gpu_meas = calibrate_mod.Measurements("d", "1", dev.cache_bytes, 1e10, feats,
                                          facts={**facts, "type": "gpu"}, x_probe=probe)
    gpu_meas.kernel_s = dict(meas.kernel_s)
    assert calibrate_mod.fit(gpu_meas, ("csr-scalar",)).stream_miss == []
    assert terms("csr-scalar", feats["random"], dev.cache_bytes, cal.x_miss)[far] == 0
    assert terms("csr-scalar", feats["random-far"], dev.cache_bytes, cal.x_miss)[far] > 0
    assert cal.kernel["csr-scalar"][far] == probe.far_s_per_byte(reference)  # the probe's
    bare = Calibration.from_json({**cal.to_json(), "measurements": None}, ("csr-scalar",))
    with pytest.raises(ValueError, match="stores no measurements to refit"):
        calibrate_mod.refit(bare)
