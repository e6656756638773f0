"""What a calibration measures on a device (:class:`Measurements`, the input of
:func:`clspmv.model.calibrate.fit`), the shape it is stored in (:data:`MEASUREMENTS`) and the
version of its measuring (:data:`MEASUREMENT`). The record holds the device facts and the value
type measured, so the benchmark matrices and their features are made again from it without the
device (:meth:`Measurements.from_json`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..cache_schema import items, nullable, number, record, rising, table, text
from ..canonical import canonical_csr
from .benchmarks import benchmark_matrices
from .features import Features, features, with_exact_diagonals
from .probes import XCacheProbe

MEASUREMENT = 18
"""What a calibration measured, bumped when the kernels or their timing change the times it
stores (a stored calibration of another value is measured again, with a warning): 18 =
``csr-blocks``' entry loop gathering x before it loads the value (rows of random columns 10-15 %
less time on the 2-core Zen 4 under Debian's PoCL 3.1: kernels_cl/csr_blocks.cl); 17 =
``sell``'s and ``pjds``' slices on CPUs each a work-group of its own
(:data:`clspmv.formats.sell.SLICES_PER_GROUP`: R-MAT graphs 1.5-2.5x faster on a 16-core Xeon
with PoCL 5.0); 16 = ``dia``'s
row chunks under Intel's CPU runtime at every diagonal count (2.6-6.1x faster than its
work-item per row on a 2-core Zen 4: :mod:`clspmv.formats.dia`); 15 = ELL rows
of scattered columns in an order measured for them (:mod:`clspmv.ell_order`: on the 2-core Zen 4
under PoCL 3.1 row-major, 2.5-3x faster there); 14 =
``dia``'s row chunks on CPUs storing y from their vectors (1.06-1.67x on a 16-core Xeon with
PoCL 5.0, ``reports/experiments/2026-11-30-dia-vector-store``); 13 =
``csr-adaptive``'s blocks loaded from aligned entries on GPUs
(:data:`clspmv.formats.csr_adaptive.ALIGN_ENTRIES`: 1-6 % faster on the H200) and their passes'
row pointers loaded at once, without a barrier between passes summed by shuffles (another
1-13 %); 12 = a
format's arrays uploaded by a write into an empty buffer instead of ``CL_MEM_COPY_HOST_PTR``
(:func:`clspmv.host_buffers.matrix_buffer`: 4-5x faster for arrays of 64-256 MB on the H200, so
the conversions' measured times, uploads included, fell; the calibration took 41 s instead of
56); 11 = ``pjds``'s
(and ``sell``'s) slices dealt over the work-groups on CPUs where sorting put most of the work in
the first ones a thread takes (:func:`clspmv.formats.sell.spread_order`: pJDS 1.2-2x faster on
graphs under PoCL, so the calibration's power-law matrices time it anew); 10 = the
streaming bandwidth (the prior of every format's cost per byte beyond the cache) measured as the
reports' copy bandwidth (:func:`clspmv.bandwidth.copy_rate`: copy kernels on every core over
buffers of at least four times the cache) instead of one ``enqueue_copy`` of twice the banded
matrix's values: on the H200 node's 16-core Xeon (300 MB of L3, which every calibration matrix
fits) that copy ran on one thread at 12.3 GB/s, the products of matrices beyond the cache
streamed at about 90 GB/s, and the model predicted them 4-6 times too slow (the GPU anchors:
median error 3.4, auto / fastest 0.78, worst 0.31); 9 = ``ell``,
``ellr`` and ``hyb``'s ELL part row-major on CPUs from the row width the calibration measures
first (:mod:`clspmv.ell_order`, :func:`.order_probe.measure_ell_order`; a 2-core Zen 5 takes
narrow rows 2.1-2.4x faster row-major, a Zen 4 and a Xeon column-major); 8 = ``dia`` on
CPUs: a work-item per run of rows walking each diagonal over chunks of them, each chunk's run
of diagonals stored chunk after chunk (``row_chunks``: 1.3-3x faster than ``ellr`` on banded
matrices and stencils on a 2-core Zen 5 CPU, 1.2-10x faster than the row kernel; 7 was an earlier
row-chunk kernel's, one array per diagonal, taken back); 6 = ``dia`` on
GPUs: runs of diagonals per stretch of rows, branch-free (``diagonal_runs``: 1.1-1.7x faster on
the H200); 5 = ``hyb`` on
CPUs: its ELL part row-major as ``ell``'s for rows of 10 slots or more (2-6 times faster there)
and as wide as three quarters of the rows reach in float64 (:func:`clspmv.formats.hyb.ell_share`);
4 = ``ell``
and ``ellr`` rows of 10 slots or more stored row-major on CPUs
(:data:`clspmv.ell_order.ROW_MAJOR_WIDTH`: up to 5 times faster there); 3 = each
timed product right after an untimed one of the same format, so that a matrix the cache holds
is timed from the cache (:func:`clspmv.model.probes.kernel_times`); 2 = short
products timed until they reach their steady speed (:data:`clspmv.model.probes.STEADY_S`: on a
2-core CPU the small calibration matrices' products had been timed up to 1.8 times too slow);
1 = products of several kernels timed behind :mod:`clspmv.cover`'s spin, float64 kernels on
NVIDIA with the streaming hint (0: before, when a product's span could hold the host's
enqueueing)."""

_SECONDS = number(high=1e6)
MEASUREMENTS = record({
    "device": text(), "driver": text(), "cache_bytes": number(high=2.0**44, integer=True),
    "stream_bw": number(high=1e15, positive=True), "seconds": _SECONDS,
    "facts": record({"type": text("gpu", "cpu", "accelerator", "other"),
                     "simd_width": number(1, 1024, integer=True),
                     "compute_units": number(1, 1 << 14, integer=True),
                     "cache_bytes": number(high=2.0**44, integer=True)},
                    {"far_x_bytes": number(1, 2.0**40, integer=True),
                     "ell_row_major_width": number(high=4096, integer=True),
                     "ell_scattered_row_major_width": number(high=4096, integer=True)}),
    "dtype": text("float32", "float64"),
    "kernel_s": table(table(number(high=1e6, positive=True), max_len=256), max_len=256),
    "conversion_s": table(table(_SECONDS, max_len=256), max_len=256),
}, {"x_probe": nullable(record({
    "x_bytes": rising(items(number(1, 2.0**40, integer=True), max_len=256)),
    "seconds": items(number(high=1e6, positive=True), max_len=256),
    "scattered_lines": number(high=2.0**40)})),
    "noisy": items(text(), max_len=256),
    "sentinel_s": items(number(high=1e6, positive=True), max_len=4096)})
"""The shape of :meth:`Measurements.to_json` in a calibration file (:mod:`clspmv.cache_schema`):
the device facts bounded as far as :func:`.benchmarks.benchmark_matrices` sizes its matrices
from them sensibly, every time finite and the kernel times above 0 (the fit divides by them)."""


@dataclass
class Measurements:
    """What :func:`.calibrate.measure` times on a device, the input of :func:`.calibrate.fit`: per
    benchmark matrix its features, per (matrix, format) the kernel seconds (:func:`kernel_s`)
    and the conversion seconds. ``facts`` are the device facts :func:`benchmark_matrices` reads
    and ``dtype`` the value type measured: with them the matrices and their features can be made
    again without the device (:meth:`from_json`), so a calibration stores its measurements and
    a changed model form is refitted to them (:func:`.calibrate.refit`)."""

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
    x_probe: XCacheProbe | None = None
    """The x cache probe (None in calibrations measured before it)."""
    noisy: list[str] = field(default_factory=list)
    """The matrices still timed while the reference product ran slow after
    :data:`clspmv.model.probes.MEASURE_PASSES` timings (:func:`.calibrate.measure`): the calibration
    measured noise there."""
    sentinel_s: list[float] = field(default_factory=list)
    """The reference product's kernel seconds before and after each matrix's timing."""

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
                "conversion_s": table(self.conversion_s),
                "x_probe": self.x_probe.to_json() if self.x_probe else None,
                "noisy": list(self.noisy), "sentinel_s": list(self.sentinel_s)}

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
        probe = data.get("x_probe")
        return cls(str(data["device"]), str(data["driver"]), int(data["cache_bytes"]),
                   float(data["stream_bw"]), feats, pairs(data["kernel_s"]),
                   pairs(data["conversion_s"]), float(data["seconds"]), facts, dtype.name,
                   XCacheProbe.from_json(probe) if probe else None,  # type: ignore[arg-type]
                   [str(k) for k in data.get("noisy") or []],  # type: ignore[attr-defined]
                   [float(t) for t in data.get("sentinel_s") or []])  # type: ignore
