"""The quick calibration (clspmv.model.quick): its prior, its probes' work, the passes that catch
noise, and what it stores."""

from __future__ import annotations

import dataclasses
import importlib
import json
import runpy
import subprocess
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import scipy.sparse as sp

import clspmv
from clspmv import ell_order
from clspmv.errors import ClspmvWarning
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS
from clspmv.formats.layout import Layout
from clspmv.model import prior as prior_mod
from clspmv.model import prior_writer, quick_large, timemodel
from clspmv.model.features import features
from clspmv.model.probes import MEASURE_PASSES, NOISE_TOLERANCE, timed_in_passes
from clspmv.model.timemodel import TERMS

quick = importlib.import_module("clspmv.model.quick")
store = importlib.import_module("clspmv.model.store")
calibrate_mod = importlib.import_module("clspmv.model.calibrate")
probes = importlib.import_module("clspmv.model.probes")

A = sp.random(3000, 3000, density=2e-3, format="csr", random_state=3)


def no_full_calibration(monkeypatch) -> None:
    """Make every piece of the full calibration fail the test if it runs."""
    def never(*args, **kwargs):
        raise AssertionError("the full calibration ran")

    for module, name in ((calibrate_mod, "measure"), (calibrate_mod, "benchmark_matrices"),
                         (calibrate_mod, "probe_x_cache"), (store, "calibrate"),
                         (probes, "probe_x_cache")):
        monkeypatch.setattr(module, name, never)


# -- the prior ----------------------------------------------------------------------------------
def test_the_prior_covers_every_format_and_term() -> None:
    """The shipped prior (prior.json) names exactly the library's formats."""
    for kind in ("cpu", "gpu"):
        prior = prior_mod.prior_of(kind)
        assert set(prior.kernels) == set(SINGLE_FORMATS)
        assert all(len(c) == len(TERMS) and min(c) >= 0 for c in prior.kernels.values())
        assert set(prior.conversions) == set(SINGLE_FORMATS)
    assert prior_mod.prior_of("cpu").stream_miss and not prior_mod.prior_of("gpu").stream_miss


def _calibration(device: str, launch: float, stream: float, coef: list[float],
                 units: int = 1) -> dict:
    return {"device": device, "driver": "1", "launch_s": launch, "stream_bw": stream,
            "measurements": {"facts": {"compute_units": units}},
            "terms": list(TERMS), "conversion_terms": ["fixed", "entries", "slots"],
            "kernel": {"sell": coef}, "conversion": {"sell": [1.0, 2.0, 3.0]},
            "x_miss": [[1.0, 0.0], [2.0, 1.0]], "stream_miss": []}


def test_derive_takes_shapes_per_device_then_across_devices() -> None:
    """Coefficients over the device's scales (``longest`` over one compute unit's share of the
    streaming bandwidth); a device with several calibrations counts once (its median), then the
    median over devices."""
    n, longest = len(TERMS), TERMS.index("longest")
    a1 = _calibration("A", 2e-6, 1e10, [4e-6] + [3e-10] * (n - 1))  # shape [2, 3, 3, ...]
    a2 = _calibration("A", 2e-6, 1e10, [8e-6] + [5e-10] * (n - 1))  # shape [4, 5, 5, ...]
    b = _calibration("B", 1e-6, 1e11, [1e-6] + [1e-11] * (n - 1), units=4)  # [1, 1, .. 1/4 ..]
    got = prior_mod.derive([a1, a2, b])
    # A's median shape [3, 4, 4, ...], B's [1, 1, ...]: their median (of two) the mean
    want = [2.0] + [2.5] * (n - 1)
    want[longest] = (4 + 0.25) / 2
    assert got["kernel"]["sell"] == pytest.approx(want)
    assert got["conversion"]["sell"] == pytest.approx([1.0, 2.0, 3.0])
    walks = {**b, "kernel": {"dia": b["kernel"]["sell"]}}  # dia's longest: every row's work
    assert prior_mod.derive([walks])["kernel"]["dia"] == pytest.approx([1.0] * n)
    assert got["x_miss"] == [[1.0, 0.0], [2.0, 1.0]] and got["stream_miss"] == []
    with pytest.raises(ValueError, match="of another model form"):
        prior_mod.derive([{**b, "terms": ["launch"]}])


