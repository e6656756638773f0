"""``clspmv bench --selection`` (on by default with ``--formats all``): how well the library's
``format="auto"`` chose, per matrix, value type and device, measured after every format of the
device ran A x.

One record per matrix, value type and device, ``operation`` ``selection``, ``format`` ``auto``:
the model's prediction of every format (:func:`clspmv.model.select`, the very call of
``DeviceMatrix.from_scipy(A, format="auto")``) next to the kernel times this run measured for
the same matrix, value type and device (the ``spmv`` records of status ``ok``), auto's choice,
its measured time against the fastest measured format, the model's error and the cost of the
selection against one conversion to CSR. The formats' own A x records are the measurements;
then auto's choice and the formats measured near the fastest (:func:`contenders`) are converted
again, all at once, and timed side by side in alternating rounds
(:func:`clspmv.bench.timing.time_side_by_side`): each format's own records are taken in a row,
up to minutes apart, and on a shared CPU a slow phase of the machine can make a format look
twice as slow as it is. With fewer formats than all (``--formats a,b --selection``) the
comparison is with the fastest of those measured.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from ..device import Device
from ..model import calibration, select
from ..model import trial as trials
from ..model.strips import MIN_STRIP_ENTRIES, plan_for_device
from . import timing
from .operation import Context, Operation, Settings, note
from .records import Record, device_label
from .reference import Problem
from .speedups import REFERENCE_FORMAT

OPERATION = "selection"
"""The ``operation`` of the selection's records (their ``format`` is ``auto``)."""
TIE_PCT = 5.0
"""A choice within this many per cent of the fastest measured format counts as a tie (the
fastest format changes between runs when several are this close)."""
CONTENDER_PCT = 25.0
"""Formats measured within this many per cent of the fastest are timed again side by side."""
MAX_CONTENDERS = 4
"""At most this many formats are timed side by side (auto's choice and the nearest to the
fastest): they are all on the device at once."""
FIELDS = {
    "chosen": "auto's format: clspmv.model.select (format='auto' of DeviceMatrix.from_scipy, "
              "least predicted kernel time)",
    "calibration": "the device's calibration the prediction used: measured or quick-default",
    "why": "the model's reason for the choice",
    "predicted_ms": "format -> predicted kernel ms (formats that refuse the matrix left out)",
    "measured_ms": "format -> measured kernel ms of this run's A x (status ok only)",
    "chosen_ms": "measured kernel ms of the chosen format (None: not measured ok)",
    "fastest": "the format of least measured kernel ms",
    "fastest_ms": "its kernel ms",
    "vs_fastest": "fastest_ms / chosen_ms: 1 = auto chose the fastest, 0.8 = 20 % slower "
                  "(None when the chosen format was not measured)",
    "within_tie": f"vs_fastest >= 1 / (1 + {TIE_PCT:g} %)",
    "median_error": "median over formats predicted and measured of |pred - meas| / meas",
    "worst_error": "largest |pred - meas| / meas",
    "rank_correlation": "Spearman rank correlation of predicted and measured kernel times "
                        "(None below 3 formats)",
    "compared": "formats both predicted and measured",
    "side_by_side_ms": "format -> kernel ms (median) of auto's choice and the formats "
                       f"measured within {CONTENDER_PCT:g} % of the fastest (at most "
                       f"{MAX_CONTENDERS}), converted again together and timed in alternating "
                       "rounds of one product each (None: auto's choice not measured ok, "
                       "no other format near the fastest, or the formats not convertible "
                       "together)",
    "side_by_side_vs_fastest": "the least side_by_side_ms / auto's side_by_side_ms",
    "side_by_side_tie": f"side_by_side_vs_fastest >= 1 / (1 + {TIE_PCT:g} %)",
    "selection_ms": "wall ms of the select call (features, predictions; the calibration was "
                    "loaded before)",
    "csr_conversion_ms": f"conversion_ms of {REFERENCE_FORMAT} in this run (host layout + "
                         "upload): one conversion to CSR",
    "selection_vs_csr": "selection_ms / csr_conversion_ms (goal: below 1)",
    "strips": "the row-strip plan the model finds (clspmv.model.strips; auto weighs it when "
              "told of >= 1000 products): its blocks [row_start, row_stop, format], predicted "
              "ms, the best single format's and the predicted gain (None: too few entries)",
    "strips_ms": "measured kernel ms of that plan's strips product (median, as A x; measured "
                 "here when the plan has two blocks or more; also in measured_ms as 'strips' "
                 "when auto chose it)",
    "trial_chosen": "auto's format after a trial (clspmv.model.select with trial=True, as "
                    "from_scipy does where the expected products pay for it): the likeliest "
                    "formats converted and timed on the device, the fastest taken (the model's "
                    "choice unless another measured 5 % faster)",
    "trial_ms": "format -> kernel ms the trial measured (the fastest of its products)",
    "trial_s": "wall seconds of the trial (conversions, uploads, products)",
    "trial_vs_fastest": "fastest_ms / measured_ms of trial_chosen (this run's own records, as "
                        "vs_fastest)",
    "trial_tie": f"trial_vs_fastest >= 1 / (1 + {TIE_PCT:g} %)",
}


