"""Calibration: micro-benchmarks generated from the device's facts, run in every format through
the library's own path, and the time models (:mod:`.timemodel`) fitted to them.

The benchmark matrices are :func:`.benchmarks.benchmark_matrices`, sized from the device. Every
format of one matrix is uploaded before any is timed, then the timed products go in rounds, one
product of each format per round (:func:`kernel_times`): a slow phase of a shared machine falls
on every format of the matrix alike instead of on one format's products. A reference product
timed before and after each matrix (:class:`Sentinel`) catches a slow phase that lasts: a matrix
timed while it ran slow is timed again, and one still slow after
:data:`clspmv.model.probes.MEASURE_PASSES` timings is flagged in the measurements
(``noisy``) with one :class:`~clspmv.errors.ClspmvWarning`.

:func:`calibrate` is :func:`measure` (the device's timings,
:class:`.measurements.Measurements`) then :func:`fit` (the models from them); the calibration
keeps the measurements, and :func:`refit` fits them again in this version's model form without
the device.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Iterable
from types import SimpleNamespace
from typing import Any

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp
from scipy.optimize import nnls

from .. import bandwidth
from ..canonical import canonical_csr
from ..device import Device
from ..errors import ClspmvWarning
from ..formats import FORMAT_CLASSES, SINGLE_FORMATS, Format, convert
from ..precision import Precision, resolve
from ..probing import ProbeRun, refuse_simulator
from ..version import __version__
from .benchmarks import benchmark_matrices, small_matrices
from .features import Features, features, refusal, with_exact_diagonals
from .launches import launches
from .measurements import MEASUREMENT, Measurements
from .order_probe import probe_format, store_ell_order
from .probes import (
    MEASURE_PASSES,
    REPEATS,
    kernel_times,
    probe_x_cache,
    reference_format,
    timed_in_passes,
)
from .timemodel import (
    CONVERSION_TERMS,
    TERMS,
    Calibration,
    conversion_terms,
    prior,
)

logger = logging.getLogger(__name__)

SENTINEL_ROWS = 1 << 16
"""Rows of the reference product's band (0.5 M entries: in a CPU's cache, a few tenths of a
millisecond a product on the 2-core CPU)."""
PRIOR_WEIGHT = 0.02
"""Weight of the pull towards the device-wide priors in the non-negative least-squares fit."""
FAR_TERM = TERMS.index("far xbytes")
"""The coefficient every format takes from the x cache probe instead of its own fit: a gather
missing the cache costs what the memory system makes it cost, and on a 2-core CPU the one
calibration matrix beyond the x cache let a free fit set it anywhere from 0 to 30000 times the
probe's value, explaining noise in the few others whose x just passes the cache."""


def _fit(rows: np.ndarray, measured: np.ndarray, start: list[float],
         fixed: tuple[int, ...] = ()) -> list[float]:
    """Non-negative least squares on relative errors, drawn towards ``start``; the coefficients
    at ``fixed`` stay at their ``start`` values (measured elsewhere) and the others fit what
    they leave."""
    start_v = np.asarray(start, np.float64)
    free = np.array([i not in fixed for i in range(rows.shape[1])])
    left = 1.0 - rows[:, ~free] @ start_v[~free] / measured
    A = rows[:, free] / measured[:, None]
    norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    scaled = A / norms
    target_prior = start_v[free] * norms
    weight = np.sqrt(PRIOR_WEIGHT)
    lhs = np.vstack([scaled, weight * np.eye(A.shape[1])])
    rhs = np.concatenate([left, weight * target_prior])
    x, _ = nnls(lhs, rhs, maxiter=50 * A.shape[1])
    out = start_v.copy()
    out[free] = x / norms
    return [float(v) for v in out]


