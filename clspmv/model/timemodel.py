"""The form of the time models and the :class:`Calibration` that instantiates them.

Kernel time of format ``f`` on a block of rows with features ``F`` (:mod:`.features`)::

    t_f(F) = c0 * launches_f(F) + c1 * (1 - h) * bytes_f(F) + c2 * h * bytes_f(F)
             + c3 * xbytes(F) + c4 * items_f(F) + c5 * longest_f(F)
             + c6 * (1 - h) * bytes_f(F) * wide_f(F) + c7 * lanes_f(F)
             + c8 * (1 - h_x(F)) * farbytes(F) + c9 * h * bytes_f(F) * wide_f(F)
             + c10 * h * changes_f(F)

``launches_f`` are the kernels ``f``'s product enqueues for these features
(:func:`clspmv.model.launches.launches`: ``coo``'s levels of carries, ``hyb``'s COO part,
``csr-merge``'s fix-ups, ``csr-adaptive``'s long rows) and c0 the cost of one, whatever its work
(5-7 us on the H200);
``bytes_f`` are the bytes of the matrix in ``f`` (its padding included) plus x and y streamed
once, ``h`` the share of them the device's cache can hold (repeated products of a matrix
smaller than the cache stream from the cache: c2 is then its inverse bandwidth, c1 that of
memory): on a CPU 1 less the miss share the calibration's x cache probe measured at
``bytes_f`` (:attr:`Calibration.stream_miss`), elsewhere, and where nothing was probed,
``min(1, cache / bytes_f)``. The reported cache is more than a product keeps: on the 2-core
Zen 5 (32 MiB reported) the probe's gathers missed a quarter of the time at 16 MB and half at
32 MB, and a band of 30 MB, "in the cache" by the reported size, ran its CSR kernels at memory
speed, twice their predicted time (reports/2026-11-26-cpu-2core-zen5-row-lengths). On the H200
the probe's curve moved no choice for the better in replays and two for the worse, so GPUs keep
the reported cache. ``xbytes`` the cache lines of x gathered per row block
(:attr:`Features.x_lines` times 64; 0 for the formats that read x in streams,
:attr:`~clspmv.formats.costs.FormatCosts.x_streamed`),
``items_f`` the work-items of ``f``'s main kernel (:func:`clspmv.model.launches.work_items`:
the rows times the work-items sharing a row for the row formats, the equal shares of the
entries for ``coo``, ``csr-merge`` and ``csr-adaptive``), the cost of each work-item's fixed
steps and share of the device (loads of row pointers, the reduction, the store of y: with a
per-row cost instead, csr-vector's 32 work-items per row of 26 entries, 1.6 times csr-aligned's
time on the H200 on a matrix of 0.4 M entries, were predicted at 0.9 times) and
``longest_f`` the longest row divided by the work-items sharing a row in ``f`` (the critical path
of one row), ``wide_f = min(slots_f / rows, WIDE_ROW) / WIDE_ROW`` the slots a row stores in
``f`` (its padding included) relative to :data:`WIDE_ROW`: memory traffic that costs more per
byte the more slots a row holds (the column-major ELL layouts read every slot of a row from
another stretch of memory, as many streams as slots, which a CPU's prefetchers and TLB follow
badly beyond the cache; the fit sets c6 to 0 where it costs nothing, as on GPUs, whose
work-items read those streams side by side), c9 the same for the bytes the cache holds (on the
2-core CPU under PoCL 3.1 the ELLPACK formats' products of rows of 27-192 slots in the cache
took 1.8-6 times csr-blocks', of rows of 4-8 slots 0.9-1.3 times, and 0.7 times on a 5-point
stencil: without the term every ELLPACK product in the cache was predicted at the wide rows'
cost and that stencil's fastest format, ellr, ranked behind three CSR kernels), ``lanes_f`` the
padding of rows taken in groups of the work-items sharing a vector or warp in order, each group
to its longest row (:attr:`Features.lane_padding`, :func:`clspmv.model.features.lane_width`: the
lanes a one-row-per-work-item kernel leaves idle on irregular rows; a format that sorts its
rows into slices counts its own padding instead,
:meth:`~clspmv.formats.costs.FormatCosts.idle_lanes`; on a device that vectorises across
work-items 0 for the formats whose neighbouring rows share no vector,
:attr:`~clspmv.formats.costs.FormatCosts.lockstep_rows`), ``farbytes`` the scattered
cache lines of x (:attr:`Features.x_scattered` times 64: gathers that follow no stream) and
``changes_f`` the rows whose length differs from both rows before them
(:attr:`Features.length_changes`), counted on CPUs only and 0 for the formats whose loops do
not end with each row's length in row order
(:attr:`~clspmv.formats.costs.FormatCosts.even_loops`): a CPU kernel that walks rows in order
with a loop per row ends each such row's loop with a branch the predictor misses (2-core
Zen 5, PoCL 3.1, 0.9 M entries in the cache: csr-blocks 155 us on rows of 9 entries, 484 us
on rows of Poisson lengths of mean 9, 155 us on rows alternating 6 and 12 entries;
csr-scalar 211 and 554 us; sell, whose slices sort their rows, 294 and 251 us), paid on the
cached share (beyond the cache the core waits on memory meanwhile), while a lockstep device
pays uneven rows as idle lanes (``lanes_f``), and
``1 - h_x`` the share of the cost of a miss that a gather from an x of ``cols * itemsize``
bytes pays, read off the miss curve the calibration probes beyond the x of its random matrix
(:func:`clspmv.model.probes.probe_x_cache`, :func:`miss_share`); c8 is what a gather from the
largest probed x costs beyond one from that matrix's, taken from the probe for every format.
c1 is the
inverse of the streaming bandwidth, c3 of the gather bandwidth. The
coefficients are fitted per format and device by non-negative least squares on relative errors
(:mod:`.calibrate`), drawn towards the device-wide priors (launch overhead, 1/stream
bandwidth, 1/gather bandwidth measured on their own) so that a handful of benchmark matrices
determines them.

A quick calibration on a CPU (:mod:`clspmv.model.quick`,
:func:`~clspmv.model.quick_large.large_probe_formats`) multiplies that time by a correction of
its own, measured on two probe matrices of a few million entries beyond the cache
(:attr:`Calibration.large_ratio`, :meth:`Calibration.large_factor`): its coefficients come from
other devices' shapes scaled by probes in the cache, and on the 2-core Xeon they predicted the
large probes' products 2.8-4.3 times too fast, by format unevenly (``sell`` 2.8-3.3,
``csr-blocks`` 3.7-4.3): enough to rank the CSR kernels ahead of ``sell`` and ``pjds`` on the
large irregular matrices where these ran 1.3-1.6 times faster
(``reports/experiments/2026-11-29-quick-large``). Where ``sell`` and ``pjds`` run a work-item
per row a format's own part of it follows the product's scattered gathers
(:attr:`Calibration.large_scatter`).

Conversion time (host layout plus upload) of ``f``::

    convert_f(F) = k0 + k1 * entries(F) + k2 * slots_f(F)

fitted the same way from the calibration's conversions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from ..formats import format_class
from ..formats.layout import LOCKSTEP_SIMD
from .features import Features, vectorised_items
from .launches import model_layout
from .sampling import LINE_BYTES

TERMS = ("launch", "bytes", "cached bytes", "xbytes", "work-items", "longest", "wide bytes",
         "idle lanes", "far xbytes", "cached wide bytes", "length changes")
WIDE_ROW = 64
"""Slots per row from which the ``wide bytes`` term stops growing."""
CONVERSION_TERMS = ("fixed", "entries", "slots")
LARGE_EXTRAPOLATION = 1.5
"""The power of :attr:`Calibration.large_ratio` at most: how far beyond its large probes' miss
share the quick calibration extrapolates its correction."""
QUICK_DEFAULT = {
    # device type: (launch seconds, streaming bytes/s, gather bytes/s, conversion s/entry)
    "gpu": (8e-6, 1.0e12, 2.5e11, 2.0e-8),
    "cpu": (3e-5, 1.0e10, 2.5e9, 2.0e-8),
    "other": (3e-5, 1.0e10, 2.5e9, 2.0e-8),
}
"""Quick default (``CLSPMV_CALIBRATE=0``): every format's model is ``launch + bytes / streaming
+ xbytes / gather`` (bytes held by the cache at twice the streaming rate) with these
per-device-type values, so the format storing and gathering the
fewest bytes wins (conversion: ``s/entry`` per stored slot, a CSR layout at half that rate); it
knows no x cache (``far xbytes`` costs nothing). No measurement: a rough guide for CI and for
users who cannot spend the calibration time."""


def miss_share(curve: list[list[float]], x_bytes: float) -> float:
    """The miss share of a scattered gather from an x of ``x_bytes``, interpolated on ``curve``
    (:meth:`clspmv.model.probes.XCacheProbe.curve`) in the logarithm of the size: its first
    share (0) below its smallest size, its last (1) above its largest; 0 without a curve (not
    probed)."""
    if not curve or x_bytes <= 0:
        return 0.0
    sizes, shares = zip(*curve, strict=True)
    return float(np.interp(np.log2(x_bytes), np.log2(sizes), shares))


def streamed_bytes(fmt: str, f: Features) -> float:
    """The bytes a product of ``fmt`` streams for features ``f``: the matrix in ``fmt`` (its
    padding included) plus x and y once (the model's ``bytes_f``)."""
    return float(format_class(fmt).matrix_bytes(f) + (f.rows + f.cols) * f.itemsize)


def stream_miss_share(streamed: float, cache_bytes: int,
                      stream_miss: list[list[float]] | None) -> float:
    """The share of ``streamed`` bytes the cache does not hold over repeated products: the miss
    curve ``stream_miss`` at that size (:func:`miss_share`), or without a curve the part beyond
    ``cache_bytes``."""
    if not streamed:
        return 0.0
    if stream_miss:
        return miss_share(stream_miss, streamed)
    return 1.0 - min(1.0, cache_bytes / streamed)


def terms(fmt: str, f: Features, cache_bytes: int = 0,
          x_miss: list[list[float]] | None = None,
          stream_miss: list[list[float]] | None = None) -> np.ndarray:
    """The model's terms (:data:`TERMS`) of format ``fmt`` for features ``f`` on a device with
    ``cache_bytes`` of cache, the probed miss curve ``x_miss`` of gathers from x
    (:func:`miss_share`; None or empty: not probed, no far gathers) and the probe's whole miss
    curve ``stream_miss`` (the share of a product's bytes the cache holds is 1 less its miss
    share at the bytes a product streams; None or empty: ``cache_bytes`` over those bytes)."""
    cls = format_class(fmt)
    layout = model_layout(f)
    streamed = streamed_bytes(fmt, f)
    hit = 1.0 - stream_miss_share(streamed, cache_bytes, stream_miss)
    wide = min(f.slots_of(fmt) / f.rows, WIDE_ROW) / WIDE_ROW if f.rows else 0.0
    far = miss_share(x_miss or [], f.cols * f.itemsize)
    # mispredicted row ends: CPUs only (a lockstep device pays uneven rows as idle lanes), the
    # cached share only (beyond the cache the core waits on memory meanwhile)
    changes = (0.0 if cls.even_loops or f.simd_width >= LOCKSTEP_SIMD
               else float(f.length_changes) * hit)
    # idle lanes: where the device vectorises across work-items, only a format whose neighbouring
    # rows share a vector pays them (csr-blocks' work-groups of one work-item share none); on
    # PoCL and GPUs the fitted coefficients of every format weigh them
    lanes = (0.0 if vectorised_items(f.simd_width) and not cls.lockstep_rows
             else cls.idle_lanes(f))
    return np.array([
        float(cls.launches(f, layout)),
        streamed * (1.0 - hit),
        streamed * hit,
        0.0 if cls.x_streamed else float(f.x_lines * LINE_BYTES),
        cls.work_items(f, layout),
        float(f.max_row) / cls.threads_per_row(f),
        streamed * (1.0 - hit) * wide,
        lanes,
        float(f.x_scattered * LINE_BYTES) * far,
        streamed * hit * wide,
        changes,
    ])


def scattered_share(f: Features) -> float:
    """The scattered gathers of x per entry of features ``f`` (:attr:`Features.x_scattered`:
    cache lines of x that follow no stream; about 0.9 for rows of uniformly random columns, 0
    for a band)."""
    return float(f.x_scattered) / f.entries if f.entries else 0.0


def conversion_terms(fmt: str, f: Features) -> np.ndarray:
    """The conversion model's terms (:data:`CONVERSION_TERMS`)."""
    return np.array([1.0, float(f.entries), float(f.slots_of(fmt))])


@dataclass
class Calibration:
    """Per-device model coefficients: for every format its kernel-time coefficients
    (:data:`TERMS`) and conversion coefficients (:data:`CONVERSION_TERMS`), in seconds per unit."""

    device: str
    driver: str
    clspmv: str
    kind: str
    """``"measured"`` (:func:`clspmv.model.calibrate`) or ``"quick-default"``."""
    cache_bytes: int
    """The device's cache (:attr:`clspmv.Device.cache_bytes`), for the models' cached share."""
    launch_s: float
    stream_bw: float
    """Bytes per second (read plus written) of the device's best copy kernel beyond its cache
    (:func:`clspmv.bandwidth.copy_rate`)."""
    gather_bw: float
    """Bytes per second of cache lines of x gathered at random."""
    x_miss: list[list[float]] = field(default_factory=list)
    """(x bytes, miss share) of random gathers from x, probed
    (:meth:`clspmv.model.probes.XCacheProbe.curve`); empty where not probed (no far
    gathers)."""
    stream_miss: list[list[float]] = field(default_factory=list)
    """(bytes, miss share) of the probe's gathers over its whole range
    (:meth:`clspmv.model.probes.XCacheProbe.curve` from its smallest x): how much of a working
    set of that size the cache keeps; empty where not probed (then ``cache_bytes`` stands in)."""
    kernel: dict[str, list[float]] = field(default_factory=dict)
    conversion: dict[str, list[float]] = field(default_factory=dict)
    seconds: float = 0.0
    """Time the calibration took."""
    fit: dict[str, float] = field(default_factory=dict)
    """Median relative error of each format's fit on the calibration matrices."""
    measurements: dict[str, object] | None = None
    """The timings the coefficients were fitted to
    (:meth:`clspmv.model.calibrate.Measurements.to_json`), for a refit without the device
    (:func:`clspmv.model.calibrate.refit`); None for the quick default."""
    measurement: int = 0
    """How the kernels and their timing stood when it was measured
    (:data:`clspmv.model.calibrate.MEASUREMENT`; 0 in files written before the field)."""
    ell_row_major_width: int = 0
    """The device's ELL order when it was measured
    (:attr:`clspmv.ell_order.EllOrder.row_major_width`, which the calibration measures first);
    0 where none was (lockstep devices, the quick default)."""
    ell_scattered_row_major_width: int = 0
    """The same for ELL rows of scattered columns
    (:attr:`clspmv.ell_order.EllOrder.scattered_row_major_width`); 0 where none was measured."""
    large_ratio: dict[str, float] = field(default_factory=dict)
    """Per format the measured over the model's kernel time on the quick calibration's large
    probes (:func:`clspmv.model.quick_large.large_correction`); empty where none were timed (full
    calibrations; GPUs) or the large probes ran in the cache."""
    large_miss: float = 0.0
    """The stream's miss share (:func:`stream_miss_share`) of the large probes' products: a
    product missing that share takes the whole of :attr:`large_ratio` (:meth:`kernel_time`)."""
    large_shared: float = 0.0
    """Where a format's own part of :attr:`large_ratio` follows the gathers (:attr:`large_scatter`
    above 0): the part every format takes, the ratio of a product gathering no scattered x
    (:func:`clspmv.model.quick_large.large_correction`)."""
    large_scatter: float = 0.0
    """The large probes' scattered gathers per entry (:func:`scattered_share`) where a format's
    own part of its ratio (over :attr:`large_shared`) follows a product's gathers
    (:func:`clspmv.model.quick_large.corrects_by_gathers`: CPUs whose ``sell`` and ``pjds`` run a
    work-item per row); 0: the whole ratio follows the stream's miss alone."""
    large_whole: list[str] = field(default_factory=list)
    """The formats whose :attr:`large_ratio` follows the stream's miss alone even where the
    rest's own part follows the gathers (timed on the quick calibration's large band alone:
    ``dia``, :func:`clspmv.model.quick_large.large_probe_plan`)."""

    def terms(self, fmt: str, f: Features) -> np.ndarray:
        """:func:`terms` of ``fmt`` for features ``f`` on this calibration's device."""
        return terms(fmt, f, self.cache_bytes, self.x_miss, self.stream_miss)

    def kernel_time(self, fmt: str, f: Features) -> float:
        """Predicted kernel seconds of ``fmt`` for features ``f``: the model's terms times its
        coefficients, times :meth:`large_factor`."""
        return float(np.dot(self.kernel[fmt], self.terms(fmt, f))) * self.large_factor(fmt, f)

    def large_factor(self, fmt: str, f: Features) -> float:
        """The quick calibration's correction of ``fmt``'s model for features ``f``: its
        :attr:`large_ratio` to the power of the product's stream miss share over
        :attr:`large_miss` (at most :data:`LARGE_EXTRAPOLATION`): 1 in the cache, the whole
        ratio as far out of it as the large probes; 1 where no large probe was timed. With
        :attr:`large_scatter`, the ratio is :attr:`large_shared` times the format's own part,
        and that part's power is also scaled by the product's scattered gathers per entry over
        the large probes' (at most 1): a product of a band takes the shared part alone (a format
        of :attr:`large_whole` its whole ratio)."""
        if not self.large_ratio or self.large_miss <= 0:
            return 1.0
        ratio = self.large_ratio.get(fmt) or float(np.median(list(self.large_ratio.values())))
        miss = stream_miss_share(streamed_bytes(fmt, f), self.cache_bytes, self.stream_miss)
        power = min(LARGE_EXTRAPOLATION, miss / self.large_miss)
        if self.large_scatter <= 0 or self.large_shared <= 0 or fmt in self.large_whole:
            return float(ratio ** power)
        gathers = min(1.0, scattered_share(f) / self.large_scatter)
        return float(self.large_shared ** power
                     * (ratio / self.large_shared) ** (power * gathers))

    def conversion_time(self, fmt: str, f: Features) -> float:
        """Predicted seconds to convert a canonical CSR matrix to ``fmt`` and upload it."""
        return float(np.dot(self.conversion[fmt], conversion_terms(fmt, f)))

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict (:meth:`from_json` reads it back)."""
        out = asdict(self)
        out["terms"] = list(TERMS)
        out["conversion_terms"] = list(CONVERSION_TERMS)
        return out

    @classmethod
    def from_json(cls, data: dict[str, object], formats: tuple[str, ...]) -> Calibration:
        """The calibration in ``data``; ValueError when a field is missing or malformed (a file
        of another clspmv, or damaged) or a format of ``formats`` has no coefficients."""
        if data.get("terms") != list(TERMS) or data.get("conversion_terms") != list(
                CONVERSION_TERMS):
            raise ValueError("the calibration uses another model form")
        try:
            cal = cls(**{k: v for k, v in data.items()
                         if k not in ("terms", "conversion_terms")})  # type: ignore[arg-type]
        except TypeError as err:
            raise ValueError(f"malformed calibration: {err}") from None
        for fmt in formats:
            for table, n in ((cal.kernel, len(TERMS)), (cal.conversion, len(CONVERSION_TERMS))):
                coef = table.get(fmt)
                if (not isinstance(coef, list) or len(coef) != n
                        or not all(isinstance(c, (int, float)) and c >= 0 for c in coef)):
                    raise ValueError(f"no valid coefficients for format {fmt!r}")
        return cal


def prior(launch_s: float, stream_bw: float, gather_bw: float, far_s_per_byte: float = 0.0
          ) -> list[float]:
    """Kernel coefficients of the quick form: launches + bytes / stream + xbytes / gather (+ far
    xbytes times ``far_s_per_byte``, the probed cost of a gather missing the x cache)."""
    return [launch_s, 1.0 / stream_bw, 0.5 / stream_bw, 1.0 / gather_bw, 0.0, 0.0, 0.0, 0.0,
            far_s_per_byte, 0.0, 0.0]

CONVERSION_RATE = {"copy": 0.5, "layout": 1.0}
"""The quick default's conversion seconds per slot, relative to its ``s/entry``, of each
:attr:`~clspmv.formats.costs.FormatCosts.conversion_kind`
(:data:`~clspmv.formats.costs.CONVERSION_KINDS`): a copy of the CSR arrays at half the rate of
a new layout."""


def quick_default(device_name: str, driver: str, version: str, device_type: str,
                  formats: tuple[str, ...], cache_bytes: int = 0) -> Calibration:
    """The calibration of :data:`QUICK_DEFAULT` for a device of ``device_type``."""
    launch, stream, gather, per_entry = QUICK_DEFAULT.get(device_type, QUICK_DEFAULT["other"])
    kernel = {f: prior(launch, stream, gather) for f in formats}
    conversion = {f: [1e-4, 0.0, per_entry * CONVERSION_RATE[format_class(f).conversion_kind]]
                  for f in formats}
    return Calibration(device_name, driver, version, "quick-default", cache_bytes, launch, stream,
                       gather, kernel=kernel, conversion=conversion)