def model_error(predicted: dict[str, float], measured: dict[str, float]
                ) -> tuple[float | None, float | None, float | None, int]:
    """(median and worst |pred - meas| / meas, Spearman rank correlation, formats compared)
    over the formats in both; None where there are too few (correlation: below 3)."""
    both = [f for f in predicted if f in measured and measured[f] > 0]
    if not both:
        return None, None, None, 0
    pred = np.array([predicted[f] for f in both])
    meas = np.array([measured[f] for f in both])
    rel = np.abs(pred - meas) / meas
    rho = None
    if len(both) >= 3 and np.ptp(pred) > 0 and np.ptp(meas) > 0:
        rho = float(spearmanr(pred, meas).statistic)
    return float(np.median(rel)), float(rel.max()), rho, len(both)


def fill(rec: Record, predicted: dict[str, float], measured: dict[str, float],
         chosen: str) -> None:
    """The comparison fields of ``rec`` (:data:`FIELDS`) from the predicted and measured
    kernel ms of every format and auto's choice."""
    rec.extra.update(chosen=chosen, predicted_ms=predicted, measured_ms=measured)
    if measured:
        fastest = min(measured, key=lambda f: (measured[f], f))
        rec.extra.update(fastest=fastest, fastest_ms=measured[fastest])
        chosen_ms = measured.get(chosen)
        rec.extra["chosen_ms"] = chosen_ms
        if chosen_ms:
            ratio = measured[fastest] / chosen_ms
            rec.extra.update(vs_fastest=ratio, within_tie=_tie(ratio))
    median, worst, rho, n = model_error(predicted, measured)
    rec.extra.update(median_error=median, worst_error=worst, rank_correlation=rho, compared=n)


def trial(rec: Record, problem: Problem, device: Device, chosen: Any,
          measured: dict[str, float]) -> None:
    """The trial fields of ``rec`` (:data:`FIELDS`): auto with a trial on the device (what
    ``select(..., trial=True)`` does after the predictions of ``chosen``, the model's
    :class:`~clspmv.model.Selection`), its choice judged in ``measured`` (the formats' own
    records). Left None when the trial fails unexpectedly (the record says so)."""
    try:
        done, _ = trials.attempt(problem.csr, device, problem.accuracy,
                                 trials.candidates(chosen.predictions, None))
    except Exception as err:  # a failure the trial does not expect: recorded
        note(rec, f"trial failed: {type(err).__name__}: {err}")
        return
    fmt = done.winner if done is not None else chosen.format  # else the model's choice stands
    rec.extra.update(trial_chosen=fmt, trial_ms=done and done.kernel_ms,
                     trial_s=done.seconds if done is not None else 0.0)
    chosen_ms = measured.get(fmt)
    if measured and chosen_ms:
        ratio = min(measured.values()) / chosen_ms
        rec.extra.update(trial_vs_fastest=ratio, trial_tie=_tie(ratio))


def _tie(ratio: float) -> bool:
    return bool(ratio >= 1 / (1 + TIE_PCT / 100) - 1e-12)


def contenders(measured: dict[str, float], chosen: str) -> list[str]:
    """auto's choice, then the formats measured within :data:`CONTENDER_PCT` of the fastest,
    fastest first, :data:`MAX_CONTENDERS` in all; [] when the choice was not measured."""
    if chosen not in measured:
        return []
    fastest = min(measured.values())
    near = sorted((f for f in measured if measured[f] <= fastest * (1 + CONTENDER_PCT / 100)),
                  key=lambda f: (measured[f], f))
    return list(dict.fromkeys([chosen, *near]))[:MAX_CONTENDERS]


def side_by_side(rec: Record, problem: Problem, device: Device, formats: list[str],
                 strips_params: dict[str, Any] | None, settings: Settings) -> None:
    """The side-by-side fields of ``rec`` (:data:`FIELDS`): ``formats`` (auto's choice first)
    converted together and timed in alternating rounds. Left None when fewer than two formats
    are given or a conversion fails (the formats' own records already say why)."""
    if len(formats) < 2:
        return
    matrices = {}
    try:
        for fmt in formats:
            params = (strips_params or {}) if fmt == "strips" else {}
            matrices[fmt] = timing.convert(problem.csr, fmt, device,
                                           accumulate=problem.accuracy.accumulate,
                                           **params).matrix
        times = timing.time_side_by_side(matrices, problem.x, warmup=settings.warmup,
                                         repeat=settings.repeat)
    except Exception:  # out of device memory with several formats at once: left unmeasured
        return
    finally:
        matrices.clear()
    ms = {fmt: t.median_ms for fmt, t in times.items()}
    ratio = min(ms.values()) / ms[formats[0]]
    rec.extra.update(side_by_side_ms=ms, side_by_side_vs_fastest=ratio,
                     side_by_side_tie=_tie(ratio))
    missed = {fmt: t.uncovered for fmt, t in times.items() if t.uncovered}
    if missed:  # said, never hidden (as set_times does for the formats' own records)
        note(rec, "side by side: host time included in " + ", ".join(
            f"{n} of {times[fmt].repeats} samples of {fmt}" for fmt, n in missed.items()))