def test_one_work_items_critical_path_is_priced_per_compute_unit() -> None:
    """``longest`` (one work-item's rows, walked by one compute unit) scales with the units over
    the streaming bandwidth, the other terms with the bandwidth alone: the same probes fitted for
    a CPU of 16 units give its formats 8 times the ``longest`` of one of 2, relative to their
    other work in the cache (one multiplier for both); not ``dia`` and ``ell``, whose every
    work-item walks the longest row (every row's work, shared by the device)."""
    longest, cached = TERMS.index("longest"), TERMS.index("cached bytes")
    scale = prior_mod.scales(1e-6, 1e10, 16)
    assert scale[longest] == pytest.approx(16e-10) and scale[cached] == pytest.approx(1e-10)
    assert scale[TERMS.index("launch")] == 1e-6
    assert prior_mod.format_scales("dia", 1e-6, 1e10, 16)[longest] == pytest.approx(1e-10)
    assert prior_mod.format_scales("sell", 1e-6, 1e10, 16) == pytest.approx(scale)
    probes_, feats, dev, _ = _probes_of(np.ones(3))
    two = quick.fit_quick(probes_, feats, dev)
    sixteen = quick.fit_quick(probes_, feats, SimpleNamespace(**{**vars(dev), "compute_units": 16}))
    for f, factor in (("sell", 8.0), ("pjds", 8.0), ("ellr", 8.0), ("dia", 1.0), ("ell", 1.0)):
        assert two.kernel[f][longest] > 0, f
        per_unit = sixteen.kernel[f][longest] / two.kernel[f][longest]
        assert per_unit / (sixteen.kernel[f][cached] / two.kernel[f][cached]) == pytest.approx(
            factor), f


def _timed(device: str, times: dict[str, float]) -> dict:
    """A full calibration's JSON that measured ``sell`` on matrices ``times``' keys."""
    return {"device": device, "driver": "1",
            "measurements": {"kernel_s": {m: {"sell": t, "dia": 1.0} for m, t in times.items()}}}


def test_speedup_per_device_then_across_devices() -> None:
    """Per pair the median over the matrices both measured of before / after; a device with
    several pairs counts once (their median), then the median over devices."""
    after_a = _timed("A", {"m1": 1.0, "m2": 1.0, "m3": 1.0, "new": 5.0})
    pairs = [(_timed("A", {"m1": 2.0, "m2": 3.0, "m3": 9.0}), after_a),      # median 3
             (_timed("A", {"m1": 1.0, "m2": 1.0, "m3": 1.0}), after_a),      # median 1
             (_timed("B", {"m1": 1.5, "m2": 1.5}), _timed("B", {"m1": 1.0, "m2": 1.0}))]
    # A: median of 3 and 1 (2), B: 1.5; across the two devices their mean
    assert prior_mod.speedup(pairs, "sell") == pytest.approx(1.75)
    assert prior_mod.speedup(pairs, "dia") == pytest.approx(1.0)


def test_kernel_variants_speed_up_only_where_they_run() -> None:
    """The CPU prior's sell and pjds shapes are the row kernel's; divided by the work-item per
    slice's speed-up on a layout that runs it (PoCL 3.1's), kept on one that does not (Intel's:
    SIMD width 1; PoCL 3.0's)."""
    cpu = prior_mod.prior_of("cpu")
    assert set(cpu.variants) == {"sell", "pjds"}
    pocl = Layout(simd_width=16, work_group_size=256, compute_units=2, local_memory=1 << 21,
                  gathers_slices=True)
    intel = Layout(simd_width=1, work_group_size=256, compute_units=2, local_memory=1 << 21)
    for fmt, variants in cpu.variants.items():
        faster = variants["slice_items"]
        assert 1.2 < faster < 2.0
        assert cpu.kernel_shape(fmt, pocl) == pytest.approx([c / faster for c in cpu.kernels[fmt]])
        assert cpu.kernel_shape(fmt, intel) == cpu.kernels[fmt] == cpu.kernel_shape(fmt)
        assert cpu.kernel_shape(fmt, dataclasses.replace(pocl, gathers_slices=False)) == \
            cpu.kernels[fmt]
    assert cpu.kernel_shape("csr-blocks", pocl) == cpu.kernels["csr-blocks"]
    assert not prior_mod.prior_of("gpu").variants


def test_shipped_prior_is_made_from_its_sources(tmp_path: Path, monkeypatch) -> None:
    """prior.json is what ``python -m clspmv.model.prior_writer`` makes from the committed
    sources (the speed-ups of KERNEL_CHANGES included), in a checkout that holds them."""
    shipped = prior_mod.PRIOR_FILE.read_text()
    commits = json.loads(shipped)["commit"].split("+")
    git = ["git", "-C", str(Path(prior_mod.__file__).parent)]
    if any(subprocess.run([*git, "cat-file", "-e", c], capture_output=True).returncode
           for c in commits):
        pytest.skip("this checkout does not hold the commits of the prior's sources")
    monkeypatch.setattr(prior_writer, "PRIOR_FILE", tmp_path / "prior.json")
    prior_writer.main(commits[0])
    assert (tmp_path / "prior.json").read_text() == shipped


def test_the_prior_fits_again_only_the_formats_counting_their_own_idle_lanes() -> None:
    """``sell`` and ``pjds`` count their slices' padding as their idle lanes (not the rows in
    order's): the prior's writer fits them again from the sources' timings and keeps every
    other format's stored coefficients."""
    assert prior_writer.counts_own_lanes("sell") and prior_writer.counts_own_lanes("pjds")
    assert not any(prior_writer.counts_own_lanes(f) for f in ("csr-blocks", "ellr", "dia", "coo"))
    assert not prior_writer.counts_own_lanes("no-such-format")


# -- the fit ------------------------------------------------------------------------------------
def _fake_device(kind: str = "cpu") -> SimpleNamespace:
    return SimpleNamespace(name="Fake", driver_version="1", type=kind, cache_bytes=1 << 25,
                           simd_width=16, compute_units=132 if kind == "gpu" else 2)


