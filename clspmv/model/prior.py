"""The prior of the quick calibration (:mod:`.quick`): per device class (CPU, GPU) every format's
kernel coefficients relative to the device's launch cost and streaming bandwidth, its
conversion coefficients, and the x cache's miss curves, derived from full calibrations.

A full calibration's coefficient of a term is a device's cost per unit of that term; divided by
the device's own scale (:func:`format_scales`: the launch cost for the ``launch`` term, one
compute unit's share of the inverse streaming bandwidth for the critical path ``longest``, the
inverse streaming bandwidth for every other term: bytes, lines of x and the per-item terms
alike) it becomes a shape that
devices of one class share more closely than the coefficients themselves. :func:`derive` takes
the median of those shapes per device (its calibrations), then across devices, so that a device
with many stored calibrations counts once. A term most devices' fits left out stays 0 (the CPUs'
``longest`` of ``csr-scalar``): the median of the non-zero values instead chose no better in a
leave-one-processor-out cross-validation (``tools/quick_crossval.py``; the report
``reports/2026-11-28-cpu-2core-xeon-quick-agreement``). The quick calibration multiplies the
shapes by its own measured scales and fits three group multipliers to a handful of probes.

The shipped prior (:data:`PRIOR_FILE`, read by :func:`prior_of`) is :func:`derive` of the full
calibrations (measurement 10 or later) committed under ``reports/`` at commit 976aa3b
(:data:`SOURCES`), their ``sell`` and ``pjds`` fitted again in this model form to the
timings they keep (:func:`.prior_writer.fitted_at_commit`: their idle lanes are their own
padding on CPUs since QUICK_MEASUREMENT 13), the other formats' coefficients as stored: CPUs a
2-core Zen 5
under PoCL 3.1 and 3.0 and a 16-core Xeon under PoCL 5.0, GPUs an H200 and an H100 (NVIDIA
OpenCL); the GPUs' conversions those of a later H200 calibration (:data:`CONVERSION_SOURCES`);
the speed-ups of the CPUs' ``sell`` and ``pjds`` with a work-item per slice, where they run it
(:data:`KERNEL_CHANGES`).
Made again by ``python -m clspmv.model.prior_writer COMMIT`` from a checkout holding them
(:mod:`.prior_writer`).

It holds the library's formats by name; a format registered at run time
(:func:`clspmv.formats.register`) without an entry borrows one (:class:`ClassPrior`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..cache_schema import items, number, record, row, table, text
from ..errors import ClspmvError
from ..formats import FORMAT_CLASSES, Format
from ..formats.layout import Layout
from .timemodel import CONVERSION_TERMS, TERMS

PRIOR_FILE = Path(__file__).with_name("prior.json")
"""The shipped prior: per device class (``"cpu"``, ``"gpu"``) :func:`derive`'s tables, with
the commit of its sources and the model form (terms) it was derived in."""

SOURCES = {
    "cpu": (
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/xeon-77c487f/calibration-xeon.json",
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run4/calibration-zen5-run4.json",
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run5/calibration-zen5-run5.json",
        "reports/2026-11-27-cpu-2core-zen5-pocl30/calibration-pthread-AMD_EPYC-3.0-rc2-"
        "AuthenticAMD-26-2-0.1.0.json",
        "reports/2026-11-27-cpu-2core-zen5-pocl30/calibration-pthread-skylake-avx512-AMD_EPYC-"
        "3.1_debian-AuthenticAMD-26-2-0.1.0.json",
        "reports/2026-11-27-cpu-pjds-spread/zen5-run6/calibration-zen5-run6.json",
    ),
    "gpu": (
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/h200-77c487f/calibration-h200.json",
        "reports/2026-11-27-cpu-pjds-spread/h200-c0f5f87/calibration-h200.json",
        "reports/2026-11-27-h100-auto/calibration-NVIDIA_H100_80GB_HBM3-580.159.04-0.1.0.json",
        "reports/2026-11-27-trial-csr-family/h200/calibration-NVIDIA_H200-580.159.04-0.1.0.json",
    ),
}
"""The full calibrations each class's prior is derived from (paths at commit 976aa3b)."""

CONVERSION_SOURCES = {
    "gpu": ("57c3822", (
        "reports/2026-11-28-h200-conversion/calibration-NVIDIA_H200-580.159.04-0.1.0.json",
    )),
}
"""Per class, a commit and full calibrations at it whose conversion coefficients replace those
of :data:`SOURCES`: measured since the CSR kernels share one store and copy the caller's arrays
early (issue 42), which made their conversions 2-4x faster than those sources measured (the
other formats' within 30 %)."""


