"""The device probes of the calibration besides its benchmark matrices: kernel times of uploaded
formats in rounds (:func:`kernel_times`) and how often a random gather from x misses the cache as
x grows (:func:`probe_x_cache`, :class:`XCacheProbe`). (The streaming bandwidth is
:func:`clspmv.bandwidth.copy_rate`, the reports' copy yardstick.)

Why the x cache is probed rather than read: the cache a driver reports is not the one random
gathers from x see. NVIDIA's OpenCL reports 4 MiB of global memory cache on the H100 and H200,
whose L2 holds 50 and 60 MB; a 2-core Zen 4 VM reports 1 MiB (its L2) and shares a 32 MiB L3,
in which random gathers from x of 8 MiB already miss (the probe's times rise from 4 MiB on).
The model needs what a random gather from x costs as x grows: on that VM a product of random
columns over an x of 24 MB took 2-4 times the time predicted from the gathers of the
calibration's random matrix (8 MB of x), and on the H100 1.9 times over an x of 48 MB.

The x cache probe refuses a simulator and runs with progress within the probes' time bound
(:mod:`clspmv.probing`); :func:`kernel_times` keeps to a caller's bound when given one.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

from ..canonical import canonical_csr
from ..cover import covered_ns, spins
from ..device import Device
from ..errors import ClspmvError
from ..formats import FORMAT_CLASSES, Format, convert
from ..precision import Precision
from ..probing import ProbeRun, refuse_simulator
from .features import features
from .sampling import LINE_BYTES

logger = logging.getLogger(__name__)

REPEATS = 9
"""Timed products per (matrix, format), in rounds over the formats; the calibration keeps the
fastest (:func:`kernel_times`)."""
STEADY_S = 0.02
"""Product seconds per format that :func:`kernel_times` times at least (more rounds than
``repeat`` where its products are short, up to :func:`max_rounds`): short products reach their
steady speed only after tens of them back to back. On a 2-core CPU under PoCL 3.1 the fastest
of 9 rounds of bcsstk24 (81 k entries) was 87 us for csr-blocks and csr-scalar and 125-149 us
for csr-merge, pjds and sell, the fastest of 50 rounds 48-50 us and 68-94 us, of 200 rounds
45-48 us and 66-90 us: 9 rounds made the small matrices' products look up to 1.8 times slower
than a solver's loop runs them, and ordered formats whose times differ by less at random."""
MAX_ROUNDS = 200
"""Rounds of a format at most on a CPU device."""
MAX_COVERED_ROUNDS = 50
"""Rounds of a format at most where the products are timed behind :mod:`clspmv.cover`'s spin
(GPUs): their times vary far less than a CPU's, so 200 rounds measured host time, not the
device. On an H200 the fastest of a calibration's first 50 rounds was within 0.06 % (median),
1.1 % (90th percentile) and 4.6 % (worst) of the fastest of up to 200, over its 333 (matrix,
format) pairs (280 of which ran 200 rounds), and the calibration took 49.5 s instead of about
60 (``reports/2026-11-26-h200-calibration-rounds``)."""


def max_rounds(device_type: str) -> int:
    """Rounds of a format at most on a device of ``device_type``: :data:`MAX_COVERED_ROUNDS`
    where :func:`clspmv.cover.covered_ns` spins (:func:`clspmv.cover.spins`), else
    :data:`MAX_ROUNDS`."""
    return MAX_COVERED_ROUNDS if spins(device_type) else MAX_ROUNDS


def planned_rounds(seconds: dict[str, float], repeat: int, device_type: str) -> dict[str, int]:
    """The rounds :func:`kernel_times` takes of each format whose products take ``seconds`` on a
    device of ``device_type`` (each round: one untimed and one timed product; after one warm-up
    product)."""
    most = max_rounds(device_type)
    return {name: max(repeat, min(most, int(np.ceil(STEADY_S / t))) if t > 0 else most)
            for name, t in seconds.items()}