SCALES = {"cpu": (1.2e-7, 4e10), "gpu": (3.8e-6, 4e12)}
"""A launch cost and streaming bandwidth of each class, as its full calibrations measured."""


def _probes_of(true_multipliers: np.ndarray, kind: str = "cpu",
              own: dict[str, float] | None = None):
    """Quick probes timed as the prior of ``kind``, scaled by :data:`SCALES`, the group
    multipliers ``true_multipliers`` and, per format of ``own``, its work in the cache by its
    factor, predicts them (conversions at twice the prior's); with the features of the probe
    matrices, the device and that true calibration."""
    dev = _fake_device(kind)
    mats = quick.probe_matrices(dev.simd_width, dev.compute_units)
    feats = {k: features(v.astype(np.float64), dev.simd_width) for k, v in mats.items()}
    prior = prior_mod.prior_of(kind)
    launch, stream = SCALES[kind]
    truth = quick.Calibration("Fake", "1", "0", "quick", dev.cache_bytes, launch, stream, stream,
                              x_miss=prior.x_miss, stream_miss=prior.stream_miss)
    group = quick._group_of_term()
    in_cache = group == list(quick.GROUPS).index("cache")
    truth.kernel = {f: list(np.asarray(prior.kernel_shape(f)) * true_multipliers[group]
                            * prior_mod.format_scales(f, launch, stream, dev.compute_units)
                            * np.where(in_cache, (own or {}).get(f, 1.0), 1.0))
                    for f in SINGLE_FORMATS}
    truth.conversion = {f: [2 * c for c in prior.conversion(f)] for f in SINGLE_FORMATS}
    pairs = [(m, f) for m in feats for f in quick.probe_formats(kind)]
    kernel_s = {(m, f): truth.kernel_time(f, feats[m]) for m, f in pairs}
    conversion_s = {(m, f): truth.conversion_time(f, feats[m]) for m, f in pairs}
    return quick.QuickProbes(kernel_s, conversion_s, stream, 2, 0.01, []), feats, dev, truth


def _time_ratios(cal, truth, f: str, feats) -> np.ndarray:
    """The fitted calibration's kernel times of ``f`` over the true ones, per probe matrix."""
    return np.array([cal.kernel_time(f, feats[m]) / truth.kernel_time(f, feats[m])
                     for m in feats])


def _scaled_by(cal, base, f: str, group: str) -> set[float]:
    """The factors (rounded) by which ``cal`` scales the terms of ``group`` (of
    :data:`clspmv.model.quick.GROUPS`) of ``f`` that ``base`` does not set to 0."""
    terms = [TERMS.index(t) for t in quick.GROUPS[group] if base.kernel[f][TERMS.index(t)] > 0]
    return {round(cal.kernel[f][t] / base.kernel[f][t], 6) for t in terms}


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_the_fit_finds_the_group_multipliers(kind) -> None:
    """Probes of a device whose work in the cache costs twice the prior's: the fitted model
    predicts the probed formats on the probe matrices close to that device's times (their work
    in the cache about twice, the group's multiplier times their own, their memory traffic
    unscaled); the formats no probe times take the group's multiplier alone, one for all, the
    pull sharing the factor of 2 with the probed formats' own; conversions at twice the
    prior's."""
    probes_, feats, dev, truth = _probes_of(np.array([1.0, 1.0, 2.0]), kind)
    cal = quick.fit_quick(probes_, feats, dev)
    assert cal.kind == "quick" and cal.measurement == quick.QUICK_MEASUREMENT
    stream = SCALES[kind][1]
    assert cal.stream_bw == stream and cal.measurements["quick"]["stream_bw"] == stream
    unscaled = quick.fit_quick(_probes_of(np.ones(3), kind)[0], feats, dev)
    shared = set()
    for f in SINGLE_FORMATS:
        assert cal.conversion[f] == pytest.approx(truth.conversion[f])
        assert all(m == pytest.approx(1, rel=0.1) for m in _scaled_by(cal, unscaled, f, "memory"))
        (cached,) = _scaled_by(cal, unscaled, f, "cache")  # one multiplier for all those terms
        if f in quick.probe_formats(kind):
            np.testing.assert_allclose(_time_ratios(cal, truth, f, feats), 1, rtol=0.05,
                                       err_msg=f)
            assert 1.8 < cached < 2.05, f
        else:
            shared.add(cached)
    assert len(shared) == 1 and 1.4 < shared.pop() < 1.9