_XEON2 = "reports/2026-11-28-cpu-2core-xeon-quick-agreement/calibrations/"
_SLICES = "reports/experiments/2026-11-29-sell-slice-items/"
KERNEL_CHANGES = {
    "cpu": ("slice_items", (
        # per device: (commit, full calibration) before the change, and after it
        (("930de89", _XEON2 + "full1/calibration.json.gz"),
         ("930de89", _SLICES + "xeon-2core-pocl31/calibration-pthread-skylake-avx512-Intel_R_Xeon"
          "_R_Processor-3.1_debian-GenuineIntel-6-167-0.1.0.json")),
        (("930de89", _XEON2 + "full2/calibration.json.gz"),
         ("930de89", _SLICES + "xeon-2core-pocl31/calibration-pthread-skylake-avx512-Intel_R_Xeon"
          "_R_Processor-3.1_debian-GenuineIntel-6-167-0.1.0.json")),
        (("976aa3b", SOURCES["cpu"][0]),
         ("930de89", _SLICES + "node-16cores-pocl50/calibration-cpu-skylake-avx512-Intel_R_Xeon"
          "_R_Processor-5.0_debian-GenuineIntel-6-207-0.1.0.json")),
    )),
}
"""Per class, a kernel variant (named by the format parameter that selects it) that formats gained
after :data:`SOURCES` were measured (those naming it in their
:attr:`~clspmv.formats.costs.FormatCosts.kernel_variants`), and pairs of full calibrations of one
device (commit, path) measured before and after it. The prior keeps the sources' shapes of those
formats and, per format, the variant's :func:`speedup`; :meth:`ClassPrior.kernel_shape` divides
the shape by it (every term alike) on a layout where the format runs the variant by default
(:meth:`~clspmv.formats.costs.FormatCosts.kernel_variant`), so a device that runs the old kernel
(Intel's CPU runtime) keeps the old shape. Dividing rather than taking the formats' shapes from
the later calibrations: a shape is fitted together with the other formats' on one device, and
``sell``'s and ``pjds``'s from the two Xeons measured after the change, among the other formats'
from the sources, chose worse on the 2-core Xeon (auto / fastest on the offsuite and heldout
suites 0.958 and 0.824, worst 0.525: small stencils and bands given to ``sell``) than the
sources' shapes sped up (0.906-0.926 and 0.873, worst 0.635; unchanged: 0.827 and 0.874;
``reports/experiments/2026-11-29-sell-slice-items``). The variant: ``sell`` and ``pjds`` with a
work-item per slice on PoCL (``slice_items``), 1.44 and 1.53 times as fast (:func:`speedup` of
these pairs)."""


def speedup(pairs: Iterable[tuple[dict[str, object], dict[str, object]]], fmt: str) -> float:
    """How many times faster ``fmt``'s kernel became: per pair of full calibrations of one device
    (before, after) the median over their common matrices of the measured kernel seconds before
    over after, then the median per device (:func:`derive`'s device: name and driver), then
    across devices."""
    by_device: dict[str, list[float]] = {}
    for before, after in pairs:
        old = dict(before["measurements"]["kernel_s"])  # type: ignore[index]
        new = dict(after["measurements"]["kernel_s"])  # type: ignore[index]
        ratios = [old[m][fmt] / new[m][fmt] for m in new
                  if m in old and old[m].get(fmt) and new[m].get(fmt)]
        by_device.setdefault(f"{after['device']} {after['driver']}", []).append(
            float(np.median(ratios)))
    return float(np.median([np.median(v) for v in by_device.values()]))


def scales(launch_s: float, stream_bw: float, compute_units: int) -> np.ndarray:
    """Per term of :data:`~clspmv.model.timemodel.TERMS` the device scale a coefficient is
    relative to in the prior: the launch cost for ``launch``; for ``longest`` (one work-item's
    critical path, which one compute unit walks alone) the inverse of one unit's share of the
    streaming bandwidth, ``compute_units / stream_bw``; the inverse streaming bandwidth for the
    others (work the whole device shares). Per unit the full calibrations' ``longest`` of
    ``sell`` agreed across CPUs where per device it did not: a 16-core Xeon under PoCL 5.0 351
    and 2-core CPUs 145-240 before the slice kernel (5623 and 290-481 per device), 75 and 69
    after it (1195 and 137 per device); with the device's scale the prior, whose CPUs were
    mostly of two cores, priced a slice of long rows on 16 cores at a seventh of its cost, and
    ``format="auto"`` took ``sell`` on R-MAT there at 0.45-0.55 of the fastest
    (``reports/experiments/2026-11-29-long-row-probe``). :func:`format_scales` gives each
    format its own."""
    out = np.full(len(TERMS), 1.0 / stream_bw)
    out[TERMS.index("launch")] = launch_s
    out[TERMS.index("longest")] = max(1, compute_units) / stream_bw
    return out


