"""The quick calibration: a few seconds of probes that scale the prior of the device's class
(:mod:`.prior`) into a :class:`~clspmv.model.timemodel.Calibration` of kind ``"quick"``, what
the first ``format="auto"`` on a new device measures instead of the full calibration
(:mod:`.calibrate`: every format on 25 matrices sized from the device, a minute on a GPU and
one to several on a 2-core CPU).

The probes: the streaming bandwidth over a buffer pair of :data:`STREAM_BYTES` each
(:func:`clspmv.bandwidth.copy_rate`) and the kernel and conversion times of the few formats of
:func:`probe_formats` on the small matrices of :func:`probe_matrices` (one row per lane for the
launch cost, a band, random columns and power-law rows of :data:`PROBE_ROWS` rows). The model:
every format's coefficients are the prior's shape times the device's launch cost and inverse
streaming bandwidth (:func:`clspmv.model.prior.scales`), times one multiplier per group of
terms (:data:`GROUPS`: launches, memory traffic, work in the cache) and, for a probed format,
one multiplier of its own on its work in the cache (the probe matrices fit in the cache: they
say nothing of a format's own memory traffic), all fitted to the probes in the logarithm of the
times and drawn towards 1 (:data:`PULL`); conversions are the prior's times
one multiplier (the median ratio of the probes' measured to predicted conversions). On CPUs
a few formats (:func:`~.quick_large.large_probe_plan`) are also timed on three matrices of a
few million entries beyond the cache (:func:`~.quick_large.large_probe_matrices`: irregular rows,
and a band for ``dia``), and each
format's measured over predicted time there corrects its model beyond the cache
(:func:`~.quick_large.large_correction`,
:meth:`clspmv.model.timemodel.Calibration.large_factor`): the probes in the cache had ranked the
CSR kernels ahead of ``sell`` and ``pjds`` on large irregular matrices where these ran 1.3-1.6
times faster (``reports/experiments/2026-11-29-quick-large``); where ``sell`` and ``pjds`` run
a work-item per row a format's own part of that correction follows the product's scattered
gathers (:func:`~.quick_large.corrects_by_gathers`). ``sell`` and ``pjds`` are timed in the
cache too: on the 16-core node (Debian's PoCL 5.0, 300 MB of L3, where the large probes run in
the cache) the model without probes of their own there took ``sell`` on R-MAT at 0.30 of the
fastest (``reports/experiments/2026-11-29-quick-slices``). On CPUs the formats that take
only matrices of dense blocks (``bsr``) are timed on a block probe of their own
(:mod:`.quick_blocks`), which fits their own multiplier alone. The x cache's miss curves are
the prior's: the probe of :func:`clspmv.model.probes.probe_x_cache`
alone allocates x of 256 MiB. On CPUs the ELL order is measured first where none is stored
(:func:`clspmv.model.order_probe.ensure_stored`, about 2 s on a 2-core CPU): without it the
probes timed ``ellr`` in the default order, and the formats converted after the order was
measured ran in another (on the 2-core Zen 4, ``ellr`` on rows of random columns 2.5x faster
row-major: :mod:`clspmv.ell_order`).

Noise: a reference product is timed before and after each probe matrix
(:class:`clspmv.model.calibrate.Sentinel`, :func:`clspmv.model.probes.timed_in_passes`); a
matrix timed while it ran slower than its fastest by more than
:data:`clspmv.model.probes.NOISE_TOLERANCE` is timed again (the fastest of its timings kept),
at most :data:`clspmv.model.probes.MEASURE_PASSES` times, and one still slow then is flagged
(``measurements["quick"]["noisy"]``) with one :class:`~clspmv.errors.ClspmvWarning`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp
from scipy.optimize import least_squares

from .. import bandwidth
from ..cache_schema import items, number, record, table, text
from ..canonical import canonical_csr
from ..device import Device
from ..ell_order import row_major_widths, stored
from ..errors import ClspmvWarning
from ..formats import FORMAT_CLASSES, SINGLE_FORMATS, Format, convert
from ..formats.layout import Layout
from ..precision import Precision, resolve
from ..probing import ProbeRun, refuse_simulator
from ..version import __version__
from .benchmarks import small_matrices
from .calibrate import Sentinel
from .features import Features, features, refusal, with_exact_diagonals
from .launches import launches, model_layout
from .order_probe import ensure_stored
from .prior import ClassPrior, format_scales, prior_of
from .probes import REPEATS, kernel_times, probed_formats, timed_in_passes
from .quick_blocks import block_probe_formats, block_probe_matrices, own_multiplier
from .quick_large import (
    corrects_by_gathers,
    large_correction,
    large_probe_matrices,
    large_probe_plan,
)
from .timemodel import (
    TERMS,
    Calibration,
    conversion_terms,
)

QUICK_MEASUREMENT = 14
"""What a quick calibration measured and the prior it scales: a stored quick calibration of
another value is measured again (:mod:`.store`). 3: the prior's kernel variants (``sell`` and
``pjds`` with a work-item per slice on PoCL); 4: the large probes on CPUs; 5: ``bsr`` and the
block probe on CPUs; 6: ``sell`` and ``pjds`` in the probes in the cache, the large probes on
every CPU; 7: the prior's ``longest`` per compute unit (:func:`.prior.format_scales`); 8: ``sell``'s
and ``pjds``'s slices a loop over lanes, run also on PoCL 3.0; 9: ``dia``'s row chunks storing y
from their vectors, and its correction beyond the cache taken from ``csr-blocks`` (its
``beyond_cache_like`` until 10); 10: the ELL order measured first, rows of
scattered columns in an order of their own (:mod:`clspmv.ell_order`), and the ELL layouts'
correction beyond the cache taken from ``csr-blocks`` (no large probe of ``ellr``:
:data:`clspmv.formats.ell.ELL_BEYOND_CACHE_LIKE`), ``dia`` timed on a large band of its own
(:func:`.quick_large.large_probe_plan`); 11: ``dia``'s row chunks under Intel's CPU runtime at
every diagonal count (:mod:`clspmv.formats.dia`), and where a format's own part of the
correction beyond the cache follows the gathers, ``csr-blocks`` timed on the large band for the
part every format shares; 12: ``sell``'s and ``pjds``' slices on CPUs each a work-group of its
own (:data:`clspmv.formats.sell.SLICES_PER_GROUP`); 13: the prior's ``sell`` and ``pjds``
rows fitted again with their idle lanes on CPUs their own padding
(:meth:`~clspmv.formats.costs.FormatCosts.idle_lanes`); 14: ``csr-blocks``' entry loop gathering
x before it loads the value (:data:`clspmv.model.measurements.MEASUREMENT` 18)."""
PROBE_ROWS = 1 << 16
"""Rows of the band, random and power-law probe matrices (0.5 M entries at most: 6 MB in CSR,
in a CPU's cache; products of a few tenths of a millisecond on the 2-core CPU)."""
STREAM_BYTES = 64 << 20
"""Bytes per buffer of the quick streaming probe (two buffers)."""
STREAM_REPEATS = 3
"""Timed copies per variant of the quick streaming probe (the median is kept)."""
GROUPS = {
    "launch": ("launch",),
    "memory": ("bytes", "xbytes", "wide bytes", "far xbytes"),
    "cache": ("cached bytes", "work-items", "longest", "idle lanes", "cached wide bytes",
              "length changes"),
}
"""The terms each fitted multiplier scales."""
PULL = 0.5
"""Weight of the pull of each multiplier's logarithm (per group, per probed format) towards 0
in the fit."""


def prior_class(device_type: str) -> str:
    """The prior's class of a device type: ``"gpu"``, else ``"cpu"``."""
    return "gpu" if device_type == "gpu" else "cpu"


def probe_formats(device_class: str) -> tuple[str, ...]:
    """The formats the probes time on a device of ``device_class`` (``"cpu"`` or ``"gpu"``):
    those probed in ``"quick cpu"`` or ``"quick gpu"``
    (:attr:`~clspmv.formats.costs.FormatCosts.probed_in`): a row per work-item (``csr-scalar``),
    the class's usual fastest CSR kernel (``csr-blocks``, ``csr-vector``) and the padded ELL
    layout (``ellr``), whose terms differ most; on CPUs also ``dia`` and ``csr-merge``, the
    formats most unprobed CPU choices missed against (stencils and blocks; R-MAT and random rows:
    ``reports/2026-11-28-cpu-2core-xeon-quick-candidate``), and ``sell`` and ``pjds``, which part
    from the CSR kernels in the cache one way on some CPUs and the other way on others (2.3 times
    slower on R-MAT on the 16-core node, the fastest on the 2-core Xeon).
    (Every format probed, each fitted to its own probes drawn towards the prior, chose worse on
    the 2-core CPU: the products of small matrices in the cache, timed in a few seconds on a
    shared machine, moved formats by their noise.)"""
    return probed_formats(f"quick {device_class}")


def probe_matrices(simd_width: int, compute_units: int) -> dict[str, sp.csr_matrix]:
    """The probes' matrices: :func:`clspmv.model.benchmarks.small_matrices` of
    :data:`PROBE_ROWS` rows."""
    return small_matrices(simd_width, compute_units, PROBE_ROWS)


@dataclass
class QuickProbes:
    """What the quick calibration measured: per (matrix, format) the fastest kernel seconds and
    the conversion seconds, the streaming bandwidth, the passes of its timings
    (:class:`clspmv.model.probes.Passes`) and the fastest kernel seconds of the large probes."""

    kernel_s: dict[tuple[str, str], float]
    conversion_s: dict[tuple[str, str], float]
    stream_bw: float
    passes: int
    slowest: float
    """The reference product's slowest time over its fastest, less 1."""
    noisy: list[str]
    """The probe matrices still timed while the reference product ran slow."""
    seconds: float = 0.0
    large_s: dict[tuple[str, str], float] = field(default_factory=dict)
    """Per (large probe matrix, format) the fastest kernel seconds (none where
    :func:`~.quick_large.large_probe_plan` names no format)."""

    def to_json(self) -> dict[str, object]:
        """JSON-ready (a quick calibration's ``measurements["quick"]``:
        :data:`QUICK_MEASUREMENTS`)."""
        def keyed(d: dict[tuple[str, str], float]) -> dict[str, float]:
            return {f"{m}/{f}": t for (m, f), t in d.items()}
        return {"kernel_s": keyed(self.kernel_s), "conversion_s": keyed(self.conversion_s),
                "stream_bw": self.stream_bw, "passes": self.passes,
                "slowest": min(self.slowest, 1e6), "noisy": list(self.noisy),
                "seconds": self.seconds, "large_s": keyed(self.large_s)}


QUICK_MEASUREMENTS = record({"quick": record({
    "kernel_s": table(number(high=1e6, positive=True), max_len=64),
    "conversion_s": table(number(high=1e6), max_len=64),
    "stream_bw": number(high=1e15, positive=True), "passes": number(1, 100, integer=True),
    "slowest": number(high=1e6), "noisy": items(text(), max_len=64),
    "seconds": number(high=1e6)}, {
    "large_s": table(number(high=1e6, positive=True), max_len=64)})})
"""The shape of a quick calibration's ``measurements`` in its file (:mod:`clspmv.cache_schema`)."""


def measure_quick(device: Device, precision: Precision, progress: bool = False
                  ) -> tuple[QuickProbes, dict[str, Features]]:
    """Time the probes on ``device`` (the module's docstring): the probes and the features of
    their matrices (the large ones' too). DeviceError on a simulator and past the probes' time
    bound."""
    refuse_simulator(device, "a quick calibration")
    start = time.perf_counter()
    device_class = prior_class(device.type)
    mats = probe_matrices(device.simd_width, device.compute_units)
    converted = set(mats)  # the probes whose conversions the fit reads
    names = {k: probe_formats(device_class) for k in mats}
    blocks = block_probe_matrices(device_class)
    mats.update(blocks)
    names.update({k: block_probe_formats() for k in blocks})
    small = set(mats)
    plan = large_probe_plan(Layout.for_device(device))
    if plan:
        large = large_probe_matrices(device.simd_width, device.compute_units)
        mats.update({k: large[k] for k in plan})
        names.update(plan)
    mats = {k: canonical_csr(v, precision.value) for k, v in mats.items()}
    feats = {k: with_exact_diagonals(features(v, device.simd_width), v) for k, v in mats.items()}
    stream = bandwidth.copy_rate(device, STREAM_REPEATS, progress=False,
                                 nbytes=min(STREAM_BYTES, device.max_allocation // 4))
    conversion_s: dict[tuple[str, str], float] = {}
    kernel_s: dict[tuple[str, str], float] = {}
    with ProbeRun(device, "the quick calibration", None, progress) as run:

        def uploaded(key: str) -> dict[str, Format]:
            """The matrix ``key`` in each of its formats, on the device (built untimed first
            for the launch probe's matrix, as the full calibration's)."""
            out = {}
            for name in names[key]:
                if refusal(name, feats[key]) is not None:
                    continue
                layout = FORMAT_CLASSES[name].layout_for(device)
                own = ({"long_rows": 0} if getattr(FORMAT_CLASSES[name], "splits_long_rows",
                                                   False) else {})
                if key == "launch":
                    convert(mats[key], name, layout, precision, **own).compile(device)
                t0 = time.perf_counter()
                out[name] = convert(mats[key], name, layout, precision, owned=True, **own)
                out[name].upload(device)
                device.queue.finish()
                if key in converted:  # the large and block probes' are left out of the fit
                    conversion_s[(key, name)] = time.perf_counter() - t0
                run.step()
            return out

        kept = {k: uploaded(k) for k in small}  # timed in rounds over the formats, every pass

        def time_matrix(key: str) -> None:
            x = cl_array.to_device(device.queue, np.ones(mats[key].shape[1], precision.value))
            y = cl_array.zeros(device.queue, mats[key].shape[0], precision.value)
            # a large matrix's formats are converted for each pass that times it and dropped
            # after; timed in rounds over them, as every probe and benchmark is: each format's
            # products then stream from memory (timed one format at a time, on the 2-core Xeon
            # they ran 1.5-2x faster, partly from its cache, and ranked the formats otherwise)
            timed = kernel_times(kept[key] if key in kept else uploaded(key), x, y, REPEATS,
                                 run)
            for name, t in timed.items():
                kernel_s[(key, name)] = min(t, kernel_s.get((key, name), t))

        passes = timed_in_passes(list(mats), time_matrix, Sentinel(device, precision).seconds)
    probes = QuickProbes({k: t for k, t in kernel_s.items() if k[0] in small}, conversion_s,
                         stream, passes.passes, passes.slowest, passes.noisy,
                         time.perf_counter() - start,
                         {k: t for k, t in kernel_s.items() if k[0] not in small})
    return probes, feats


def _group_of_term() -> np.ndarray:
    """Per term of :data:`~clspmv.model.timemodel.TERMS` the index of its group in
    :data:`GROUPS`."""
    index = {t: g for g, terms in enumerate(GROUPS.values()) for t in terms}
    return np.array([index[t] for t in TERMS])


def fit_quick(probes: QuickProbes, feats: dict[str, Features], device: Device | object,
              formats: tuple[str, ...] = SINGLE_FORMATS, prior: ClassPrior | None = None,
              layout: Layout | None = None) -> Calibration:
    """The quick calibration of ``device`` (its ``name``, ``driver_version``, ``type``,
    ``cache_bytes`` and ``compute_units`` are read) from its probes: the prior (default: the
    shipped one of its class; another for a cross-validation, ``tools/quick_crossval.py``) scaled
    by the measured launch cost and streaming bandwidth and the device's compute units
    (:func:`~clspmv.model.prior.format_scales`), times the group multipliers and each probed
    format's own multiplier of its work in the cache, fitted to the probes' kernel times (a
    format of the block probe, :mod:`.quick_blocks`, fitted alone to its own after them);
    conversions the prior's times the probes' median ratio. ``layout``: the device's, whose
    kernel variants (:meth:`~clspmv.formats.costs.FormatCosts.kernel_variant`) take the prior's
    speed-ups (default: the features' layout, which runs none)."""
    prior = prior or prior_of(prior_class(device.type))  # type: ignore[attr-defined]
    layout = layout or model_layout(next(iter(feats.values())))
    shapes = {f: prior.kernel_shape(f, layout)
              for f in {*formats, *(f for _, f in probes.kernel_s)}}
    # the launch scale that gives each probed format's prior launch term its time on the matrix
    # of one row per lane (the prior's shapes are relative to the full calibration's launch cost)
    first = TERMS.index("launch")
    tiny = [t / (max(launches(f, feats[m]), 1) * shapes[f][first])
            for (m, f), t in probes.kernel_s.items() if m == "launch" and shapes[f][first] > 0]
    launch = float(np.median(tiny))
    cal = Calibration(device.name, device.driver_version, __version__,  # type: ignore
                      "quick", device.cache_bytes, launch, probes.stream_bw,  # type: ignore
                      probes.stream_bw, x_miss=[list(p) for p in prior.x_miss],
                      stream_miss=[list(p) for p in prior.stream_miss],
                      measurement=QUICK_MEASUREMENT)
    units = device.compute_units  # type: ignore[attr-defined]
    base = {f: np.asarray(shapes[f]) * format_scales(f, launch, probes.stream_bw, units)
            for f in formats}
    group = _group_of_term()
    alone = set(block_probe_formats())
    keys = [k for k in probes.kernel_s if k[1] not in alone]
    # per probe the predicted seconds of each group of terms, before the multipliers
    parts = np.array([np.bincount(group, base[f] * cal.terms(f, feats[m]), len(GROUPS))
                      for m, f in keys])
    measured = np.log([probes.kernel_s[k] for k in keys])
    probed = sorted({f for _, f in keys})
    of_probe = np.array([probed.index(f) for _, f in keys])
    cached = list(GROUPS).index("cache")

    def predicted(log_m: np.ndarray) -> np.ndarray:
        """Per probe the seconds under the group multipliers, its cache group's also times its
        format's own multiplier (the last ``len(probed)`` of ``log_m``)."""
        scaled = parts * np.exp(log_m[:len(GROUPS)])
        scaled[:, cached] *= np.exp(log_m[len(GROUPS):])[of_probe]
        return scaled.sum(axis=1)

    def residuals(log_m: np.ndarray) -> np.ndarray:
        return np.concatenate([np.log(np.maximum(predicted(log_m), 1e-30)) - measured,
                               PULL * log_m])

    log_m = least_squares(residuals, np.zeros(len(GROUPS) + len(probed))).x
    multiplier = np.exp(log_m[:len(GROUPS)])[group]
    own = dict(zip(probed, np.exp(log_m[len(GROUPS):]), strict=True))
    in_cache = group == cached
    for f in sorted(alone & set(formats)):  # each alone, under the groups' multipliers
        mine = [(m, g) for m, g in probes.kernel_s if g == f]
        if mine:
            own[f] = own_multiplier(
                np.array([base[f] * multiplier * cal.terms(f, feats[m]) for m, _ in mine]),
                in_cache, np.array([probes.kernel_s[k] for k in mine]), PULL)
    cal.kernel = {f: [float(v) for v in base[f] * multiplier
                      * np.where(in_cache, own.get(f, 1.0), 1.0)] for f in formats}
    cal.gather_bw = 1.0 / float(np.median([c[TERMS.index("xbytes")]
                                           for c in cal.kernel.values()
                                           if c[TERMS.index("xbytes")] > 0]))
    correction = large_correction(cal, probes.large_s, feats, formats,
                                  corrects_by_gathers(layout))
    (cal.large_ratio, cal.large_miss, cal.large_shared, cal.large_scatter,
     cal.large_whole) = correction
    ratio = float(np.median([t / np.dot(prior.conversion(f), conversion_terms(f, feats[m]))
                             for (m, f), t in probes.conversion_s.items()]))
    cal.conversion = {f: [float(v) * ratio for v in prior.conversion(f)] for f in formats}
    cal.fit = {f: float(np.median([abs(cal.kernel_time(f, feats[m]) / probes.kernel_s[(m, f)]
                                       - 1) for m, g in probes.kernel_s if g == f]))
               for f in {f for _, f in probes.kernel_s}}
    cal.measurements = {"quick": probes.to_json()}
    return cal


def quick_calibrate(device: Device, progress: bool = False, dtype: object = np.float64
                    ) -> Calibration:
    """Measure the quick probes on ``device`` (float32 where it has no fp64) and fit the quick
    calibration (:func:`fit_quick`), on a CPU after its ELL order where none is stored
    (:func:`clspmv.model.order_probe.ensure_stored`: the probes' ``ellr`` is timed in the
    layouts of the order that the formats will be converted in, and the calibration records it
    as a full one does); one :class:`~clspmv.errors.ClspmvWarning` where probes
    stayed noisy (the calibration stays flagged in its measurements)."""
    start = time.perf_counter()
    precision = resolve(dtype if device.fp64 else np.float32, np.float64)
    ensure_stored(device)  # the ELL order, which the probes' ELL layouts follow
    probes, feats = measure_quick(device, precision, progress)
    layout = Layout.for_device(device)
    cal = fit_quick(probes, feats, device, layout=layout)
    if not layout.lockstep and stored(device):
        cal.ell_row_major_width, cal.ell_scattered_row_major_width = row_major_widths(device)
    cal.seconds = time.perf_counter() - start
    if probes.noisy:
        warnings.warn(f"the quick calibration of {device.name} measured noise: a reference "
                      f"product ran up to {probes.slowest:.0%} slower than its fastest while "
                      f"its probes were timed, {probes.passes} times ("
                      f"{', '.join(probes.noisy)}); it is flagged and its choices of format may "
                      "be off. Measure again on a quiet machine: clspmv calibrate --device "
                      f"{device.index[0]}:{device.index[1]}", ClspmvWarning, stacklevel=3)
    return cal