@pytest.mark.parametrize("kind", ["cpu", "gpu"])
def test_each_probed_format_gets_its_own_multiplier_of_its_work_in_the_cache(kind) -> None:
    """Probes of a device whose ellr costs three times the prior's in the cache, every other
    format as the prior: ellr's own multiplier takes most of it (its times predicted, its memory
    traffic unscaled) and the other probed formats keep their times. The pull lends a little of
    the factor to the cache group's multiplier (the other probed formats' own multipliers cancel
    it): the formats no probe times share that small one."""
    probes_, feats, dev, truth = _probes_of(np.ones(3), kind, own={"ellr": 3.0})
    cal = quick.fit_quick(probes_, feats, dev)
    unscaled = quick.fit_quick(_probes_of(np.ones(3), kind)[0], feats, dev)
    np.testing.assert_allclose(_time_ratios(cal, truth, "ellr", feats), 1, rtol=0.12)
    (cached,) = _scaled_by(cal, unscaled, "ellr", "cache")
    assert 2.4 < cached < 3.05
    shared = set()
    for f in SINGLE_FORMATS:
        assert all(m == pytest.approx(1, rel=0.1) for m in _scaled_by(cal, unscaled, f, "memory"))
        if f in quick.probe_formats(kind) and f != "ellr":
            np.testing.assert_allclose(_time_ratios(cal, truth, f, feats), 1, rtol=0.05,
                                       err_msg=f)
        elif f not in quick.probe_formats(kind):
            shared |= _scaled_by(cal, unscaled, f, "cache")
    assert len(shared) == 1 and 1.0 < shared.pop() < 1.4


LARGE_FACTORS = {"csr-blocks": 4.0, "sell": 2.0, "pjds": 3.0, "dia": 1.5}
"""How many times the model's time the large probes take per format, in the tests below (dia:
on the band alone, as :func:`~clspmv.model.quick_large.large_probe_plan` times it)."""
IRREGULAR = ("csr-blocks", "sell", "pjds")
"""The formats of :data:`LARGE_FACTORS` timed on the large probes' irregular rows."""
BAND_SHARED = 1.3
"""How many times the model's time ``csr-blocks`` takes on the large band, where it is timed
there (a CPU whose ``sell`` runs a work-item per row): the part every format shares."""


def _fitted_with_large(stream_miss: list[list[float]], rows: int = 4096,
                       layout: Layout | None = None):
    """A quick calibration of a device as the prior predicts it in the cache, whose large probes
    (``rows`` rows each) take :data:`LARGE_FACTORS` times the model's time, fitted with a prior
    whose stream miss curve is ``stream_miss`` on a device of ``layout`` (default
    :data:`POCL31`); the fit without the large probes, and their features."""
    layout = layout or POCL31
    prior = dataclasses.replace(prior_mod.prior_of("cpu"), stream_miss=stream_miss)
    probes_, feats, dev, _ = _probes_of(np.ones(3))
    plain = quick.fit_quick(probes_, feats, dev, prior=prior, layout=layout)
    large = {k: features(v.astype(np.float64), dev.simd_width)
             for k, v in quick_large.large_matrices(dev.simd_width, dev.compute_units,
                                                    rows).items()}
    plan = quick_large.large_probe_plan(layout)
    probes_.large_s = {(m, f): plain.kernel_time(f, large[m]) * (
        BAND_SHARED if m == quick_large.BANDED and f in IRREGULAR else LARGE_FACTORS[f])
                       for m, names in plan.items() for f in names
                       if quick.refusal(f, large[m]) is None}
    assert {f for _, f in probes_.large_s} == set(LARGE_FACTORS)
    assert {m for m, f in probes_.large_s if f == "dia"} == {quick_large.BANDED}
    return (quick.fit_quick(probes_, {**feats, **large}, dev, prior=prior, layout=layout), plain,
            large)


def test_large_probes_correct_each_formats_model_beyond_the_cache() -> None:
    """Large probes (their stream missing the cache half the time) that take 1.5-4 times the
    model's time, by format: each timed format's ratio (dia's from the band), the untimed ones
    their trial family's (csr-merge the CSR kernels') or the format their ``beyond_cache_like``
    names (the ELL layouts and bsr: csr-blocks'); a product missing the cache
    as much takes the whole ratio, one missing it twice as much the ratio to the power of
    LARGE_EXTRAPOLATION at most, one in the cache none."""
    curve = [[1e4, 0.0], [1e5, 0.5], [1e9, 0.5], [1e12, 1.0]]  # the large probes at 0.5
    cal, plain, large = _fitted_with_large(curve)
    assert cal.large_miss == pytest.approx(0.5, abs=0.01)
    assert cal.large_ratio == pytest.approx(
        {**{f: 4.0 for f in SINGLE_FORMATS if FORMAT_CLASSES[f].trial_family == "csr"},
         **{f: LARGE_FACTORS["csr-blocks"] for f in ("ell", "ellr", "ellr-t", "hyb", "bsr")},
         "sell": 2.0, "pjds": 3.0, "dia": 1.5}, rel=0.02)
    assert cal.large_whole == ["dia"]
    plan = quick_large.large_probe_plan(POCL31)
    for m, f in large.items():
        for name in plan[m]:
            if quick.refusal(name, f) is None:
                assert cal.kernel_time(name, f) == pytest.approx(
                    plain.kernel_time(name, f) * LARGE_FACTORS[name], rel=0.02), (m, name)
    tiny = features(sp.random(50, 50, 0.1, "csr", random_state=1), 16)  # 3 kB: in the cache
    assert cal.large_factor("sell", tiny) == 1.0
    cal.stream_miss = [[1e4, 0.0], [1e5, 1.0]]  # now missing the cache twice as often
    beyond = cal.large_factor("sell", large["large-random"])
    assert beyond == pytest.approx(2.0 ** timemodel.LARGE_EXTRAPOLATION, rel=0.02)


