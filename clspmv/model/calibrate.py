"""Calibration: micro-benchmarks generated from the device's facts, run in every format through
the library's own path, and the time models (:mod:`.timemodel`) fitted to them.

The benchmark matrices (:func:`benchmark_matrices`) are sized from the device: the large ones
hold about :data:`CACHE_MULTIPLE` times the device's cache in CSR bytes (so they stream from
memory), bounded by :data:`MAX_ENTRIES` for the time budget; their rows are a multiple of the
SIMD width times the compute units. They vary what the models' terms measure: row-length
distribution (constant, power law, a few very long rows, 60 % empty rows), column locality
(banded vs uniformly random columns), size (a tiny one for the launch overhead, a medium one).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp
from scipy.optimize import nnls

from ..canonical import canonical_csr
from ..device import Device
from ..formats import FORMAT_CLASSES, SINGLE_FORMATS, Format, convert
from ..precision import resolve
from ..version import __version__
from .features import Features, features, refusal, with_exact_diagonals
from .timemodel import (
    CONVERSION_TERMS,
    LAUNCHES,
    TERMS,
    Calibration,
    conversion_terms,
    prior,
    terms,
)

CACHE_MULTIPLE = 3
MIN_ENTRIES = 200_000
MAX_ENTRIES = {"gpu": 6_000_000, "cpu": 4_000_000}
"""Entries of the large benchmark matrices at most (host conversion time bounds the budget:
60 s on the H200, 3 minutes on a 2-core CPU; 6 M entries in CSR are 72 MB, beyond a GPU L2)."""
REPEATS = 5
PRIOR_WEIGHT = 0.02
"""Weight of the pull towards the device-wide priors in the non-negative least-squares fit."""


def _from_lengths(lengths: np.ndarray, cols: int, spread: int | None, rng: np.random.Generator
                  ) -> sp.csr_matrix:
    """Rows of the given lengths; columns near the diagonal within ``spread`` (sorted, distinct
    positions of a window), or uniformly random when ``spread`` is None."""
    m = lengths.size
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    rows = np.repeat(np.arange(m, dtype=np.int64), lengths)
    if spread is None:
        idx = rng.integers(0, cols, indptr[-1])
    else:
        pos = np.arange(indptr[-1]) - np.repeat(indptr[:-1], lengths)
        width = np.maximum(lengths, spread)
        step = width[rows] // np.maximum(lengths[rows], 1)
        idx = rows * cols // max(m, 1) - width[rows] // 2 + pos * step
        idx = np.clip(idx, 0, cols - 1)
    A = sp.csr_matrix((np.ones(idx.size), (rows, idx)), shape=(m, cols))
    A.sum_duplicates()
    return A


def _from_offsets(m: int, offsets: np.ndarray) -> sp.csr_matrix:
    """Row r holds columns r + offsets inside [0, m) (a stencil or block pattern)."""
    rows = np.repeat(np.arange(m, dtype=np.int64), offsets.size)
    cols = rows + np.tile(offsets, m)
    keep = (cols >= 0) & (cols < m)
    A = sp.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])), shape=(m, m))
    A.sum_duplicates()
    return A


def benchmark_matrices(device: Device) -> dict[str, sp.csr_matrix]:
    """The calibration's matrices for ``device`` (deterministic: fixed seeds)."""
    rng = np.random.default_rng(10)
    kind = device.type if device.type in MAX_ENTRIES else "cpu"
    entries = int(np.clip(CACHE_MULTIPLE * device.cache_bytes / 12, MIN_ENTRIES, MAX_ENTRIES[kind]))
    unit = device.simd_width * device.compute_units
    m = max(unit, entries // 8 // unit * unit)
    powerlaw = np.minimum(rng.zipf(2.0, m) * 3, 512).astype(np.int64)
    long = np.full(m, 4, np.int64)
    long[rng.choice(m, 8, replace=False)] = max(entries // 40, 64)
    empty = np.where(rng.random(m) < 0.6, 0, 16).astype(np.int64)
    small = max(unit, 4096 // unit * unit)
    side = max(4, round((m // 3) ** (1 / 3)))
    return {
        "tiny": _from_lengths(np.full(small, 4, np.int64), small, 8, rng),
        "medium-banded": _from_lengths(np.full(m // 8, 8, np.int64), m // 8, 16, rng),
        "medium-random": _from_lengths(np.full(m // 8, 8, np.int64), m // 8, None, rng),
        "medium-wide": _from_lengths(np.full(m // 16, 32, np.int64), m // 8, 1000, rng),
        "medium-powerlaw": _from_lengths(powerlaw[: m // 8], m // 8, 64, rng),
        "banded": _from_lengths(np.full(m, 8, np.int64), m, 16, rng),
        "random": _from_lengths(np.full(m, 8, np.int64), m, None, rng),
        "powerlaw": _from_lengths(powerlaw, m, 64, rng),
        "long-rows": _from_lengths(long, m, 256, rng),
        "empty-rows": _from_lengths(empty, m, 32, rng),
        "wide": _from_lengths(np.full(m // 5, 40, np.int64), m, 2000, rng),
        "short-rows": _from_lengths(np.full(2 * m, 3, np.int64), 2 * m, 4, rng),
        "random-long": _from_lengths(np.full(m // 3, 24, np.int64), m, None, rng),
        "powerlaw-random": _from_lengths(powerlaw // 2 + 1, m, None, rng),
        "stencil": _from_offsets(m // 3, np.array([(i * side + j) * side + k for i in (-1, 0, 1)
                                                   for j in (-1, 0, 1) for k in (-1, 0, 1)])),
        "blocks": sp.block_diag([np.ones((5, 5))] * (m // 5), format="csr"),
    }


def median_kernel_s(fmt: Format, x: cl_array.Array, y: cl_array.Array, repeat: int) -> float:
    """Median kernel seconds of ``repeat`` products y = A x of the uploaded format ``fmt`` (after
    one warm-up), from the OpenCL profiling events of the kernels it enqueues, or the host clock
    around each product where the device's queue has no profiling (a user's queue)."""
    device = fmt.device
    queue = device.queue
    one, zero = fmt.dtype.type(1), fmt.dtype.type(0)
    cl.wait_for_events(fmt.launch(queue, x.data, y.data, one, zero) or [])
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        events = fmt.launch(queue, x.data, y.data, one, zero)
        cl.wait_for_events(events)
        if device.profiling:
            samples.append(sum(e.profile.end - e.profile.start for e in events) * 1e-9)
        else:
            samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


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
    return 2 * nbytes / max(statistics.median(times), 1e-9)


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


def calibrate(device: Device, progress: bool = True, dtype: object = np.float64,
              formats: Iterable[str] | None = None) -> Calibration:
    """Measure ``device`` and fit a time model per format (:mod:`.timemodel`).

    Runs every format of ``formats`` (default all) on :func:`benchmark_matrices` through
    :func:`clspmv.formats.convert` and :meth:`clspmv.formats.Format.upload` (the library's own
    path, at the format level: the model never imports :mod:`clspmv.matrix`), timing
    :meth:`~clspmv.formats.Format.launch` with the OpenCL profiling events of the kernels it
    enqueues (median of :data:`REPEATS`, after a warm-up) and the conversion with the host
    clock, plus a device copy for the streaming bandwidth. ``dtype`` is the value type
    measured (float32 where the device has no fp64).
    """
    from tqdm import tqdm

    start = time.perf_counter()
    names = tuple(formats or SINGLE_FORMATS)
    precision = resolve(dtype if device.fp64 else np.float32, np.float64)
    mats = {k: canonical_csr(v, precision.value) for k, v in benchmark_matrices(device).items()}
    feats = {k: with_exact_diagonals(features(v, device.simd_width), v)
             for k, v in mats.items()}
    largest = max(mats["banded"].data.nbytes * 2, 1 << 20)
    stream = stream_bandwidth(device, min(largest, device.max_allocation // 2))
    kernel_rows: dict[str, list[tuple[np.ndarray, float]]] = {f: [] for f in names}
    conv_rows: dict[str, list[tuple[np.ndarray, float]]] = {f: [] for f in names}
    measured: dict[tuple[str, str], float] = {}
    bar = tqdm(total=len(mats) * len(names), desc=f"calibrating {device.name}",
               disable=not progress, unit="run")
    for key, csr in mats.items():
        f = feats[key]
        x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
        y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
        for name in names:
            bar.update()
            if refusal(name, f) is not None:
                continue
            layout = FORMAT_CLASSES[name].layout_for(device)
            convert(csr[:64], name, layout, precision).compile(device)  # builds out of the timing
            t0 = time.perf_counter()
            fmt = convert(csr, name, layout, precision)
            fmt.upload(device)
            device.queue.finish()
            conv_rows[name].append((conversion_terms(name, f), time.perf_counter() - t0))
            t = median_kernel_s(fmt, x, y, REPEATS)
            measured[(key, name)] = t
            kernel_rows[name].append((terms(name, f, device.cache_bytes), t))
            del fmt
    bar.close()
    launch = min(measured[("tiny", n)] / LAUNCHES.get(n, 1) for n in names
                 if ("tiny", n) in measured)
    gather = _gather_bandwidth(measured, feats, names, stream)
    cal = Calibration(device.name, device.driver_version, __version__, "measured",
                      device.cache_bytes, launch, stream, gather)
    for name in names:
        start_k = prior(launch, stream, gather, LAUNCHES.get(name, 1))
        rows = kernel_rows[name]
        if rows:
            A = np.array([r for r, _ in rows])
            t = np.array([v for _, v in rows])
            cal.kernel[name] = _fit(A, t, start_k)
            pred = A @ np.array(cal.kernel[name])
            cal.fit[name] = float(np.median(np.abs(pred - t) / t))
        else:
            cal.kernel[name] = start_k
        crow = conv_rows[name]
        if crow:
            A = np.array([r for r, _ in crow])
            t = np.array([v for _, v in crow])
            per_entry = float(np.median(t / np.maximum(A[:, 1], 1)))
            cal.conversion[name] = _fit(A, t, [0.0, per_entry, 0.0])
        else:
            cal.conversion[name] = [1e-4, 0.0, 2e-8]
    cal.seconds = time.perf_counter() - start
    assert len(TERMS) == len(cal.kernel[names[0]]) and len(CONVERSION_TERMS) == 3
    return cal


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
