"""The quick calibration's large probes on CPUs (:mod:`.quick`): a few formats timed on two
matrices of a few million entries beyond the cache, whose measured over predicted times correct
each format's model there (:meth:`clspmv.model.timemodel.Calibration.large_factor`): the probes
in the cache had ranked the CSR kernels ahead of ``sell`` and ``pjds`` on large irregular
matrices where these ran 1.3-1.6 times faster (``reports/experiments/2026-11-29-quick-large``).
Where ``sell`` and ``pjds`` run a work-item per row, a format's own part of the correction
follows a product's scattered gathers (:func:`corrects_by_gathers`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..formats import FORMAT_CLASSES
from ..formats.layout import Layout
from .benchmarks import large_matrices
from .features import Features
from .prior import own_or_borrowed, prior_of
from .probes import probed_formats
from .timemodel import Calibration, scattered_share, stream_miss_share, streamed_bytes

LARGE_ROWS = 1 << 19
"""Rows of the large probe matrices on CPUs (:func:`large_probe_matrices`: 3.5, 4.2 and 4.2 M
entries, 40-50 MB in CSR; products of 5-9 ms on the 2-core Xeon)."""
BANDED = "large-banded"
"""The large probe matrix of diagonals (:func:`large_probe_plan`)."""
LARGE_MIN_MISS = 0.25
"""The stream's miss share the large probes' products must reach for their correction to be
kept (:func:`large_correction`): below it they ran in the cache and say nothing beyond it."""


def large_probe_formats(layout: Layout) -> tuple[str, ...]:
    """The formats the large probes time on a device of ``layout``: on CPUs (a layout not in
    lockstep) those probed in ``"quick cpu large"`` (``csr-blocks``, ``sell``, ``pjds``: the
    usual CSR kernel and the two sliced ones; the ELL layouts take ``csr-blocks``' correction,
    :data:`clspmv.formats.ell.ELL_BEYOND_CACHE_LIKE`); none on GPUs,
    whose quick choices agree with the full calibration's without them
    (``reports/2026-11-28-cpu-2core-xeon-quick-candidate``). Where ``sell`` and ``pjds`` run no
    kernel variant of the prior (:func:`corrects_by_gathers`) their correction is split by the
    gathers (:func:`large_correction`)."""
    return () if layout.lockstep else probed_formats("quick cpu large")


def large_probe_plan(layout: Layout) -> dict[str, tuple[str, ...]]:
    """Per large probe matrix (:func:`large_probe_matrices`) the formats timed on it on a device
    of ``layout``: :func:`large_probe_formats` on the irregular rows, those probed in ``"quick cpu
    large band"`` (``dia``) on the band :data:`BANDED`; empty on GPUs. ``dia`` had borrowed a
    timed format's ratio: ``ellr``'s on random rows (2.5 against ``csr-blocks``' 1.2 on the
    2-core Zen 4), then ``csr-blocks``' (``reports/2026-11-30-cpu-mkl-optimised-zen4``), with
    which auto took ``dia`` at 0.65-0.76 of the fastest on the stencils and lattices under PyPI's
    PoCL 3.0, whose ``dia`` runs 32-byte vectors there; timed on the band, 0.94-1.00
    (``reports/2026-11-30-cpu-mkl-optimised-ell-scattered``). Where a format's own part of the
    correction follows the gathers (:func:`corrects_by_gathers`) those probed in ``"quick cpu
    large shared"`` (``csr-blocks``) are timed on the band too: their ratio there is the part
    every format shares (:func:`large_correction`)."""
    irregular = large_probe_formats(layout)
    if not irregular:
        return {}
    shared = probed_formats("quick cpu large shared") if corrects_by_gathers(layout) else ()
    return {"large-powerlaw": irregular, "large-random": irregular,
            BANDED: probed_formats("quick cpu large band") + shared}


def corrects_by_gathers(layout: Layout) -> bool:
    """True where a format's own part of the large probes' correction follows a product's
    scattered gathers (:attr:`~clspmv.model.timemodel.Calibration.large_scatter`): on a CPU
    that runs none of the prior's kernel variants
    (:meth:`~clspmv.formats.costs.FormatCosts.kernel_variant`, :data:`.prior.KERNEL_CHANGES`:
    ``sell``'s and ``pjds``'s work-item per slice, PoCL from 3.0 on), so ``sell`` and ``pjds``
    run a work-item per row (Intel's runtime; PyPI's PoCL 3.0 too, measured while its slices
    were OpenCL vectors, which its LLVM 14 compiled without gathers). There their lead on the large
    probes (1.5-1.7 times less over the model than ``csr-blocks``) is a lead in gathering x
    from rows of random columns: the whole correction took them on stacked graphs, dense rows
    and power-law rows, whose long rows they walk one work-item each, at 0.55-0.83 of the
    fastest (``reports/experiments/2026-11-29-quick-slices``). Where the variant runs they lead
    on those matrices too, and the split chose worse (0.998 -> 0.949 on the cpu suite, Debian's
    PoCL 3.1)."""
    variants = prior_of("cpu").variants
    return not layout.lockstep and not any(
        FORMAT_CLASSES[f].kernel_variant(layout) in kinds
        for f, kinds in variants.items() if f in FORMAT_CLASSES)


def large_probe_matrices(simd_width: int, compute_units: int) -> dict[str, sp.csr_matrix]:
    """The large probes' matrices: :func:`clspmv.model.benchmarks.large_matrices` of
    :data:`LARGE_ROWS` rows."""
    return large_matrices(simd_width, compute_units, LARGE_ROWS)


class LargeCorrection(NamedTuple):
    """The quick calibration's correction beyond the cache (:func:`large_correction`), as
    :class:`~clspmv.model.timemodel.Calibration` stores it."""

    ratio: dict[str, float]
    """Per format its large probes' measured over predicted time (``large_ratio``)."""
    miss: float
    """The stream miss share of the large probes' products (``large_miss``)."""
    shared: float
    """Where a format's own part follows the gathers: the timed formats' ratios' geometric mean
    (``large_shared``); else 0."""
    scatter: float
    """Where a format's own part follows the gathers: the large probes' scattered gathers per
    entry (``large_scatter``); else 0."""
    whole: list[str]
    """The formats timed on the band alone (``large_whole``), whose ratio is taken whole: their
    products gather no scattered x there, and where a format's own part follows the gathers, a
    band's product would take none of it."""