POCL31 = Layout(16, 256, 2, 1 << 20, gathers_slices=True)
"""A CPU layout where sell and pjds run their work-item per slice (PoCL from 3.0 on)."""


def test_large_probes_on_cpus_split_by_gathers_where_no_variant_runs() -> None:
    """The large probes time csr-blocks, sell and pjds on every CPU (on the irregular rows; dia
    on the band), none on a GPU; a
    format's own part of the correction follows the gathers only where sell and pjds run a
    work-item per row (PoCL before 3.0; Intel's runtime, which vectorises across work-items),
    not where they run the prior's work-item per slice (PoCL from 3.0 on); there csr-blocks is
    timed on the band too (the part every format shares)."""
    assert quick.prior_of("cpu").variants["sell"] == pytest.approx({"slice_items": 1.439},
                                                                    rel=1e-3)
    old_pocl = dataclasses.replace(POCL31, gathers_slices=False)
    intel = Layout(1, 256, 2, 1 << 20, vectorises_work_items=True)
    probed = {"csr-blocks", "sell", "pjds"}
    for layout, band in ((POCL31, ("dia",)), (old_pocl, ("dia", "csr-blocks")),
                         (intel, ("dia", "csr-blocks"))):
        assert set(quick_large.large_probe_formats(layout)) == probed
        assert quick_large.large_probe_plan(layout) == {
            "large-powerlaw": quick_large.large_probe_formats(layout),
            "large-random": quick_large.large_probe_formats(layout),
            quick_large.BANDED: band}
    assert quick_large.large_probe_formats(Layout(32, 256, 132, 48 << 10)) == ()
    assert quick_large.large_probe_plan(Layout(32, 256, 132, 48 << 10)) == {}
    assert not quick_large.corrects_by_gathers(POCL31)
    assert quick_large.corrects_by_gathers(old_pocl) and quick_large.corrects_by_gathers(intel)
    assert not quick_large.corrects_by_gathers(Layout(32, 256, 132, 48 << 10))


def test_a_formats_own_correction_follows_the_gathers_where_no_variant_runs() -> None:
    """On a CPU whose sell runs a work-item per row, the large probes (random columns, at the
    stream's miss share 0.5) give every format the shared ratio, csr-blocks' on the large band
    (a product gathering no scattered x), and its own part over it as far as a product gathers
    as scattered as theirs: a product like theirs takes its whole ratio (csr-blocks' from the
    irregular rows alone), a band of the same miss share the shared ratio alone, but dia (timed
    on the large band alone) its own ratio whole; the split survives a round trip through the
    calibration file."""
    curve = [[1e4, 0.0], [1e5, 0.5], [1e9, 0.5], [1e12, 1.0]]
    cal, plain, large = _fitted_with_large(  # rows enough for x to lie beyond the gathers' window
        curve, rows=1 << 18, layout=dataclasses.replace(POCL31, gathers_slices=False))
    shared = BAND_SHARED
    assert cal.large_shared == pytest.approx(shared, rel=0.02)
    assert cal.large_ratio["csr-blocks"] == pytest.approx(LARGE_FACTORS["csr-blocks"], rel=0.02)
    assert cal.large_scatter == pytest.approx(
        np.median([timemodel.scattered_share(f) for m, f in large.items()
                   if m != quick_large.BANDED]))
    assert 0.8 < cal.large_scatter <= 1.0  # random columns: nearly every gather scattered
    for m in ("large-powerlaw", "large-random"):  # their gathers: the whole ratio
        for name in IRREGULAR:
            if quick.refusal(name, large[m]) is None:
                assert cal.kernel_time(name, large[m]) == pytest.approx(
                    plain.kernel_time(name, large[m]) * LARGE_FACTORS[name], rel=0.05), (m, name)
    band = features(sp.diags([np.ones(1 << 19)] * 8, range(8), format="csr"), 16)
    assert timemodel.scattered_share(band) < 1e-3
    power = min(timemodel.LARGE_EXTRAPOLATION, timemodel.stream_miss_share(
        timemodel.streamed_bytes("sell", band), cal.cache_bytes, cal.stream_miss) / cal.large_miss)
    assert power > 0.5
    for name in IRREGULAR:
        assert cal.large_factor(name, band) == pytest.approx(shared ** power, rel=1e-3)
    dia_power = min(timemodel.LARGE_EXTRAPOLATION, timemodel.stream_miss_share(
        timemodel.streamed_bytes("dia", band), cal.cache_bytes, cal.stream_miss) / cal.large_miss)
    assert cal.large_factor("dia", band) == pytest.approx(1.5 ** dia_power, rel=1e-3)
    back = quick.Calibration.from_json(json.loads(json.dumps(cal.to_json())), SINGLE_FORMATS)
    assert back.large_factor("sell", band) == cal.large_factor("sell", band)
    assert back.large_factor("dia", band) == cal.large_factor("dia", band)
    assert back.large_factor("sell", large["large-random"]) == pytest.approx(
        cal.large_factor("sell", large["large-random"]))
    # probes without csr-blocks on the band (an earlier plan's): the irregular rows' geometric mean
    irregular = {(m, f): plain.kernel_time(f, large[m]) * LARGE_FACTORS[f]
                 for m in ("large-powerlaw", "large-random") for f in IRREGULAR
                 if quick.refusal(f, large[m]) is None}
    alone = quick_large.large_correction(plain, irregular, large, SINGLE_FORMATS, True)
    assert alone.shared == pytest.approx(
        float(np.exp(np.mean(np.log([LARGE_FACTORS[f] for f in IRREGULAR])))), rel=0.02)