def measured_times(records: list[Record], like: Record) -> tuple[dict[str, float], Record | None]:
    """Kernel ms of the formats' ``ok`` A x records of ``like``'s matrix, device and value type,
    and the reference format's record (its conversion time)."""
    out, reference = {}, None
    for r in records:
        if (r.operation != "spmv" or r.kind != "format" or r.matrix != like.matrix
                or r.device != like.device or r.dtype != like.dtype):
            continue
        if r.format == REFERENCE_FORMAT:
            reference = r
        if r.status == "ok" and r.kernel_ms:
            out[r.format] = r.kernel_ms
    return out, reference


def strips_time(problem: Problem, device: Device, params: dict[str, Any],
                settings: Settings) -> float | None:
    """Median kernel ms of A x stored as the strips plan ``params``, checked against the
    reference product (None when it fails or is wrong: the record's ``why`` still says what
    was chosen)."""
    try:
        M = timing.convert(problem.csr, "strips", device, **params).matrix
        if not problem.error_ratio(M.matvec(problem.x)) <= 1.0:  # the per-row bound
            return None
        return timing.time_kernels(M, problem.x, warmup=settings.warmup,
                                   repeat=settings.repeat).median_ms
    except Exception:  # a plan the device cannot hold: the plan stays recorded, unmeasured
        return None


class Selection(Operation):
    """auto's choice against every format measured on the device (per device)."""

    name = OPERATION
    fields = FIELDS
    formulas = {"format": "auto (the record of the library's choice)"}

    def active(self, plan: Any) -> bool:
        return bool(plan.selection)

    def settings(self, plan: Any) -> dict[str, Any]:
        return {"selection": {"tie_pct": TIE_PCT, "csr_reference": REFERENCE_FORMAT,
                              "contender_pct": CONTENDER_PCT,
                              "max_contenders": MAX_CONTENDERS,
                              "trial": {"top": trials.TOP, "band": trials.BAND,
                                        "repeats": trials.REPEATS, "margin": trials.MARGIN}
                              if plan.trial else None}}

    def steps(self, plan: Any) -> int:
        return 1

    def run_device(self, context: Context, problem: Problem, device: Device) -> None:
        rec = problem.record(device_label(device), device.type, "auto")
        rec.operation = OPERATION
        rec.extra.update({name: None for name in FIELDS})
        rec.copy_gbps, rec.cache_bytes = context.copy_gbps(device), device.cache_bytes
        try:
            cal = calibration(device)  # measured once per device (or read), outside the timing
            t0 = time.perf_counter()
            chosen = select(problem.csr, device, calibration_=cal)
            rec.extra["selection_ms"] = (time.perf_counter() - t0) * 1e3
        except Exception as err:  # every format refuses, a broken calibration: recorded
            rec.status, rec.reason = "failed", f"{type(err).__name__}: {err}"
        else:
            rec.extra.update(calibration=chosen.calibration, why=chosen.why)
            rec.params = f"chose {chosen.format}: {chosen.why}"
            predicted = {f: p.kernel_s * 1e3 for f, p in chosen.predictions.items()
                         if p.kernel_s is not None}
            measured, reference = measured_times(context.results.records, rec)
            plan = chosen.strips or (
                plan_for_device(problem.csr, device, cal)
                if problem.csr.nnz >= 2 * MIN_STRIP_ENTRIES else None)
            if plan is not None:
                rec.extra["strips"] = {
                    "blocks": [list(b) for b in plan.blocks], "predicted_ms": plan.predicted_s
                    * 1e3, "single_format": plan.single_format, "single_ms": plan.single_s
                    * 1e3, "gain": plan.gain}
                if len(plan.blocks) > 1:
                    rec.extra["strips_ms"] = strips_time(problem, device, plan.params(),
                                                         context.settings)
                    if chosen.format == "strips":
                        measured["strips"] = rec.extra["strips_ms"]
                        predicted["strips"] = plan.predicted_s * 1e3
            fill(rec, predicted, measured, chosen.format)
            if context.settings.trial:
                trial(rec, problem, device, chosen, {f: t for f, t in measured.items()
                                                     if f != "strips"})
            side_by_side(rec, problem, device, contenders(measured, chosen.format),
                         plan.params() if plan is not None else None, context.settings)
            if reference is not None and reference.conversion_ms:
                rec.extra["csr_conversion_ms"] = reference.conversion_ms
                rec.extra["selection_vs_csr"] = (rec.extra["selection_ms"]
                                                 / reference.conversion_ms)
        context.results.add(rec)
        context.progress(f"{problem.name} {problem.accuracy.name} {device.name[:24]} selection")


SELECTION = Selection()