def kernel_times(formats: dict[str, Format], x: cl_array.Array, y: cl_array.Array,
                 repeat: int, run: ProbeRun | None = None) -> dict[str, float]:
    """The fastest of ``repeat`` products y = A x of each uploaded format (after one untimed
    warm-up each; more where the products are short: a format's rounds go on until its own
    products add up to :data:`STEADY_S`, at most :func:`max_rounds`, so that the short products
    of one format do not repeat another's long ones: on an H200, 200 rounds of every format of
    a calibration matrix, a few milliseconds per round, had made two of its matrices take 50 s
    each; the calibration took 59.1 s this way, 73.2 s with rounds of every format until each
    one's products added up to STEADY_S and a format leaving at 5 x STEADY_S, which on the
    2-core CPU chose no better beyond the calibration's own noise:
    reports/2026-11-25-h200-shuffle/calibration-rounds.txt), taken in rounds of one product
    per format, in kernel seconds from the
    OpenCL profiling events of the kernels it enqueues, queued behind a spin that hides the
    host's enqueueing (:func:`clspmv.cover.covered_ns`, the benchmarks' kernel time), or the
    host clock around each product where the device's queue has no profiling (a user's queue).
    The fastest, not the median: on a CPU shared with other processes a product that lost a
    core to them runs up to twice as long (measured on a 2-core CPU: medians of 5 of the same
    product varied by 2x), and the model is of the device's own speed. Rounds, not each
    format's products in a row: on that CPU the fastest of 9 in a row still disagreed with
    itself (csr-scalar 0.44 ms on a matrix and 0.63 ms on one of the same rows, entries and
    closer columns). Each timed product comes right after an untimed one of the same format,
    so that a matrix the cache holds is timed from the cache, as a solver's repeated products
    of it run: in rounds of one product per format, each found its matrix evicted by the
    others' (on the 2-core CPU, 14 formats of a 5-point stencil of 12 MB: ellr 0.46 ms in
    rounds, 0.27 ms in a row; csr-blocks 0.53 and 0.56 ms), and the calibration taught the
    model that the ELLPACK formats gain nothing from the cache. With ``run``, each round is a
    step of its progress bar and its bound is checked after every product (DeviceError past
    it)."""
    def enqueue(fmt: Format) -> list:
        """Enqueue y = A x; its events."""
        one, zero = fmt.dtype.type(1), fmt.dtype.type(0)
        return fmt.launch(fmt.device.queue, x.data, y.data, one, zero) or []

    def seconds(fmt: Format) -> float:
        if fmt.device.profiling:
            return covered_ns(fmt.device, lambda: enqueue(fmt))[0] * 1e-9
        t0 = time.perf_counter()
        cl.wait_for_events(enqueue(fmt))
        return time.perf_counter() - t0

    samples: dict[str, list[float]] = {name: [] for name in formats}
    for fmt in formats.values():  # warm-up, untimed: a kernel's first launch may stall the
        enqueue(fmt)  # host, which would double the spin (clspmv.cover)
        fmt.device.queue.finish()
    timing = dict(formats)
    rounds = 0
    while timing:
        for name, fmt in timing.items():
            enqueue(fmt)  # the cache's share of this format's matrix back in place
            samples[name].append(seconds(fmt))
            if run is not None:
                run.check()
        rounds += 1
        if run is not None:
            run.step()
        if rounds >= repeat:  # each format's rounds end at its own STEADY_S
            timing = {name: fmt for name, fmt in timing.items()
                      if rounds < max_rounds(fmt.device.type)
                      and sum(samples[name]) < STEADY_S}
    return {name: min(times) for name, times in samples.items()}


NOISE_TOLERANCE = 0.2
"""Largest share by which repeated timings of the same products may disagree (the slower over
the faster, less 1) before they count as noise: on the quiet 2-core CPU the fastest of a
format's rounds repeats within a few per cent, while a product that loses a core to another
process takes up to twice as long (:func:`kernel_times`)."""
MEASURE_PASSES = 3
"""Timings of a calibration's matrix or probe at most (:func:`timed_in_passes`)."""

K = TypeVar("K", bound=Hashable)


@dataclass
class Passes(Generic[K]):
    """What :func:`timed_in_passes` found: the keys still timed while the reference ran slow
    after the last pass (empty: none), the reference's seconds in order, and the passes."""

    noisy: list[K]
    reference_s: list[float]
    passes: int

    @property
    def slowest(self) -> float:
        """The reference's slowest time over its fastest, less 1."""
        return max(self.reference_s) / min(self.reference_s) - 1.0


def timed_in_passes(keys: list[K], time_key: Callable[[K], None], reference: Callable[[], float],
                    passes: int = MEASURE_PASSES, tolerance: float = NOISE_TOLERANCE
                    ) -> Passes[K]:
    """Time every key (``time_key`` keeps the fastest of its timings itself: noise only slows a
    product) with a timing of a reference product (``reference``, seconds) before the first
    and after each; a key whose reference before or after ran slower than the fastest
    reference by more than ``tolerance`` was timed while other work took the device, and is
    timed again, at most ``passes`` times in all. ``noisy``: the keys still slow after the last
    pass (the caller flags them)."""
    times: list[float] = []
    pending, done = list(keys), 0
    while True:
        done += 1
        around = [reference()]
        for key in pending:
            time_key(key)
            around.append(reference())
        times += around
        steady = min(times) * (1 + tolerance)
        pending = [key for key, before, after in zip(pending, around[:-1], around[1:],
                                                     strict=True) if max(before, after) > steady]
        if not pending or done >= passes:
            return Passes(pending, times, done)
        logger.info("a reference product ran up to %.0f %% slower than its fastest while %d "
                    "keys were timed: timing them again", 100 * (max(around) / min(times) - 1),
                    len(pending))