NO_CORRECTION = LargeCorrection({}, 0.0, 0.0, 0.0, [])


def lender(fmt: str) -> Callable[[type], bool]:
    """Which timed formats lend ``fmt`` their large probes' ratio where no large probe times it
    (:func:`.prior.own_or_borrowed`): the one its
    :attr:`~clspmv.formats.costs.FormatCosts.beyond_cache_like` names, else those of its
    :attr:`~clspmv.formats.costs.FormatCosts.trial_family`."""
    cls = FORMAT_CLASSES[fmt]
    if cls.beyond_cache_like is not None:
        return lambda other, like=cls.beyond_cache_like: other.name == like
    return lambda other, family=cls.trial_family: other.trial_family == family


def large_correction(cal: Calibration, large_s: dict[tuple[str, str], float],
                     feats: dict[str, Features], formats: tuple[str, ...],
                     by_gathers: bool = False) -> LargeCorrection:
    """The correction beyond the cache of the quick calibration ``cal`` (fitted to the probes in
    the cache, not yet corrected) from the large probes' kernel seconds ``large_s`` (per
    (matrix, format); ``feats`` holds the matrices' features): per format of ``formats`` its
    measured over predicted seconds (the geometric mean over the large matrices), a format no
    large probe timed borrowing another's (:func:`lender`: ``csr-merge`` the CSR kernels', the
    ELL layouts and ``bsr`` ``csr-blocks``'; else the median of the timed formats'), and
    the median stream miss share of those products, and the formats timed on the band
    :data:`BANDED` alone (their ratio taken whole). ``by_gathers`` (:func:`corrects_by_gathers`):
    also the shared ratio, that of a product gathering no scattered x: on the band
    :data:`BANDED`, of the formats timed there as well as on the irregular rows (``csr-blocks``,
    whose own ratio is then its irregular rows' alone; the geometric mean of the irregular
    rows' ratios where none was), and the irregular probes' scattered gathers per entry (their
    median), so that a format's own part of its ratio follows a product's gathers
    (:meth:`~clspmv.model.timemodel.Calibration.large_factor` reads all five).
    :data:`NO_CORRECTION` where nothing was timed or the products missed less than
    :data:`LARGE_MIN_MISS` (they ran in the cache)."""
    if not large_s:
        return NO_CORRECTION
    logs: dict[str, list[float]] = {}
    band: dict[str, float] = {}
    misses = []
    irregular = {f for m, f in large_s if m != BANDED}
    for (m, f), t in large_s.items():
        log = float(np.log(t / cal.kernel_time(f, feats[m])))
        if m == BANDED and f in irregular:
            band[f] = log
            continue
        logs.setdefault(f, []).append(log)
        misses.append(stream_miss_share(streamed_bytes(f, feats[m]), cal.cache_bytes,
                                        cal.stream_miss))
    miss = float(np.median(misses))
    if miss < LARGE_MIN_MISS:
        return NO_CORRECTION
    timed = {f: [float(np.exp(np.mean(v)))] for f, v in logs.items()}
    ratio = {f: own_or_borrowed(timed, f, lender(f))[0] for f in formats}
    whole = sorted(f for f in logs if f not in irregular)
    if not by_gathers:
        return LargeCorrection(ratio, miss, 0.0, 0.0, whole)
    shared = float(np.exp(np.mean(list(band.values()) if band else
                                  [np.mean(v) for f, v in logs.items() if f not in whole])))
    scatter = float(np.median([scattered_share(feats[m])
                               for m in {m for m, _ in large_s if m != BANDED}]))
    return LargeCorrection(ratio, miss, shared, scatter, whole)
