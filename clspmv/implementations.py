"""Which of this machine's CPU OpenCL implementations is fastest, from their stored calibrations.

One machine can have several CPU OpenCL implementations over the same cores (Debian's PoCL, the
PyPI PoCL of the ``pocl`` extra, Intel's CPU runtime ``intel-opencl-rt``), and their products
differ a lot in speed (on a 2-core EPYC, Intel's runtime reached 0.6 of the products of Debian's
PoCL 3.1, its ``dia`` a third: issue 44). Each stores its own calibration
(:mod:`clspmv.model.store`). :func:`compare` ranks the CPU devices of one processor
(:func:`clspmv.fastest_cpu.processor`) that have one by the predicted kernel time of their
fastest format on :func:`reference_matrices`, geometric mean over the matrices, measuring
nothing; ``clspmv doctor`` says the result (:func:`finding`) and records it for the default
device (:func:`clspmv.fastest_cpu.remember`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .device import Device, devices
from .errors import ClspmvWarning
from .fastest_cpu import Compared, processor, remember
from .model.benchmarks import small_matrices
from .model.features import features, with_exact_diagonals
from .model.predict import predict_features
from .model.store import load
from .model.timemodel import Calibration

REFERENCE_ROWS = 1 << 17
"""Rows of each reference matrix."""


@functools.cache
def reference_matrices() -> dict[str, sp.csr_matrix]:
    """The products the implementations are compared on: a band of 8, 8 random columns and
    power-law rows of :data:`REFERENCE_ROWS` rows (1.05, 1.05 and 0.89 M entries, 10-12 MB in
    CSR), float64: the quick calibration's probe matrices
    (:func:`clspmv.model.benchmarks.small_matrices`, fixed seeds: the shapes every calibration
    has timed) at twice the probes' rows, so that the products weigh memory traffic too, as
    typical ones do (the probes' 0.5 M entries stay in a CPU's cache), and the same for every
    device (the probes' rows are a multiple of each device's lanes; its one-row launch matrix
    is left out)."""
    mats = small_matrices(1, 1, REFERENCE_ROWS)
    del mats["launch"]
    return mats


@dataclass(frozen=True)
class Implementation:
    """One calibrated CPU device: its calibration's kind, and per reference matrix the fastest
    format and its predicted kernel seconds."""

    device: Device
    kind: str
    fastest: dict[str, tuple[str, float]]

    @property
    def seconds(self) -> float:
        """Geometric mean of the fastest formats' predicted seconds."""
        return float(np.exp(np.mean(np.log([s for _, s in self.fastest.values()]))))


def implementation(device: Device, cal: Calibration) -> Implementation:
    """``device``'s predicted fastest products on the reference matrices under ``cal``: the
    features computed for the device (its SIMD width and compute units set its formats'
    layouts)."""
    best = {}
    for name, csr in reference_matrices().items():
        f = with_exact_diagonals(
            features(csr, device.simd_width, compute_units=device.compute_units), csr)
        preds = predict_features(f, cal, min(256, device.max_work_group_size))
        timed = [(p.kernel_s, p.format) for p in preds.values() if p.kernel_s is not None]
        seconds, fmt = min(timed)
        best[name] = (fmt, seconds)
    return Implementation(device, cal.kind, best)


@dataclass(frozen=True)
class Comparison:
    """The CPU implementations of one processor: the calibrated ones, fastest first, and the
    others."""

    processor: str
    ranked: tuple[Implementation, ...]
    uncalibrated: tuple[Device, ...]

    def slower(self) -> list[tuple[Implementation, float]]:
        """Each calibrated implementation after the fastest, with its predicted time over the
        fastest's."""
        first = self.ranked[0].seconds
        return [(imp, imp.seconds / first) for imp in self.ranked[1:]]

    def compared(self) -> list[Compared]:
        """The calibrated implementations as :func:`clspmv.fastest_cpu.remember` records
        them."""
        return [Compared(imp.device, imp.seconds) for imp in self.ranked]


def compare(found: Sequence[Device] | None = None) -> list[Comparison]:
    """A :class:`Comparison` per processor with two or more CPU devices among ``found``
    (default: every device), from the stored calibrations alone (an unusable file counts as
    none, without its warning: ``clspmv doctor``'s calibration lines say so)."""
    cpus = [d for d in (devices() if found is None else found)
            if d.type == "cpu" and not d.is_simulator]
    groups: dict[str, list[Device]] = {}
    for d in cpus:
        groups.setdefault(processor(d), []).append(d)
    out = []
    for name, group in groups.items():
        if len(group) < 2:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClspmvWarning)
            cals = [load(d) for d in group]
        ranked = sorted((implementation(d, cal) for d, cal in zip(group, cals, strict=True)
                         if cal is not None), key=lambda imp: imp.seconds)
        out.append(Comparison(name, tuple(ranked),
                              tuple(d for d, cal in zip(group, cals, strict=True)
                                    if cal is None)))
    return out


def compare_and_remember(found: Sequence[Device] | None = None) -> list[Comparison]:
    """:func:`compare`, and the ranking of every processor with two or more calibrated CPU
    devices recorded for the default device (:func:`clspmv.fastest_cpu.remember`): what
    ``clspmv doctor`` and ``clspmv calibrate`` of a CPU device do."""
    comparisons = compare(found)
    compared = [c for comp in comparisons if len(comp.ranked) > 1 for c in comp.compared()]
    if compared:
        remember(compared)
    return comparisons


def calibrate_command(device: Device) -> str:
    """The command that stores a quick calibration of ``device`` (seconds)."""
    return f"clspmv calibrate --quick --device {device.index[0]}:{device.index[1]}"


WHAT = "fastest CPU implementation"
"""The ``what`` of :func:`finding`."""


def finding(comparison: Comparison) -> dict[str, object]:
    """``clspmv doctor``'s line on ``comparison``: ``what``, ``ok``, ``detail`` and ``note``
    (fine, but the comparison needs calibrations: the commands that store them)."""
    todo = "; ".join(f"{d}: {calibrate_command(d)}" for d in comparison.uncalibrated)
    if len(comparison.ranked) < 2:
        have = (f"only {comparison.ranked[0].device} has a calibration" if comparison.ranked
                else "no CPU implementation has a calibration")
        return {"what": WHAT, "ok": False, "note": True,
                "detail": f"unknown: {have}; calibrate the others to compare them (seconds "
                          f"each), then run clspmv doctor again: {todo}"}
    first = comparison.ranked[0]
    others = ", ".join(f"{imp.device} {ratio:.2f}x its time ({imp.kind} calibration)"
                       for imp, ratio in comparison.slower())
    detail = (f"{first.device}: predicted {first.seconds * 1e3:.3g} ms per product "
              f"(geometric mean of the fastest formats on the reference matrices, {first.kind} "
              f"calibration; the default among the CPU devices), {others}")
    if todo:
        detail += f"; not calibrated, not compared: {todo}"
    return {"what": WHAT, "ok": True, "note": False, "detail": detail}