def test_large_probes_in_the_cache_correct_nothing() -> None:
    """Large probes whose products the cache holds (a miss share below LARGE_MIN_MISS): no
    correction, the model as fitted in the cache; a stored calibration without one reads back
    the same."""
    cal, plain, large = _fitted_with_large([[1e3, 0.0], [1e12, 0.1]])
    assert (cal.large_ratio, cal.large_miss) == ({}, 0.0)
    for f in large.values():
        assert cal.kernel_time("sell", f) == plain.kernel_time("sell", f)
    back = quick.Calibration.from_json(json.loads(json.dumps(cal.to_json())), SINGLE_FORMATS)
    assert back.large_ratio == {} and back.kernel_time("sell", f) == cal.kernel_time("sell", f)


def test_the_fit_takes_the_prior_it_is_given() -> None:
    """A prior passed in (a cross-validation's, derived without the device) replaces the
    shipped one: a format no probe times keeps that prior's shape, scaled as the shipped one's
    would be (the same probes, the same multipliers)."""
    probes_, feats, dev, _ = _probes_of(np.array([1.0, 1.5, 2.0]))
    shipped = prior_mod.prior_of("cpu")
    unprobed = next(f for f in SINGLE_FORMATS if f not in quick.probe_formats("cpu"))
    doubled = prior_mod.ClassPrior(
        {**shipped.kernels, unprobed: [2 * c for c in shipped.kernels[unprobed]]},
        shipped.conversions, shipped.x_miss, shipped.stream_miss, shipped.variants)
    default = quick.fit_quick(probes_, feats, dev)
    given = quick.fit_quick(probes_, feats, dev, prior=doubled)
    assert given.kernel[unprobed] == pytest.approx([2 * c for c in default.kernel[unprobed]],
                                                   rel=1e-9)
    for f in quick.probe_formats("cpu"):
        assert given.kernel[f] == pytest.approx(default.kernel[f], rel=1e-9)


# -- the cross-validation (tools/quick_crossval.py) -----------------------------------------------
CROSSVAL = runpy.run_path(str(Path(__file__).resolve().parent.parent / "tools"
                              / "quick_crossval.py"))


def _scored(dearer: str = "", cost: float = 1.0) -> dict[str, tuple[float, str, str]]:
    """The tool's score of a quick calibration fitted to the synthetic probes of a device whose
    full calibration is the shipped CPU prior (scaled), but with the format ``dearer`` costing
    ``cost`` times the prior's, on two small matrices."""
    dev = _fake_device()
    shipped = prior_mod.prior_of("cpu")
    launch, stream = SCALES["cpu"]
    truth = quick.Calibration("Fake", "1", "0", "measured", dev.cache_bytes, launch, stream,
                              stream, x_miss=shipped.x_miss, stream_miss=shipped.stream_miss)
    truth.kernel = {f: list(np.asarray(shipped.kernel_shape(f))
                            * prior_mod.format_scales(f, launch, stream, dev.compute_units)
                            * (cost if f == dearer else 1.0)) for f in SINGLE_FORMATS}
    truth.conversion = {f: shipped.conversion(f) for f in SINGLE_FORMATS}
    facts = {"simd_width": dev.simd_width, "compute_units": dev.compute_units}
    probes_ = CROSSVAL["synthetic_probes"](truth, "cpu", CROSSVAL["probe_features"](facts),
                                           np.random.default_rng(0), 0.0, 1.0)
    assert {f for _, f in probes_.kernel_s} == set(quick.probe_formats("cpu"))
    cal = quick.fit_quick(probes_, CROSSVAL["probe_features"](facts), dev, prior=shipped)
    side = 300
    line = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(side, side))
    mats = {"poisson": sp.kronsum(line, line, format="csr"), "random": A.tocsr()}
    key = (dev.simd_width, dev.compute_units)
    feats = {k: {key: features(v, dev.simd_width, compute_units=dev.compute_units)}
             for k, v in mats.items()}
    return CROSSVAL["ratios"](truth, cal, feats, key)