def format_scales(fmt: str, launch_s: float, stream_bw: float, compute_units: int
                  ) -> np.ndarray:
    """:func:`scales` for format ``fmt``: its ``longest`` against the whole device's bandwidth
    (one unit) where every work-item walks the longest row
    (:attr:`~clspmv.formats.costs.FormatCosts.walks_longest`: ``ell``, ``dia``, whose
    ``longest`` is every row's work, not a critical path; on a 32-core Xeon priced per unit it
    tipped near-ties on constant-length rows from ``dia`` to ``csr-scalar``, 0.55-0.66 of the
    fastest)."""
    walks = getattr(FORMAT_CLASSES.get(fmt), "walks_longest", False)
    return scales(launch_s, stream_bw, 1 if walks else compute_units)


def _median_curve(curves: list[list[list[float]]]) -> list[list[float]]:
    """The per-size median of miss curves measured at the same sizes (empty when none)."""
    curves = [c for c in curves if c]
    if not curves:
        return []
    sizes = [b for b, _ in curves[0]]
    same = [c for c in curves if [b for b, _ in c] == sizes]
    shares = np.median(np.array([[m for _, m in c] for c in same]), axis=0)
    return [[float(b), float(m)] for b, m in zip(sizes, np.maximum.accumulate(shares),
                                                 strict=True)]


def _median_by_device(per_device: dict[str, list[np.ndarray]]) -> np.ndarray:
    """The median over devices of each device's median."""
    return np.median(np.array([np.median(np.array(v), axis=0) for v in per_device.values()]),
                     axis=0)


def added_formats() -> tuple[str, ...]:
    """The formats added after :data:`SOURCES` were measured, which none of them timed
    (:attr:`~clspmv.formats.costs.FormatCosts.borrows_prior`): the prior holds for each what a
    format it does not name would borrow (:meth:`ClassPrior.kernel_shape`; ``bsr``, a family of
    its own: per term the median over every format's shape), written out so that the shipped
    prior names every format of the library. The quick calibration scales it by the device's
    probes as any other's, and fits ``bsr``'s own multiplier to a block probe
    (:func:`clspmv.model.quick.block_probe_matrices`)."""
    return tuple(name for name, cls in FORMAT_CLASSES.items() if cls.borrows_prior)


def derive(calibrations: Iterable[dict[str, object]]) -> dict[str, object]:
    """The prior of one device class from full calibrations' JSON (current model form): per
    format the median kernel shape (coefficients over :func:`scales`) and conversion
    coefficients, per device then across devices, and the median miss curves."""
    shapes: dict[str, dict[str, list[np.ndarray]]] = {}
    conversions: dict[str, dict[str, list[np.ndarray]]] = {}
    x_miss, stream_miss = [], []
    for data in calibrations:
        if data.get("terms") != list(TERMS) or data.get("conversion_terms") != list(
                CONVERSION_TERMS):
            raise ValueError(f"calibration of {data.get('device')} is of another model form")
        device = f"{data['device']} {data['driver']}"
        units = int(data["measurements"]["facts"]["compute_units"])  # type: ignore[index]
        launch, stream = float(data["launch_s"]), float(data["stream_bw"])  # type: ignore[arg-type]
        for fmt, coef in dict(data["kernel"]).items():  # type: ignore[call-overload]
            shapes.setdefault(fmt, {}).setdefault(device, []).append(
                np.asarray(coef) / format_scales(fmt, launch, stream, units))
        for fmt, coef in dict(data["conversion"]).items():  # type: ignore[call-overload]
            conversions.setdefault(fmt, {}).setdefault(device, []).append(np.asarray(coef))
        x_miss.append(data.get("x_miss") or [])
        stream_miss.append(data.get("stream_miss") or [])
    return {
        "kernel": {f: [float(v) for v in _median_by_device(d)] for f, d in shapes.items()},
        "conversion": {f: [float(v) for v in _median_by_device(d)]
                       for f, d in conversions.items()},
        "x_miss": _median_curve(x_miss),  # type: ignore[arg-type]
        "stream_miss": _median_curve(stream_miss),  # type: ignore[arg-type]
    }


DEVICE_CLASSES = ("cpu", "gpu")
"""The device classes the prior holds, each with every part."""

_MISS_CURVE = items(row(number(), number(high=1.0)), max_len=64)
PRIOR_SHAPE = record({
    "commit": text(max_len=40), "terms": items(text()), "conversion_terms": items(text()),
    "classes": table(record({
        "kernel": table(row(*[number()] * len(TERMS))),
        "conversion": table(row(*[number()] * len(CONVERSION_TERMS))),
        "x_miss": _MISS_CURVE, "stream_miss": _MISS_CURVE,
        "variants": table(table(number(low=1e-3)))}), keys=text(*DEVICE_CLASSES))})
