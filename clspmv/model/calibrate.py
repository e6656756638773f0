"""Calibration: micro-benchmarks generated from the device's facts, run in every format through
the library's own path, and the time models (:mod:`.timemodel`) fitted to them.

The benchmark matrices are :func:`.benchmarks.benchmark_matrices`, sized from the device. Every
format of one matrix is uploaded before any is timed, then the timed products go in rounds, one
product of each format per round (:func:`kernel_times`): a slow phase of a shared machine falls
on every format of the matrix alike instead of on one format's products.

:func:`calibrate` is :func:`measure` (the device's timings, :class:`Measurements`) then
:func:`fit` (the models from them); the calibration keeps the measurements, and :func:`refit`
fits them again in this version's model form without the device.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
from scipy.optimize import nnls

from ..canonical import canonical_csr
from ..device import Device
from ..formats import FORMAT_CLASSES, SINGLE_FORMATS, Format, convert
from ..precision import resolve
from ..version import __version__
from .benchmarks import benchmark_matrices
from .features import Features, features, refusal, with_exact_diagonals
from .launches import launches
from .timemodel import (
    CONVERSION_TERMS,
    TERMS,
    Calibration,
    conversion_terms,
    prior,
    terms,
)

REPEATS = 9
"""Timed products per (matrix, format), in rounds over the formats; the calibration keeps the
fastest (:func:`kernel_times`)."""
PRIOR_WEIGHT = 0.02
"""Weight of the pull towards the device-wide priors in the non-negative least-squares fit."""


def kernel_times(formats: dict[str, Format], x: cl_array.Array, y: cl_array.Array,
                 repeat: int) -> dict[str, float]:
    """The fastest of ``repeat`` products y = A x of each uploaded format (after one warm-up
    each), taken in ``repeat`` rounds of one product per format, in kernel seconds from the
    OpenCL profiling events of the kernels it enqueues, or the host clock around each product
    where the device's queue has no profiling (a user's queue). The fastest, not the median: on
    a CPU shared with other processes a product that lost a core to them runs up to twice as
    long (measured on a 2-core CPU: medians of 5 of the same product varied by 2x), and the
    model is of the device's own speed. Rounds, not each format's products in a row: on that
    CPU the fastest of 9 in a row still disagreed with itself (csr-scalar 0.44 ms on a matrix
    and 0.63 ms on one of the same rows, entries and closer columns)."""
    def product(fmt: Format) -> list:
        """Enqueue y = A x and wait for it; its events."""
        one, zero = fmt.dtype.type(1), fmt.dtype.type(0)
        events = fmt.launch(fmt.device.queue, x.data, y.data, one, zero) or []
        cl.wait_for_events(events)
        return events

    samples: dict[str, list[float]] = {name: [] for name in formats}
    for fmt in formats.values():
        product(fmt)
    for _ in range(repeat):
        for name, fmt in formats.items():
            t0 = time.perf_counter()
            events = product(fmt)
            if fmt.device.profiling:
                samples[name].append(sum(e.profile.end - e.profile.start for e in events)
                                     * 1e-9)
            else:
                samples[name].append(time.perf_counter() - t0)
    return {name: min(times) for name, times in samples.items()}


def stream_bandwidth(device: Device, nbytes: int) -> float:
    """Bytes per second of a device-to-device copy of ``nbytes`` (read plus write)."""
    ctx, queue = device.context, device.queue
    a = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    b = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, nbytes)
    cl.enqueue_fill_buffer(queue, a, np.uint8(1), 0, nbytes).wait()
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        ev = cl.enqueue_copy(queue, b, a)
        ev.wait()
        times.append((ev.profile.end - ev.profile.start) * 1e-9 if device.profiling
                     else time.perf_counter() - t0)
    return 2 * nbytes / max(min(times), 1e-9)


def _fit(rows: np.ndarray, measured: np.ndarray, start: list[float]) -> list[float]:
    """Non-negative least squares on relative errors, drawn towards ``start``."""
    A = rows / measured[:, None]
    norms = np.linalg.norm(A, axis=0)
    norms[norms == 0] = 1.0
    scaled = A / norms
    target_prior = np.asarray(start) * norms
    weight = np.sqrt(PRIOR_WEIGHT)
    lhs = np.vstack([scaled, weight * np.eye(A.shape[1])])
    rhs = np.concatenate([np.ones(len(measured)), weight * target_prior])
    x, _ = nnls(lhs, rhs, maxiter=50 * A.shape[1])
    return [float(v) for v in x / norms]


@dataclass
class Measurements:
    """What :func:`measure` times on a device, the input of :func:`fit`: per benchmark matrix its
    features, per (matrix, format) the kernel seconds (:func:`kernel_s`) and the conversion
    seconds. ``facts`` are the device facts :func:`benchmark_matrices` reads and ``dtype`` the
    value type measured: with them the matrices and their features can be made again without
    the device (:meth:`from_json`), so a calibration stores its measurements and a changed model
    form is refitted to them (:func:`refit`)."""

    device: str
    driver: str
    cache_bytes: int
    stream_bw: float
    features: dict[str, Features]
    kernel_s: dict[tuple[str, str], float] = field(default_factory=dict)
    conversion_s: dict[tuple[str, str], float] = field(default_factory=dict)
    seconds: float = 0.0
    facts: dict[str, object] = field(default_factory=dict)
    dtype: str = "float64"

    def to_json(self) -> dict[str, object]:
        """The timings and facts, JSON-ready (features are made again from the facts)."""
        def table(d: dict[tuple[str, str], float]) -> dict[str, dict[str, float]]:
            out: dict[str, dict[str, float]] = {}
            for (mat, fmt), seconds in d.items():
                out.setdefault(mat, {})[fmt] = seconds
            return out
        return {"device": self.device, "driver": self.driver, "cache_bytes": self.cache_bytes,
                "stream_bw": self.stream_bw, "seconds": self.seconds, "facts": self.facts,
                "dtype": self.dtype, "kernel_s": table(self.kernel_s),
                "conversion_s": table(self.conversion_s)}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Measurements:
        """Measurements of :meth:`to_json`, with the benchmark matrices' features made again
        from the stored device facts (KeyError / TypeError / ValueError when malformed)."""
        facts = dict(data["facts"])  # type: ignore[call-overload]
        dtype = np.dtype(str(data["dtype"]))
        mats = benchmark_matrices(SimpleNamespace(**facts))
        csrs = {k: canonical_csr(v, dtype) for k, v in mats.items()}
        feats = {k: with_exact_diagonals(features(v, int(facts["simd_width"])), v)  # type: ignore
                 for k, v in csrs.items()}

        def pairs(table: object) -> dict[tuple[str, str], float]:
            return {(mat, fmt): float(t) for mat, row in dict(table).items()  # type: ignore
                    for fmt, t in row.items() if mat in feats}
        return cls(str(data["device"]), str(data["driver"]), int(data["cache_bytes"]),
                   float(data["stream_bw"]), feats, pairs(data["kernel_s"]),
                   pairs(data["conversion_s"]), float(data["seconds"]), facts, dtype.name)


def measure(device: Device, progress: bool = True, dtype: object = np.float64,
            formats: Iterable[str] | None = None) -> Measurements:
    """Time every format of ``formats`` (default all) on :func:`benchmark_matrices` through
    :func:`clspmv.formats.convert` and :meth:`clspmv.formats.Format.upload` (the library's own
    path, at the format level: the model never imports :mod:`clspmv.matrix`), timing
    :meth:`~clspmv.formats.Format.launch` with the OpenCL profiling events of the kernels it
    enqueues (the fastest of :data:`REPEATS`, in rounds over the formats of a matrix:
    :func:`kernel_times`) and the conversion with the host
    clock, plus a device copy for the streaming bandwidth. ``dtype`` is the value type
    measured (float32 where the device has no fp64)."""
    from tqdm import tqdm

    start = time.perf_counter()
    names = tuple(formats or SINGLE_FORMATS)
    precision = resolve(dtype if device.fp64 else np.float32, np.float64)
    mats = {k: canonical_csr(v, precision.value) for k, v in benchmark_matrices(device).items()}
    feats = {k: with_exact_diagonals(features(v, device.simd_width), v)
             for k, v in mats.items()}
    largest = max(mats["banded"].data.nbytes * 2, 1 << 20)
    stream = stream_bandwidth(device, min(largest, device.max_allocation // 2))
    facts = {"type": device.type, "simd_width": device.simd_width,
             "compute_units": device.compute_units, "cache_bytes": device.cache_bytes}
    out = Measurements(device.name, device.driver_version, device.cache_bytes, stream, feats,
                       facts=facts, dtype=precision.value.name)
    bar = tqdm(total=len(mats) * len(names), desc=f"calibrating {device.name}",
               disable=not progress, unit="run")
    for key, csr in mats.items():
        x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
        y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
        uploaded: dict[str, Format] = {}
        for name in names:
            bar.update()
            if refusal(name, feats[key]) is not None:
                continue
            layout = FORMAT_CLASSES[name].layout_for(device)
            # the format's own kernel, unsplit: a prediction adds coo's model of a long-row tail
            # (clspmv.model.predict.kernel_time), as the features here carry no split
            own = ({"long_rows": 0} if getattr(FORMAT_CLASSES[name], "splits_long_rows", False)
                   else {})
            convert(csr[:64], name, layout, precision, **own).compile(device)  # builds untimed
            t0 = time.perf_counter()
            uploaded[name] = convert(csr, name, layout, precision, **own)
            uploaded[name].upload(device)
            device.queue.finish()
            out.conversion_s[(key, name)] = time.perf_counter() - t0
        for name, seconds in kernel_times(uploaded, x, y, REPEATS).items():
            out.kernel_s[(key, name)] = seconds
        del uploaded  # this matrix's device buffers, before the next matrix's
    bar.close()
    out.seconds = time.perf_counter() - start
    return out


def fit(meas: Measurements, formats: Iterable[str] | None = None) -> Calibration:
    """The calibration of :class:`Measurements`: the device-wide priors (launch overhead from
    the smallest matrix, gather bandwidth from the random matrix against the banded one) and every
    format's kernel and conversion coefficients fitted to its measured times (:func:`_fit`)."""
    names = tuple(formats or sorted({n for _, n in meas.kernel_s}))
    measured, feats, stream = meas.kernel_s, meas.features, meas.stream_bw
    smallest = "launch" if any(("launch", n) in measured for n in names) else "tiny"
    tiny = [measured[(smallest, n)] / launches(n, feats[smallest]) for n in names
            if (smallest, n) in measured]
    launch = min(tiny) if tiny else 0.0
    gather = _gather_bandwidth(measured, feats, names, stream)
    cal = Calibration(meas.device, meas.driver, __version__, "measured", meas.cache_bytes,
                      launch, stream, gather)
    for name in names:
        start_k = prior(launch, stream, gather)
        keys = [k for k in feats if (k, name) in measured]
        if keys:
            A = np.array([terms(name, feats[k], meas.cache_bytes) for k in keys])
            t = np.array([measured[(k, name)] for k in keys])
            cal.kernel[name] = _fit(A, t, start_k)
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
    cal = fit(measure(device, progress, dtype, names), names)
    cal.seconds = time.perf_counter() - start
    return cal


def refit(cal: Calibration) -> Calibration:
    """``cal`` fitted again, in this clspmv's model form, to the measurements it stores (a
    calibration measured by another version of the model, or on another machine: no device is
    needed); ValueError when it stores none."""
    if not cal.measurements:
        raise ValueError(f"the calibration of {cal.device} stores no measurements to refit")
    meas = Measurements.from_json(cal.measurements)
    out = fit(meas, tuple(cal.kernel))
    out.seconds = cal.seconds
    return out


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
