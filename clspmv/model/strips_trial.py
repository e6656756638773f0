"""A trial of a strips plan on the device, when ``format="auto"`` finds one predicted
:data:`clspmv.model.strips.TRIAL_MARGIN` faster than the best single format and a trial is
due (:mod:`.trial`'s rule): every block of the plan tries its likeliest formats, the blocks'
fastest are joined into a ``strips`` matrix, and that matrix is timed side by side with the
fastest single format of the matrix's own trial, in the same rounds. As in a single trial, the
model's choice stands unless the other measured :data:`clspmv.model.trial.MARGIN` faster: the
strips for a worthwhile plan (:attr:`clspmv.model.strips.StripsPlan.worthwhile`), else the
single format; within a block, the plan's format. On the 2-core CPU two timings of the same
product a minute apart differ by up to 40 %: a plan predicted 9 % faster measured 2.5 % faster
in its trial and 20 % slower afterwards (``reports/2026-11-26-cpu-2core-zen4-strips``).

Why: a plan's blocks are chosen from predictions, and the model's error on one format's time
is of the size of the gaps between the best few, as for a whole matrix. On the H200 (float64, a
27-point stencil above an R-MAT graph, 106 M entries) the plan put the stencil in ``hyb``,
predicted a little faster than ``dia``: the plan measured 1.03 times as fast as the best single
format, while the same blocks with the stencil in ``dia`` measured 1.13 times
(``reports/2026-11-26-h200-partition/strips-eval.txt``). The winner's device matrix is kept,
not converted again.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from ..device import Device
from ..formats import Format
from ..formats.strips import Strips, row_slice
from ..precision import Precision
from . import trial as trials
from .features import features, with_exact_diagonals
from .predict import Prediction, predict_features
from .probes import kernel_times
from .strips import StripsPlan, block_calibration
from .timemodel import Calibration


@dataclass(frozen=True)
class BlockCandidates:
    """One block of a plan and the formats its trial tries."""

    rows: tuple[int, int]
    predictions: dict[str, Prediction]
    """Every format's prediction for the block on its own."""
    names: list[str]
    """The formats tried: the plan's first (unless the block's own features refuse it), then
    :func:`clspmv.model.trial.candidates`."""


class BlockTrialError(ValueError):
    """Every candidate of a block of the plan refused its rows or found no room on the device:
    no strips matrix can be joined (the single formats decide)."""


@dataclass(frozen=True)
class StripsTrial:
    """What a strips trial measured."""

    winner: str
    """``"strips"`` or the single format that won."""
    plan: StripsPlan
    """The plan with each block in its fastest measured format. Its ``predicted_s`` adds the
    blocks' own predictions of those formats (their own features), while ``single_s`` stays the
    plan search's: :attr:`StripsPlan.gain` compares two estimates made differently."""
    kernel_ms: dict[str, float]
    """``"strips"`` (the joined blocks) and every single format tried, in kernel ms."""
    converted: Format
    """The winner, converted and uploaded to the device (the caller's matrix)."""
    seconds: float
    """Wall seconds of the trial (conversions, uploads, products)."""


def block_candidates(csr: sp.csr_matrix, device: Device, cal: Calibration, plan: StripsPlan,
                     expected_products: int | None) -> list[BlockCandidates]:
    """Every block's predictions (its own features: one pass over the matrix; its share of the
    cache, :func:`clspmv.model.strips.block_calibration`) and the formats its trial tries."""
    wg = min(256, device.max_work_group_size)
    out = []
    for r0, r1, planned in plan.blocks:
        part = row_slice(csr, r0, r1)
        f = with_exact_diagonals(
            features(part, device.simd_width, compute_units=device.compute_units), part)
        preds = predict_features(f, block_calibration(cal, part.nnz, csr.nnz), wg)
        first = [planned] if preds[planned].refused is None else []
        names = first + [n for n in trials.candidates(preds, expected_products)
                         if n != planned]
        out.append(BlockCandidates((r0, r1), preds, names))
    return out


def predicted_seconds(single: dict[str, Prediction], single_names: list[str],
                      blocks: Sequence[BlockCandidates], device_type: str) -> float:
    """Predicted seconds of a strips trial on a device of ``device_type``: the single formats'
    trial and every block's (:func:`clspmv.model.trial.predicted_seconds`)."""
    return trials.predicted_seconds(single, single_names, device_type) + sum(
        trials.predicted_seconds(b.predictions, b.names, device_type) for b in blocks)


def run(csr: sp.csr_matrix, device: Device, precision: Precision, plan: StripsPlan,
        blocks: Sequence[BlockCandidates], single_names: list[str], launch_s: float = 0.0,
        owned: bool = False) -> StripsTrial:
    """Try every block's candidates on its rows (:func:`clspmv.model.trial.run`; each block
    keeps only its winner on the device), join the winners into a ``strips`` matrix, then try
    ``single_names`` on the whole matrix and time its fastest beside the strips, keeping the
    model's choice (see the module docstring) unless the other measured
    :data:`clspmv.model.trial.MARGIN` faster. A block's products are timed each after an
    untimed one of its format, as a single trial's are: a block the cache holds is timed from
    the cache, which a product of every block would not find (the joined blocks' time against
    the single format's is not biased so). :class:`BlockTrialError` when a block's
    candidates all fail (refused, or no room on the device). ``launch_s``: the launch cost
    per block in the returned plan's predicted time; ``owned``: as
    :func:`clspmv.formats.convert`'s, for ``csr`` (its row slices included)."""
    start = time.perf_counter()
    won = []
    for b in blocks:
        try:
            won.append(trials.run(row_slice(csr, *b.rows), device, precision, b.names, owned))
        except ValueError as err:
            raise BlockTrialError(f"rows {b.rows[0]}:{b.rows[1]}: {err}") from None
    joined = Strips.of_uploaded(csr.shape, Strips.layout_for(device),
                                [(*b.rows, d.converted) for b, d in zip(blocks, won, strict=True)],
                                plan.strip_rows)
    single = None
    if single_names:
        try:
            single = trials.run(csr, device, precision, single_names, owned)
        except ValueError:
            single = None  # no single format fits beside the blocks: the strips alone are timed
    timed: dict[str, Format] = {Strips.name: joined}
    if single is not None:
        timed[single.winner] = single.converted
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
    y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
    seconds = kernel_times(timed, x, y, trials.REPEATS)
    winner = Strips.name
    if single is not None:
        strips_s, single_s = seconds[Strips.name], seconds[single.winner]
        if (single_s * (1 + trials.MARGIN) < strips_s if plan.worthwhile
                else strips_s * (1 + trials.MARGIN) >= single_s):
            winner = single.winner
    kernel_ms = {**(single.kernel_ms if single else {}),
                 **{k: v * 1e3 for k, v in seconds.items()}}
    formats = [d.winner for d in won]
    predicted = sum(b.predictions[fmt].kernel_s or 0.0
                    for b, fmt in zip(blocks, formats, strict=True))
    measured_plan = replace(
        plan, blocks=tuple((*b.rows, fmt) for b, fmt in zip(blocks, formats, strict=True)),
        block_params=tuple(params for *_, params in joined.plan),
        predicted_s=predicted + len(formats) * launch_s)
    return StripsTrial(winner, measured_plan, kernel_ms, timed[winner],
                       time.perf_counter() - start)