def measure(device: Device, progress: bool = True, dtype: object = np.float64,
            formats: Iterable[str] | None = None) -> Measurements:
    """Time every format of ``formats`` (default all) on :func:`benchmark_matrices` through
    :func:`clspmv.formats.convert` and :meth:`clspmv.formats.Format.upload` (the library's own
    path, at the format level: the model never imports :mod:`clspmv.matrix`), timing
    :meth:`~clspmv.formats.Format.launch` with the OpenCL profiling events of the kernels it
    enqueues (the fastest of :data:`REPEATS`, in rounds over the formats of a matrix:
    :func:`kernel_times`) and the conversion with the host
    clock, plus the streaming bandwidth (:func:`clspmv.bandwidth.copy_rate`) and the x cache probe
    (:func:`clspmv.model.probes.probe_x_cache`, first: its miss curve sizes the benchmark
    matrix of random gathers beyond the cache). ``dtype`` is the value type measured (float32
    where the device has no fp64). DeviceError on a simulator, where nothing is measured
    (:func:`clspmv.probing.refuse_simulator`)."""
    from tqdm import tqdm

    refuse_simulator(device, "a calibration")

    start = time.perf_counter()
    names = tuple(formats or SINGLE_FORMATS)
    precision = resolve(dtype if device.fp64 else np.float32, np.float64)
    with tqdm(desc=f"calibrating {device.name}", disable=not progress, unit="run") as bar:
        out = _measure(device, names, precision, bar, progress)
    out.seconds = time.perf_counter() - start
    return out


def _measure(device: Device, names: tuple[str, ...], precision: Precision, bar: Any,
             progress: bool) -> Measurements:
    """:func:`measure`'s steps, on its progress bar ``bar``."""
    probe = probe_x_cache(device, precision, progress)
    facts = {"type": device.type, "simd_width": device.simd_width,
             "compute_units": device.compute_units, "cache_bytes": device.cache_bytes,
             "far_x_bytes": probe.far_x_bytes}
    if not FORMAT_CLASSES[probe_format()].layout_for(device).lockstep:
        # the device's ELL order first: the formats below are timed in the layouts it gives
        order = store_ell_order(device, precision)
        facts["ell_row_major_width"] = order.row_major_width
        facts["ell_scattered_row_major_width"] = order.scattered_row_major_width
    mats = {k: canonical_csr(v, precision.value)
            for k, v in benchmark_matrices(SimpleNamespace(**facts)).items()}
    bar.total = 1 + len(mats) * len(names)
    bar.update()
    feats = {k: with_exact_diagonals(features(v, device.simd_width), v)
             for k, v in mats.items()}
    # the reports' yardstick: copy kernels over buffers beyond the cache (a single copy command
    # of a buffer the cache held gave PoCL 5.0 on a 16-core Xeon 12 GB/s, a seventh of what its
    # products stream: MEASUREMENT 10)
    stream = bandwidth.copy_rate(device, REPEATS, progress)
    out = Measurements(device.name, device.driver_version, device.cache_bytes, stream, feats,
                       facts=facts, dtype=precision.value.name, x_probe=probe)
    sentinel = Sentinel(device, precision)

    timed: set[str] = set()

    def time_matrix(key: str) -> None:
        if key in timed:
            bar.total += len(names)  # timed again: another pass
        timed.add(key)
        _time_matrix(device, key, mats[key], feats[key], names, precision, out, bar)

    passes = timed_in_passes(list(mats), time_matrix, sentinel.seconds)
    out.noisy, out.sentinel_s = passes.noisy, passes.reference_s
    return out


class Sentinel:
    """The reference product timed before and after every calibration matrix or probe
    (:func:`clspmv.model.probes.reference_format` on a band of :data:`SENTINEL_ROWS` rows of 8
    entries, :func:`clspmv.model.probes.timed_in_passes`): where it ran slower than its fastest
    by more than :data:`clspmv.model.probes.NOISE_TOLERANCE`, other work took the device
    meanwhile and that matrix is timed again."""

    def __init__(self, device: Device, precision: Precision) -> None:
        csr = canonical_csr(small_matrices(device.simd_width, device.compute_units,
                                           SENTINEL_ROWS)["banded"], precision.value)
        name = reference_format()
        self.fmt = convert(csr, name, FORMAT_CLASSES[name].layout_for(device), precision)
        self.fmt.upload(device)
        self.x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
        self.y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
        self.device = device

    def seconds(self) -> float:
        """The reference product's kernel seconds now (the fastest of its rounds)."""
        with ProbeRun(self.device, "the calibration's reference product", None,
                      progress=False) as run:
            return kernel_times({"sentinel": self.fmt}, self.x, self.y, REPEATS, run)["sentinel"]