"""The shape of :data:`PRIOR_FILE` (:mod:`clspmv.cache_schema`), coefficients of this model
form's terms."""


@dataclass(frozen=True)
class ClassPrior:
    """The prior of one device class: per format the kernel shape (coefficients over
    :func:`scales`) and conversion coefficients, and the x cache's miss curves.

    A registered format the prior does not name borrows (:meth:`kernel_shape`,
    :meth:`conversion`): per term the median of the formats of its trial family for the kernel
    (:attr:`~clspmv.formats.costs.FormatCosts.trial_family`: the kernels whose times move
    together) and of its conversion kind for the conversion
    (:attr:`~clspmv.formats.costs.FormatCosts.conversion_kind`), of every format the prior
    names where none of them is there. The quick calibration then scales the borrowed shape by
    the device's probes as any other."""

    kernels: dict[str, list[float]]
    conversions: dict[str, list[float]]
    x_miss: list[list[float]]
    stream_miss: list[list[float]]
    variants: dict[str, dict[str, float]]
    """Format -> kernel variant -> how many times faster than its shape (:data:`KERNEL_CHANGES`)."""

    def kernel_shape(self, fmt: str, layout: Layout | None = None) -> list[float]:
        """The kernel shape of the registered format ``fmt`` (its own, else borrowed), divided by
        the speed-up of the kernel variant it runs by default on ``layout`` where the prior has
        one (:meth:`~clspmv.formats.costs.FormatCosts.kernel_variant`)."""
        cls = FORMAT_CLASSES[fmt]
        shape = own_or_borrowed(self.kernels, fmt, lambda c: c.trial_family == cls.trial_family)
        variant = cls.kernel_variant(layout) if layout is not None else None
        faster = self.variants.get(fmt, {}).get(variant, 1.0) if variant else 1.0
        return shape if faster == 1.0 else [c / faster for c in shape]

    def conversion(self, fmt: str) -> list[float]:
        """The conversion coefficients of the registered format ``fmt`` (its own, else
        borrowed)."""
        kind = FORMAT_CLASSES[fmt].conversion_kind
        return own_or_borrowed(self.conversions, fmt, lambda cls: cls.conversion_kind == kind)


def own_or_borrowed(table: dict[str, list[float]], fmt: str,
                    alike: Callable[[type[Format]], bool]) -> list[float]:
    """``table``'s entry of ``fmt``, else per term the median of the entries of the registered
    formats ``alike`` accepts (of every entry where it accepts none)."""
    if fmt in table:
        return table[fmt]
    lenders = [c for f, c in table.items() if f in FORMAT_CLASSES and alike(FORMAT_CLASSES[f])]
    return [float(v) for v in np.median(np.array(lenders or list(table.values())), axis=0)]


@functools.cache
def _shipped() -> dict[str, object]:
    """:data:`PRIOR_FILE` read and checked (once per process): ClspmvError where it is missing,
    damaged or of another model form."""
    fix = "reinstall clspmv (or make it again: python -m clspmv.model.prior COMMIT)"
    try:
        data = json.loads(PRIOR_FILE.read_text())
        PRIOR_SHAPE(data, "")
    except (OSError, ValueError) as err:  # json's errors and Invalid are ValueErrors
        what = "cannot be read" if isinstance(err, OSError) else "is damaged"
        raise ClspmvError(f"the quick calibration's prior {PRIOR_FILE} {what} ({err}); "
                          f"{fix}") from err
    empty = [f"{c} {part}" for c in DEVICE_CLASSES for part in ("kernel", "conversion")
             if not data["classes"].get(c, {}).get(part)]
    if empty:
        raise ClspmvError(f"the quick calibration's prior {PRIOR_FILE} is damaged (no "
                          f"{', '.join(empty)} coefficients); {fix}")
    if data["terms"] != list(TERMS) or data["conversion_terms"] != list(CONVERSION_TERMS):
        raise ClspmvError(f"the quick calibration's prior {PRIOR_FILE} is of another model form "
                          f"(terms {data['terms']}, this clspmv's {list(TERMS)}); {fix}")
    return data


def prior_of(device_class: str) -> ClassPrior:
    """The shipped prior of ``device_class`` (``"cpu"`` or ``"gpu"``, :data:`PRIOR_FILE`)."""
    data = _shipped()["classes"][device_class]  # type: ignore[index]
    return ClassPrior(data["kernel"], data["conversion"], data["x_miss"], data["stream_miss"],
                      data["variants"])