X_PROBE_ENTRIES = 2_000_000
"""Entries of each x-cache probe matrix (rows of :data:`X_PROBE_ROW` uniformly random columns):
enough to fill a GPU and to take milliseconds on a CPU, where the probe costs about 3 s."""
X_PROBE_ROW = 8
X_PROBE_MIB = (1, 2, 4, 8, 16, 32, 64, 128, 256)
"""Sizes of x probed, MiB (those above half the device's largest allocation are left out)."""


def probed_formats(probe: str) -> tuple[str, ...]:
    """The registered formats that the calibration probe ``probe`` times (one of
    :data:`clspmv.formats.costs.PROBES`; :attr:`~clspmv.formats.costs.FormatCosts.probed_in`),
    in the registry's order."""
    return tuple(name for name, cls in FORMAT_CLASSES.items() if probe in cls.probed_in)


def probed_format(probe: str) -> str:
    """The one registered format that the probe ``probe`` times (:func:`probed_formats`);
    ClspmvError where none or several are."""
    names = probed_formats(probe)
    if len(names) != 1:
        found = f"{len(names)} ({', '.join(names)})" if names else "none"
        raise ClspmvError(f"the {probe!r} probe times one format, and the registered formats "
                          f"name {found} in their probed_in: keep the probe in exactly one "
                          "format class's probed_in")
    return names[0]


def reference_format() -> str:
    """The format of the x-cache probe and of the calibration's reference product
    (:func:`probed_format` of ``"reference"``: ``csr-scalar``): one row per work-item, its time
    the matrix streamed plus the gathers, no kernel of its own to tune. (On the 2-core CPU
    ``ellr``'s larger fixed part per entry flattens the curve: its fitted knee was at 13.5 MiB,
    csr-scalar's at 11.3 MiB; csr-scalar's time per entry on random columns rose 1.7-fold from
    12 to 16 MiB of x, where the CSR kernels' times turn.)"""
    return probed_format("reference")


FAR_MISS = 0.75
"""Miss share of the probe's curve at which the calibration's ``random-far`` matrix sizes its x
(:attr:`XCacheProbe.far_x_bytes`)."""