def test_the_cross_validation_scores_the_quick_choice_by_the_full_model() -> None:
    """A device whose shapes are the prior's: the quick choice is the full one everywhere (dia
    on the 2-D Poisson matrix, pjds on the random one). The same device with dia or pjds ten
    times dearer: the probes time them, and the quick calibration leaves them. With hyb, which
    no probe times, at 0.3 of the prior's cost: the quick calibration still takes dia on the
    Poisson matrix, and the tool scores that choice by the full model's times."""
    cpu = quick.probe_formats("cpu")
    assert "dia" in cpu and "pjds" in cpu and "hyb" not in cpu
    same = _scored()
    assert all(r == 1.0 and pick == best for r, pick, best in same.values())
    assert same["poisson"][1] == "dia" and same["random"][1] == "pjds"
    probed = _scored("dia", 10.0)
    assert probed["poisson"][1] != "dia" and probed["poisson"][0] <= 1.05
    probed = _scored("pjds", 10.0)
    assert probed["random"][1] != "pjds" and probed["random"][0] <= 1.05
    cheap = _scored("hyb", 0.3)
    ratio, pick, best = cheap["poisson"]
    assert pick == "dia" and best == "hyb" and ratio > 1.25
    assert CROSSVAL["summary"]([r for r, _, _ in cheap.values()]) == (1, 2, ratio)
    assert CROSSVAL["machine_of"]({"device": "pthread-skylake-avx512-AMD EPYC"}) == \
        CROSSVAL["machine_of"]({"device": "pthread-AMD EPYC"}) == "AMD EPYC"


# -- passes and noise ---------------------------------------------------------------------------
def _reference(*seconds: float):
    """A reference timing returning ``seconds`` in turn (the last one after them)."""
    left = list(seconds)
    return lambda: left.pop(0) if len(left) > 1 else left[0]