def _time_matrix(device: Device, key: str, csr: sp.csr_matrix, feats: Features,
                 names: tuple[str, ...], precision: Precision, out: Measurements,
                 bar: Any) -> None:
    """Convert, upload and time every format of ``names`` that accepts the calibration matrix
    ``key`` (``csr``), keeping in ``out`` the fastest kernel and conversion seconds of this and
    any earlier timing of it; a step of ``bar`` per format."""
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
    y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
    uploaded: dict[str, Format] = {}
    for name in names:
        bar.update()
        if refusal(name, feats) is not None:
            continue
        layout = FORMAT_CLASSES[name].layout_for(device)
        # the format's own kernel, unsplit: a prediction adds coo's model of a long-row tail
        # (clspmv.model.predict.kernel_time), as the features here carry no split
        own = ({"long_rows": 0} if getattr(FORMAT_CLASSES[name], "splits_long_rows", False)
               else {})
        convert(csr[:64], name, layout, precision, **own).compile(device)  # builds untimed
        t0 = time.perf_counter()
        # owned: timed as from_scipy converts (on a CPU, the arrays used in place)
        uploaded[name] = convert(csr, name, layout, precision, owned=True, **own)
        uploaded[name].upload(device)
        device.queue.finish()
        seconds = time.perf_counter() - t0
        out.conversion_s[(key, name)] = min(seconds, out.conversion_s.get((key, name), seconds))
    # each matrix's timing bounded like a probe (a device far slower than its facts)
    with ProbeRun(device, f"calibration timing of {key}", None, progress=False) as run:
        for name, seconds in kernel_times(uploaded, x, y, REPEATS, run).items():
            out.kernel_s[(key, name)] = min(seconds, out.kernel_s.get((key, name), seconds))
    del uploaded  # this matrix's device buffers, before the next matrix's


def fit(meas: Measurements, formats: Iterable[str] | None = None) -> Calibration:
    """The calibration of :class:`Measurements`: the device-wide priors (launch overhead from
    the smallest matrix, gather bandwidth from the random matrix against the banded one, the
    miss curve of gathers from x and the cost of a miss from the probe) and every format's
    kernel and conversion coefficients fitted to its measured times (:func:`_fit`)."""
    names = tuple(formats or sorted({n for _, n in meas.kernel_s}))
    measured, feats, stream = meas.kernel_s, meas.features, meas.stream_bw
    smallest = "launch" if any(("launch", n) in measured for n in names) else "tiny"
    tiny = [measured[(smallest, n)] / launches(n, feats[smallest]) for n in names
            if (smallest, n) in measured]
    launch = min(tiny) if tiny else 0.0
    gather = _gather_bandwidth(measured, feats, names, stream)
    probe = meas.x_probe
    # the far term extends the gathers fitted on the random matrix to larger x (XCacheProbe)
    reference = feats["random"].cols * feats["random"].itemsize if "random" in feats else 0
    x_miss = probe.curve(reference) if probe else []
    # a CPU's cached share by the probe's whole curve (timemodel: the reported cache is more
    # than a product keeps); a GPU's by its reported cache
    stream_miss = (probe.curve(probe.x_bytes[0])
                   if probe and meas.facts.get("type", "cpu") == "cpu" else [])
    cal = Calibration(meas.device, meas.driver, __version__, "measured", meas.cache_bytes,
                      launch, stream, gather, x_miss=x_miss, stream_miss=stream_miss,
                      measurement=MEASUREMENT,
                      ell_row_major_width=int(meas.facts.get("ell_row_major_width", 0)),
                      ell_scattered_row_major_width=int(
                          meas.facts.get("ell_scattered_row_major_width", 0)))
    for name in names:
        start_k = prior(launch, stream, gather,
                        probe.far_s_per_byte(reference) if probe else 0.0)
        keys = [k for k in feats if (k, name) in measured]
        if keys:
            A = np.array([cal.terms(name, feats[k]) for k in keys])
            t = np.array([measured[(k, name)] for k in keys])
            cal.kernel[name] = _fit(A, t, start_k, fixed=(FAR_TERM,))
            pred = A @ np.array(cal.kernel[name])
            cal.fit[name] = float(np.median(np.abs(pred - t) / t))
        else:
            cal.kernel[name] = start_k
        keys = [k for k in feats if (k, name) in meas.conversion_s]
        if keys:
            A = np.array([conversion_terms(name, feats[k]) for k in keys])
            t = np.array([meas.conversion_s[(k, name)] for k in keys])
            per_entry = float(np.median(t / np.maximum(A[:, 1], 1)))
            cal.conversion[name] = _fit(A, t, [0.0, per_entry, 0.0])
        else:
            cal.conversion[name] = [1e-4, 0.0, 2e-8]
    cal.seconds = meas.seconds
    if meas.facts:
        cal.measurements = meas.to_json()
    assert all(len(c) == len(TERMS) for c in cal.kernel.values()) and len(CONVERSION_TERMS) == 3
    return cal