@dataclass
class XCacheProbe:
    """Kernel seconds of a product with random columns over x of each size (same rows and
    entries) and the miss curve made of them (:meth:`curve`): the share of the rise of the
    times beyond a reference size (the x of the calibration's random matrix, whose gathers the
    formats' own gather coefficients are fitted to) that each size has reached, the model's
    chance that a scattered gather from an x of that size costs more than those. The curve is
    measured, not a formula: on the 2-core CPU a cache of C bytes hit with chance C / s fitted
    the rise badly (its knee moved from 11.3 to 13.5 MiB with the probe's format and missed the
    2-fold time of a matrix of random columns over 16 MB of x). The reference keeps the curve
    an extension of the fitted model: measured from the smallest size instead (1 MiB, beyond a
    CPU core's L2), the far term took over part of the gathers of the calibration's random
    matrix (8 MB of x), the gather coefficients dropped, and matrices of random columns over
    3 MB of x were predicted a third too fast."""

    x_bytes: list[int]
    seconds: list[float]
    scattered_lines: float
    """:attr:`clspmv.model.features.Features.x_scattered` of the largest probe matrix."""

    def __post_init__(self) -> None:
        if len(self.x_bytes) != len(self.seconds) or not self.x_bytes:
            raise ValueError("x cache probe: as many sizes as times expected")

    def _times(self) -> np.ndarray:
        """The probe's times, made non-decreasing in the size of x."""
        return np.maximum.accumulate(np.asarray(self.seconds, np.float64))

    def _at(self, reference: float) -> float:
        """The (non-decreasing) time at an x of ``reference`` bytes, interpolated in log size."""
        return float(np.interp(np.log2(max(reference, 1.0)), np.log2(self.x_bytes),
                               self._times()))

    def far_s(self, reference: float) -> float:
        """Seconds the probe's largest x took beyond an x of ``reference`` bytes (0 when not
        slower)."""
        return max(0.0, float(self._times()[-1]) - self._at(reference))

    def far_s_per_byte(self, reference: float) -> float:
        """What a scattered line of x costs beyond one from an x of ``reference`` bytes when x
        is the largest probed, per byte of line: the model's ``far xbytes`` coefficient."""
        lines = self.scattered_lines * LINE_BYTES
        return self.far_s(reference) / lines if lines else 0.0

    def curve(self, reference: float) -> list[list[float]]:
        """(x bytes, miss share) per probed size: the rise of the times beyond the time at
        ``reference`` bytes over the whole rise beyond it, 0 up to the reference; all 0 without
        a rise."""
        t = self._times()
        base = self._at(reference)
        rise = t[-1] - base
        miss = np.clip((t - base) / rise, 0.0, 1.0) if rise > 0 else np.zeros_like(t)
        return [[float(b), float(m)] for b, m in zip(self.x_bytes, miss, strict=True)]

    @property
    def far_x_bytes(self) -> int:
        """The smallest probed x whose share of the whole rise from the smallest size reaches
        :data:`FAR_MISS` (the largest when none does): the x of the ``random-far`` benchmark
        matrix."""
        curve = self.curve(self.x_bytes[0])
        return int(next((b for b, m in curve if m >= FAR_MISS), self.x_bytes[-1]))

    def to_json(self) -> dict[str, object]:
        """The probe, JSON-ready (:meth:`from_json` reads it back)."""
        return {"x_bytes": self.x_bytes, "seconds": self.seconds,
                "scattered_lines": self.scattered_lines}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> XCacheProbe:
        """The probe of :meth:`to_json` (KeyError / TypeError / ValueError when malformed)."""
        return cls([int(v) for v in data["x_bytes"]],  # type: ignore[attr-defined]
                   [float(v) for v in data["seconds"]],  # type: ignore[attr-defined]
                   float(data["scattered_lines"]))  # type: ignore[arg-type]


def x_probe_matrices(sizes: list[int], itemsize: int) -> list[sp.csr_matrix]:
    """The probe's matrices: :data:`X_PROBE_ENTRIES` entries in rows of :data:`X_PROBE_ROW`
    uniformly random columns (a fixed seed) over an x of each of ``sizes`` bytes."""
    rng = np.random.default_rng(11)
    rows = X_PROBE_ENTRIES // X_PROBE_ROW
    indptr = np.arange(0, rows * X_PROBE_ROW + 1, X_PROBE_ROW, dtype=np.int32)
    out = []
    for size in sizes:
        cols = max(1, size // itemsize)
        idx = np.sort(rng.integers(0, cols, (rows, X_PROBE_ROW), dtype=np.int32), axis=1)
        A = sp.csr_matrix((np.ones(idx.size), idx.ravel(), indptr), shape=(rows, cols))
        A.sum_duplicates()
        out.append(A)
    return out


X_PROBE = "the x cache probe"
"""The probe's name in its progress bar and errors."""


def probe_x_cache(device: Device, precision: Precision, progress: bool = True) -> XCacheProbe:
    """Time :func:`reference_format` products on :func:`x_probe_matrices` over x of
    :data:`X_PROBE_MIB` sizes, all uploaded first and timed in rounds (:func:`kernel_times`),
    on a progress bar of the uploads and rounds. DeviceError on a simulator and past the
    probes' time bound (:mod:`clspmv.probing`)."""
    refuse_simulator(device, X_PROBE)
    itemsize = np.dtype(precision.value).itemsize
    sizes = [mib << 20 for mib in X_PROBE_MIB if mib << 20 <= device.max_allocation // 2]
    name = reference_format()
    layout = FORMAT_CLASSES[name].layout_for(device)
    uploaded: dict[str, Format] = {}
    csr = None
    with ProbeRun(device, X_PROBE, None, progress) as run:
        for size, A in zip(sizes, x_probe_matrices(sizes, itemsize), strict=True):
            csr = canonical_csr(A, precision.value)
            uploaded[str(size)] = convert(csr, name, layout, precision)
            uploaded[str(size)].upload(device)
            run.step()
        x = cl_array.to_device(device.queue, np.ones(max(sizes) // itemsize, precision.value))
        y = cl_array.zeros(device.queue, X_PROBE_ENTRIES // X_PROBE_ROW, precision.value)
        times = kernel_times(uploaded, x, y, REPEATS, run)
    return XCacheProbe(sizes, [times[str(size)] for size in sizes],
                       features(csr, device.simd_width).x_scattered)
