"""The one timing path of the benchmarks: what each number means is written once, in
:mod:`clspmv.bench.methodology` (copied into every results.json); here is how it is taken.

* :func:`time_kernels` / :func:`time_events`: the profiling events a product leaves in
  :attr:`clspmv.DeviceMatrix.last_events`, first kernel's start to last kernel's end, each
  product queued behind a spin kernel that hides the host's enqueueing (:mod:`clspmv.cover`),
  after warm-up, over repeats (:func:`summarize`);
  :func:`time_side_by_side`: the same for several formats of a matrix, in alternating rounds.
* :func:`time_kernels_and_wall`: the kernel time and, in the same rounds, the wall time of one
  product from a numpy x to a numpy y; :func:`time_host`: a host call
  (scipy, MKL, a solve); :func:`time_wall_once`: a one-time cost (a transposed copy).
* :func:`convert`: host conversion and upload by the library's own path, timed separately.
* cuSPARSE is timed by CUDA events in :mod:`clspmv.bench.baseline_cusparse`, summarised here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .. import formats
from ..cover import matrix_ns
from ..device import Device
from ..formats import FORMAT_CLASSES
from ..matrix import DeviceMatrix
from ..precision import Precision

DEFAULT_MAX_SECONDS = 10.0
"""Time allowed for the repeats of one measurement; fewer repeats (at least MIN_REPEATS) are run
when the warm-up shows that ``repeat`` products would take longer."""
MIN_REPEATS = 3
WARMUP_S = 0.02
"""Warm-up rounds go on, beyond ``warmup``, until they have taken this long (at most
:data:`MAX_WARMUP` of them): short products reach their steady speed only after tens of them
back to back (:data:`clspmv.model.probes.STEADY_S`)."""
MAX_WARMUP = 200
T = TypeVar("T")


@dataclass(frozen=True)
class Timing:
    """Summary of repeated timings, in milliseconds; ``uncovered``: samples of a product timed by
    its kernels whose host part the spin did not hide (:mod:`clspmv.cover`)."""

    median_ms: float
    min_ms: float
    max_ms: float
    repeats: int
    uncovered: int = 0


def summarize(samples_ns: list[float] | np.ndarray, uncovered: int = 0) -> Timing:
    """Median, minimum and maximum of nanosecond samples, in milliseconds."""
    a = np.asarray(samples_ns, dtype=np.float64)
    if a.size == 0:
        raise ValueError("no timing samples")
    return Timing(float(np.median(a)) / 1e6, float(a.min()) / 1e6, float(a.max()) / 1e6, a.size,
                  uncovered)


def _summarize_covered(samples: list[tuple[int, bool]]) -> Timing:
    return summarize([ns for ns, _ in samples], sum(missed for _, missed in samples))


def repeats_within(first_seconds: float, repeat: int,
                   max_seconds: float = DEFAULT_MAX_SECONDS) -> int:
    """``repeat``, or fewer (at least MIN_REPEATS) if ``repeat`` runs of ``first_seconds`` each
    would exceed ``max_seconds``."""
    if first_seconds <= 0 or repeat * first_seconds <= max_seconds:
        return repeat
    return max(min(MIN_REPEATS, repeat), int(max_seconds / first_seconds))


def _rounds(one_round: Callable[[int], T], warmup: int, repeat: int,
            max_seconds: float) -> list[T]:
    """What ``one_round(i)`` returns for the timed rounds ``i = 0, 1, ...``: ``repeat`` of them,
    or fewer if the untimed rounds before them (``i < 0``: ``warmup`` of them, at least one,
    more until they have taken :data:`WARMUP_S`, at most :data:`MAX_WARMUP`) show that
    ``repeat`` would take longer than ``max_seconds`` (:func:`repeats_within`)."""
    start = time.perf_counter()
    done = 0
    while done < max(warmup, 1) or (done < MAX_WARMUP
                                    and time.perf_counter() - start < WARMUP_S):
        done += 1
        one_round(-done)
    per_round = (time.perf_counter() - start) / done
    return [one_round(i) for i in range(repeats_within(per_round, repeat, max_seconds))]


def _device_vectors(M: DeviceMatrix, x: np.ndarray) -> tuple[cl_array.Array, cl_array.Array]:
    """x (in ``M``'s value type) and an output y, resident on ``M``'s device."""
    queue = M.device.queue
    return (cl_array.to_device(queue, np.asarray(x, M.dtype)),
            cl_array.empty(queue, M.shape[0], M.dtype))


def time_events(M: DeviceMatrix, product: Callable[[], object], *, warmup: int = 2,
                repeat: int = 10, max_seconds: float = DEFAULT_MAX_SECONDS) -> Timing:
    """Kernel time of ``product()``, a product of ``M`` on device-resident arrays: the
    profiling events it leaves in ``M.last_events`` (queued behind :mod:`clspmv.cover`'s spin),
    after ``warmup`` untimed products."""
    return _summarize_covered(_rounds(lambda _: matrix_ns(M, product), warmup, repeat,
                                      max_seconds))


def time_kernels(M: DeviceMatrix, x: np.ndarray, *, warmup: int = 2, repeat: int = 10,
                 max_seconds: float = DEFAULT_MAX_SECONDS) -> Timing:
    """Kernel time of ``y = A x`` with x and y resident on ``M``'s device (beta = 0)."""
    x_dev, y_dev = _device_vectors(M, x)
    return time_events(M, lambda: M.matvec(x_dev, y_dev), warmup=warmup, repeat=repeat,
                       max_seconds=max_seconds)


def time_side_by_side(matrices: dict[str, DeviceMatrix], x: np.ndarray, *, warmup: int = 2,
                      repeat: int = 10, max_seconds: float = DEFAULT_MAX_SECONDS
                      ) -> dict[str, Timing]:
    """Kernel times of ``y = A x`` for several matrices of one shape on one device (one matrix
    in several formats), taken side by side: ``repeat`` rounds of one product of each, after
    ``warmup`` rounds, so that a slow phase of a shared machine falls on every matrix alike
    (:func:`time_kernels` takes one matrix's repeats in a row, minutes apart from another's:
    docs/methodology.md, "Noise"). Each
    timed product follows an untimed one of the same matrix, so that a matrix the cache holds
    is timed from the cache, as in a row (:func:`clspmv.model.probes.kernel_times` says what
    rounds alone measured)."""
    x_dev, y_dev = _device_vectors(next(iter(matrices.values())), x)

    def one_round(_: int) -> dict[str, tuple[int, bool]]:
        out = {}
        for name, M in matrices.items():  # each timed right after one untimed product of its
            M.matvec(x_dev, y_dev)  # own: a matrix the cache holds is timed from the cache
            out[name] = matrix_ns(M, lambda M=M: M.matvec(x_dev, y_dev))
        return out

    rounds = _rounds(one_round, warmup, repeat, max_seconds)
    return {name: _summarize_covered([r[name] for r in rounds]) for name in matrices}


def time_wall_once(work: Callable[[], object], finish: Callable[[], object]) -> float:
    """Milliseconds of one call of ``work`` until ``finish()`` returns (the queue is idle): a
    one-time cost such as building a transposed copy."""
    t0 = time.perf_counter()
    work()
    finish()
    return (time.perf_counter() - t0) * 1e3


def time_host(product: Callable[[], object], *, warmup: int = 2, repeat: int = 10,
              max_seconds: float = DEFAULT_MAX_SECONDS) -> Timing:
    """Wall-clock time of a host call (``time.perf_counter``), after ``warmup`` calls."""
    def one(_: int) -> int:
        t0 = time.perf_counter_ns()
        product()
        return time.perf_counter_ns() - t0

    return summarize(_rounds(one, warmup, repeat, max_seconds))


def time_kernels_and_wall(M: DeviceMatrix, x: np.ndarray, *, warmup: int = 2,
                          repeat: int = 10, wall_repeat: int = 5,
                          max_seconds: float = DEFAULT_MAX_SECONDS) -> tuple[Timing, Timing]:
    """(kernel time of ``y = A x`` on device-resident arrays, as :func:`time_kernels`; wall time
    of one product from a numpy x to a new numpy y, with its transfers), taken in the same
    rounds: each round times one device-resident product and, in the first ``wall_repeat``
    rounds, one product from numpy right after it, so that their ratio is not that of two
    phases of a shared machine."""
    x_dev, y_dev = _device_vectors(M, x)
    x_host = np.ascontiguousarray(x, M.dtype)

    def one_round(i: int) -> tuple[tuple[int, bool], int | None]:
        kernel = matrix_ns(M, lambda: M.matvec(x_dev, y_dev))
        if i >= wall_repeat:
            return kernel, None
        t0 = time.perf_counter_ns()
        M.matvec(x_host)
        return kernel, time.perf_counter_ns() - t0

    rounds = _rounds(one_round, warmup, repeat, max_seconds)
    return (_summarize_covered([k for k, _ in rounds]),
            summarize([w for _, w in rounds if w is not None]))


@dataclass(frozen=True)
class Conversion:
    """A matrix converted and uploaded, with the time of each step in milliseconds."""

    matrix: DeviceMatrix
    host_ms: float
    upload_ms: float

    @property
    def total_ms(self) -> float:
        """Host conversion plus upload: what a single product must pay before it starts."""
        return self.host_ms + self.upload_ms


def convert(csr: sp.csr_matrix, format: str, device: Device,
            work_group_size: int | None = None, accumulate: np.dtype | None = None,
            **params: object) -> Conversion:
    """Lay out ``csr`` (canonical: :func:`clspmv.matrix.canonical_csr`) in ``format`` with the
    format's ``params`` and upload it to ``device`` by the library's own path
    (:func:`clspmv.formats.convert`, :meth:`clspmv.DeviceMatrix.upload`), timing the host
    conversion and the upload
    (until the queue is idle) separately. The kernels are compiled before the upload is timed;
    they sum in ``accumulate`` (default: csr's type; float64 for float32 values is
    ``dtype="mixed"``).

    Raises what :meth:`clspmv.DeviceMatrix.from_scipy` raises: UnsuitableFormatError,
    DeviceError (no fp64, too large, out of memory), IndexOverflowError.
    """
    precision = Precision(csr.dtype, np.dtype(accumulate or csr.dtype))
    device.require(precision)
    layout = FORMAT_CLASSES[format].layout_for(device, work_group_size)
    t0 = time.perf_counter()
    # owned: csr is the benchmark's own canonical copy, which nothing writes: uploaded as
    # from_scipy uploads its own (on a CPU, in place)
    fmt = formats.convert(csr, format, layout, precision, owned=True, **params)
    host_s = time.perf_counter() - t0
    fmt.compile(device)  # compile (or fetch from the program cache) outside the timing
    device.queue.finish()
    t0 = time.perf_counter()
    M = DeviceMatrix.upload(fmt, device)
    device.queue.finish()
    upload_s = time.perf_counter() - t0
    return Conversion(M, host_s * 1e3, upload_s * 1e3)