def calibrate(device: Device, progress: bool = True, dtype: object = np.float64,
              formats: Iterable[str] | None = None) -> Calibration:
    """Measure ``device`` (:func:`measure`) and fit a time model per format (:func:`fit`,
    :mod:`.timemodel`); ``seconds`` is the whole calibration's time."""
    start = time.perf_counter()
    names = tuple(formats or SINGLE_FORMATS)
    meas = measure(device, progress, dtype, names)
    cal = fit(meas, names)
    cal.seconds = time.perf_counter() - start
    if meas.noisy:
        warnings.warn(
            f"the calibration of {device.name} measured noise: a reference product ran up to "
            f"{max(meas.sentinel_s) / min(meas.sentinel_s) - 1:.0%} slower than its fastest "
            f"while {len(meas.noisy)} of its matrices were timed, {MEASURE_PASSES} times "
            f"({', '.join(meas.noisy[:4])}); the calibration is flagged and its choices of "
            "format may be off. Measure it again on a quiet machine: clspmv calibrate --force "
            f"--device {device.index[0]}:{device.index[1]}", ClspmvWarning, stacklevel=2)
    return cal


def refit(cal: Calibration) -> Calibration:
    """``cal`` fitted again, in this clspmv's model form, to the measurements it stores (a
    calibration measured by another version of the model, or on another machine: no device is
    needed); ValueError when it stores none."""
    if not cal.measurements:
        raise ValueError(f"the calibration of {cal.device} stores no measurements to refit")
    meas = Measurements.from_json(cal.measurements)
    out = fit(meas, tuple(cal.kernel))
    out.seconds, out.measurement = cal.seconds, cal.measurement  # the same timings
    return out


def refit_stored(data: dict[str, object], formats: tuple[str, ...] = SINGLE_FORMATS
                 ) -> Calibration:
    """The calibration stored as ``data`` (a calibration file's JSON, fitted in this model form
    or an earlier one) fitted again in this form to the timings it keeps (:func:`refit`: its
    coefficients are not read); ValueError when it is malformed, keeps no timings or has no
    coefficients of a format of ``formats`` (default: every single format; the prior,
    :mod:`.prior`, refits calibrations older than some formats with their own)."""
    kernel = data.get("kernel")
    if not isinstance(kernel, dict):
        raise ValueError("malformed calibration: no kernel coefficients")
    form = {**data, "terms": list(TERMS), "kernel": {k: [0.0] * len(TERMS) for k in kernel}}
    return refit(Calibration.from_json(form, formats))


def _gather_bandwidth(measured: dict[tuple[str, str], float], feats: dict[str, Features],
                      names: tuple[str, ...], stream: float) -> float:
    """Bytes per second of the cache lines of x that the random-column matrix gathers beyond the
    banded one (same rows and entries), in the format fastest on both."""
    both = [n for n in names if ("random", n) in measured and ("banded", n) in measured]
    if not both:
        return stream / 4
    best = min(both, key=lambda n: measured[("random", n)])
    extra_s = measured[("random", best)] - measured[("banded", best)]
    extra_lines = feats["random"].x_lines - feats["banded"].x_lines
    if extra_s <= 0 or extra_lines <= 0:
        return stream
    return float(min(stream, extra_lines * 64 / extra_s))