def test_keys_timed_while_the_reference_ran_slow_are_timed_again() -> None:
    timed: list[str] = []
    got = timed_in_passes(["a", "b", "c"], timed.append, _reference(1.0, 1.0, 2.0, 1.0, 1.0))
    # the reference slow between b and c: both timed again, then steady
    assert timed == ["a", "b", "c", "b", "c"] and got.noisy == [] and got.passes == 2
    assert got.reference_s == [1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    assert got.slowest == pytest.approx(1.0)


def test_keys_never_timed_steadily_are_flagged_after_the_last_pass() -> None:
    timed: list[str] = []
    slow = 1.0 + 2 * NOISE_TOLERANCE
    got = timed_in_passes(["a", "b"], timed.append, _reference(1.0, *[slow] * 99))
    assert timed == ["a", "b"] * MEASURE_PASSES and got.noisy == ["a", "b"]
    assert got.passes == MEASURE_PASSES
    steady = timed_in_passes(["a"], [].append, _reference(1.0, 1.0 + NOISE_TOLERANCE / 2))
    assert steady.noisy == [] and steady.passes == 1


# -- on the device: work, kind, noise -----------------------------------------------------------
class Spy:
    """Counts of the quick calibration's work: conversions (and their entries), products."""

    def __init__(self, monkeypatch) -> None:
        self.conversions, self.entries, self.products = 0, 0, 0
        convert = quick.convert

        def counted_convert(csr, name, *args, **kwargs):
            self.conversions += 1
            self.entries += csr.nnz
            fmt = convert(csr, name, *args, **kwargs)
            launch = fmt.launch

            def counted_launch(*a, **k):
                self.products += 1
                return launch(*a, **k)
            fmt.launch = counted_launch
            return fmt
        monkeypatch.setattr(quick, "convert", counted_convert)


def _large_probes(device) -> dict[str, sp.csr_matrix]:
    """The large probe matrices the quick calibration times on ``device`` (none on a GPU)."""
    plan = quick_large.large_probe_plan(Layout.for_device(device))
    mats = quick_large.large_probe_matrices(device.simd_width, device.compute_units)
    return {k: mats[k] for k in plan}


def test_first_use_measures_the_quick_calibration_only(measured_device, first_use_cache,
                                                       monkeypatch) -> None:
    """The first format="auto" on an empty cache measures the quick calibration, within a bound
    of work (conversions, entries converted, products), never the full benchmark set, and stores
    it with kind "quick", on a CPU after the ELL order (recorded in it, as a full calibration
    records it); the next use reads it."""
    assert not ell_order.stored(measured_device)
    no_full_calibration(monkeypatch)
    spy = Spy(monkeypatch)
    M = clspmv.DeviceMatrix.from_scipy(A, device=measured_device)
    assert M.selection.calibration == "quick"
    x = np.linspace(-1, 1, A.shape[1])
    np.testing.assert_allclose((M @ x), A @ x, rtol=1e-10, atol=1e-12)
    matrices = quick.probe_matrices(measured_device.simd_width, measured_device.compute_units)
    kind = quick.prior_class(measured_device.type)
    per_matrix = len(quick.probe_formats(kind))
    large = _large_probes(measured_device)
    per_large = len(quick_large.large_probe_formats(Layout.for_device(measured_device)))
    # + the untimed builds; a large matrix's formats converted again in each pass
    assert spy.conversions <= (len(matrices) + 1) * per_matrix + (
        MEASURE_PASSES * len(large) * per_large)
    assert spy.entries <= sum(m.nnz for m in matrices.values()) * per_matrix + (
        MEASURE_PASSES * per_large * sum(m.nnz for m in large.values())) + 1000
    most_rounds = probes.max_rounds(measured_device.type) + 1  # + the warm-up
    assert 0 < spy.products <= MEASURE_PASSES * spy.conversions * 2 * most_rounds
    data = json.loads(store.calibration_path(measured_device).read_text())
    assert data["kind"] == "quick" and data["measurement"] == quick.QUICK_MEASUREMENT
    timed_large = {tuple(k.split("/")) for k in data["measurements"]["quick"]["large_s"]}
    assert {m for m, _ in timed_large} == set(large)  # none on a GPU
    plan = quick_large.large_probe_plan(Layout.for_device(measured_device))
    assert timed_large == {(m, f) for m, names in plan.items() for f in names
                           if quick.refusal(f, features(large[m].astype(np.float64),
                                                        measured_device.simd_width)) is None}
    assert bool(data["large_ratio"]) == bool(large)
    assert store.load(measured_device).large_ratio == data["large_ratio"]
    assert set(data["kernel"]) == set(SINGLE_FORMATS)
    assert 1 <= data["measurements"]["quick"]["passes"] <= MEASURE_PASSES
    lockstep = Layout.for_device(measured_device).lockstep
    assert ell_order.stored(measured_device) != lockstep
    assert (data.get("ell_row_major_width", 0), data.get("ell_scattered_row_major_width", 0)) == (
        (0, 0) if lockstep else ell_order.row_major_widths(measured_device))
    store.forget()
    before = spy.conversions
    again = clspmv.DeviceMatrix.from_scipy(A, device=measured_device)
    assert again.selection.calibration == "quick" and spy.conversions == before


def test_noisy_probes_are_measured_again_then_flagged(measured_device, first_use_cache,
                                                      monkeypatch) -> None:
    """The reference product's timings (monkeypatched) slow after every probe matrix: the
    probes timed MEASURE_PASSES times, then the calibration stored flagged with one
    ClspmvWarning; slow after the first matrix only: that matrix and the next timed again, and
    nothing flagged."""
    monkeypatch.setattr(quick, "PROBE_ROWS", 2048)  # the passes matter here, not the sizes
    monkeypatch.setattr(quick_large, "LARGE_ROWS", 4096)
    real_probe = quick.kernel_times
    timed: list[str] = []
    factors: list[float] = []

    def probe(formats, x, y, repeat, run=None):
        timed.append(len(y))
        return real_probe(formats, x, y, 2, run)

    def reference(formats, x, y, repeat, run=None):  # the reference's times, injected
        return {k: 1e-3 * (factors.pop(0) if factors else 1.0) for k in formats}
    monkeypatch.setattr(quick, "kernel_times", probe)
    monkeypatch.setattr(calibrate_mod, "kernel_times", reference)
    matrices = len(quick.probe_matrices(measured_device.simd_width,
                                        measured_device.compute_units))
    matrices += len(_large_probes(measured_device))
    matrices += len(quick.block_probe_matrices(quick.prior_class(measured_device.type)))

    factors.extend([1.0] + [3.0] * 100)
    with pytest.warns(ClspmvWarning, match="measured noise: a reference product ran up to") as said:
        cal = store.calibration(measured_device, progress=False)
    assert len(said) == 1 and "clspmv calibrate --device" in str(said[0].message)
    assert len(timed) == MEASURE_PASSES * matrices and cal.measurements["quick"]["passes"] == 3
    assert len(store.noisy(cal)) == matrices
    assert store.noisy(store.load(measured_device)) == store.noisy(cal)

    store.forget()
    store.calibration_path(measured_device).unlink()
    timed.clear()
    factors.clear()
    factors.extend([1.0, 1.0, 3.0])  # slow after the second matrix only
    with warnings.catch_warnings():
        warnings.simplefilter("error", ClspmvWarning)
        cal = store.calibration(measured_device, progress=False)
    assert len(timed) == matrices + 2 and not store.noisy(cal)
    assert cal.measurements["quick"]["passes"] == 2


def test_quick_probes_refuse_what_a_format_refuses() -> None:
    """The power-law probe is too uneven for ELLR (its padding): it is left out, not failed."""
    mats = quick.probe_matrices(16, 2)
    f = features(mats["powerlaw"].astype(np.float64), 16)
    assert quick.refusal("ellr", f) is not None and quick.refusal("csr-scalar", f) is None


def test_beyond_cache_lenders_are_timed_by_the_large_probes() -> None:
    """A format that takes another's correction beyond the cache (``beyond_cache_like``) names
    one the large probes time, so that the correction it borrows is measured, not a median."""
    lenders = {cls.name: cls.beyond_cache_like for cls in FORMAT_CLASSES.values()
               if cls.beyond_cache_like is not None}
    borrowers = ("ell", "ellr", "ellr-t", "hyb", "bsr")
    assert {f: lenders.get(f) for f in borrowers} == dict.fromkeys(borrowers, "csr-blocks")
    assert set(lenders.values()) <= set(quick_large.large_probe_formats(POCL31))
