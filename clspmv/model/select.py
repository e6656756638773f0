"""``format="auto"``: the format with the least predicted time, conversion included when the
caller says how many products will pay for it; or ``strips``, row blocks each in its own format
(:mod:`.strips`), when its plan is predicted faster than every single format by
:data:`.strips.AUTO_MARGIN` (or by :data:`.strips.TRIAL_MARGIN` and measured clearly faster
in a trial). Searching a strips plan costs many times a conversion to CSR (a few
seconds for 10^7 entries), so it is searched only when the caller says that at least
:data:`STRIPS_MIN_PRODUCTS` products will use the matrix, or asks for it (``strips=True``).
Where the expected products pay for it (or ``trial=True``), the likeliest few formats are then
converted and timed on the device and the fastest measured is taken (:mod:`.trial`); a strips
plan's blocks are tried the same way, each on its rows, and the joined blocks measured against
the fastest single format (:mod:`.strips_trial`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import scipy.sparse as sp
from tabulate import tabulate

from ..device import Device
from ..formats import FORMAT_CLASSES, Format
from ..formats.strips import Strips
from ..precision import Precision, resolve
from . import strips_trial
from . import trial as trials
from .features import Features, diagonal_formats, features, with_exact_diagonals
from .predict import Prediction, predict_features
from .store import calibration
from .strips import MIN_STRIP_ENTRIES, StripsPlan, plan_for_device
from .timemodel import Calibration

STRIPS_MIN_PRODUCTS = 1000
"""``expected_products`` from which ``format="auto"`` searches a strips plan (see the module
docstring; measured on the H200: 1.6-6.4 s of planning for 4-60 M entries, 10-20 conversions to
CSR)."""


@dataclass(frozen=True)
class Selection:
    """The choice of ``format="auto"`` and what it was based on."""

    format: str
    predictions: dict[str, Prediction]
    """Every format's :class:`Prediction` (refused formats with their reason)."""
    why: str
    expected_products: int | None
    calibration: str
    """``"measured"`` or ``"quick-default"`` (:attr:`Calibration.kind`)."""
    cost_ms: float
    """Milliseconds the selection took (features and predictions; not a calibration)."""
    features: Features = field(repr=False)
    strips: StripsPlan | None = None
    """The row-strip plan that was weighed against the single formats (None when none was
    searched: see :func:`select`'s ``strips``, or the matrix has too few entries for two
    strips); :attr:`format` is ``"strips"`` when it was taken. After a trial of the plan that
    kept it, every block is in its fastest measured format (:mod:`.strips_trial`)."""
    trial_ms: dict[str, float] | None = None
    """Format -> measured kernel ms of the formats tried on the device (:mod:`.trial`; after a
    trial of a strips plan, ``"strips"`` is the plan's joined blocks), None when there was no
    trial."""
    trial_s: float = 0.0
    """Wall seconds of the trial (conversions, uploads, products); not in :attr:`cost_ms`."""
    converted: Format | None = field(default=None, repr=False, compare=False)
    """The trial's winner, converted and uploaded in its device's default layout (taken by
    ``DeviceMatrix.from_scipy`` instead of a second conversion), else None."""

    @property
    def params(self) -> dict[str, object]:
        """The format parameters the choice needs: the plan's blocks for ``"strips"``, else what
        the chosen format takes from the features
        (:meth:`~clspmv.formats.costs.FormatCosts.chosen_params`)."""
        if self.format == Strips.name:
            return self.strips.params() if self.strips else {}
        return FORMAT_CLASSES[self.format].chosen_params(self.features)

    @property
    def refusals(self) -> dict[str, str]:
        """Format -> why it refuses the matrix."""
        return {k: p.refused for k, p in self.predictions.items() if p.refused is not None}

    def table(self) -> list[dict[str, object]]:
        """One row per format: predicted kernel and conversion milliseconds or the refusal."""
        return [{"format": k, "kernel ms": None if p.kernel_s is None else p.kernel_s * 1e3,
                 "conversion ms": None if p.conversion_s is None else p.conversion_s * 1e3,
                 "refused": p.refused, "chosen": k == self.format}
                for k, p in self.predictions.items()]

    def __str__(self) -> str:
        """The choice and why, then :meth:`table` as aligned text: the accepted formats by
        predicted cost (measured ms where a trial ran), then the refused ones with the start of
        their reason."""
        def cost(p: Prediction) -> float:
            return (p.kernel_s if self.expected_products is None  # type: ignore[return-value]
                    else p.total_s(self.expected_products))

        accepted = sorted((p for p in self.predictions.values() if p.refused is None),
                          key=lambda p: (cost(p), p.format))
        refused = [p for p in self.predictions.values() if p.refused is not None]
        headers = ["", "format", "kernel ms", "conversion ms"]
        rows = [["*" if p.format == self.format else "", p.format, f"{p.kernel_s * 1e3:.4g}",
                 f"{p.conversion_s * 1e3:.4g}"] for p in accepted]  # type: ignore[operator]
        rows += [["", p.format, "", ""] for p in refused]
        if self.trial_ms:
            headers.append("measured ms")
            for row in rows:
                ms = self.trial_ms.get(row[1])
                row.append("" if ms is None else f"{ms:.4g}")
        if refused:
            headers.append("refused")
            for row, p in zip(rows, accepted + refused, strict=True):
                row.append(_shortened(p.refused or ""))
        table = tabulate(rows, headers=headers, disable_numparse=True)
        plan = (f"; strips: {_blocks(self.strips.blocks)}"
                if self.format == Strips.name and self.strips else "")
        return (f"format={self.format!r} ({self.calibration} calibration, selected in "
                f"{self.cost_ms:.3g} ms{plan})\nwhy: {self.why}\n{table}")

    def __repr__(self) -> str:
        return f"<Selection {self}>"


def select(csr: sp.csr_matrix, device: Device, precision: Precision | None = None,
           expected_products: int | None = None, calibration_: Calibration | None = None,
           strips: bool | None = None, trial: bool | None = None, owned: bool = False
           ) -> Selection:
    """The format for the canonical CSR matrix ``csr`` on ``device``: the least predicted kernel
    time, or with ``expected_products=n`` the least conversion plus n products. ``precision``:
    how a trial converts (default: ``csr``'s value type; the features read the value size from
    ``csr.dtype``). ``strips``: search a row-strip plan (None: when ``expected_products`` is at
    least :data:`STRIPS_MIN_PRODUCTS`). ``trial``: time the likeliest formats on the device and
    take the fastest (:mod:`.trial`; a strips plan predicted :data:`.strips.TRIAL_MARGIN`
    faster: every block's likeliest formats, the joined blocks against the single formats,
    :mod:`.strips_trial`; None: when ``expected_products`` is given and the trial's predicted
    cost is at most :data:`.trial.SHARE` of their time; never on a simulator). ``owned``:
    ``csr`` is the caller's private copy (``from_scipy``'s canonical one), so a trial's
    conversions may keep its arrays (:func:`clspmv.formats.convert`'s ``owned``: on a CPU,
    uploaded in place, as the calibration timed them). Raises ValueError for
    ``expected_products < 1``."""
    if expected_products is not None and expected_products < 1:
        raise ValueError(f"expected_products must be at least 1, got {expected_products}")
    if device.is_simulator:  # nothing is timed on a simulator: its times mean nothing
        trial = False
    cal = calibration_ or calibration(device)
    t0 = time.perf_counter()
    wg = min(256, device.max_work_group_size)
    f = features(csr, device.simd_width, compute_units=device.compute_units)
    preds = predict_features(f, cal, wg)
    best = _best(preds, expected_products)
    if best.format in diagonal_formats() and not f.diagonals_exact:
        # the sampled diagonals are a lower bound: count them all before such a format is taken
        f = with_exact_diagonals(f, csr)
        preds.update(predict_features(f, cal, wg, diagonal_formats(preds)))
        best = _best(preds, expected_products)
    accepted = [p for p in preds.values() if p.refused is None]
    plan = None
    if strips is None:
        strips = expected_products is not None and expected_products >= STRIPS_MIN_PRODUCTS
    if strips and csr.nnz >= 2 * MIN_STRIP_ENTRIES:
        plan = plan_for_device(csr, device, cal)
    if plan is not None and (plan.worth_a_trial or plan.worthwhile):
        chosen = _strips(csr, device, precision, expected_products, cal, trial, preds, f, plan,
                         t0, owned)
        if chosen is not None:
            return chosen
    cost = (time.perf_counter() - t0) * 1e3
    names = trials.candidates(preds, expected_products) if trial is not False else []
    if trial is None:
        trial = expected_products is not None and len(names) > 1 and trials.worth(
            preds, names, expected_products, device.type)
    done, failed = None, ""
    if trial:
        done, failed = trials.attempt(csr, device, precision or resolve(csr.dtype, csr.dtype),
                                      names, owned)
    if done is not None:
        ms = done.kernel_ms
        why = (f"fastest on the device of the {len(ms)} formats tried ("
               + ", ".join(f"{k} {v:.4g} ms" for k, v in sorted(ms.items(), key=lambda i: i[1]))
               + f"); the model alone would take {best.format}")
        return Selection(done.winner, preds, why, expected_products, cal.kind, cost, f, plan,
                         ms, done.seconds, done.converted)
    if expected_products is None:
        why = (f"least predicted kernel time ({best.kernel_s * 1e3:.4g} ms per product) of "
               f"{len(accepted)} formats accepting the matrix")
    else:
        fastest = min(accepted, key=lambda p: (p.kernel_s, p.format))
        why = (f"least predicted conversion + {expected_products} products "
               f"({best.total_s(expected_products) * 1e3:.4g} ms)")
        if fastest.format != best.format:
            why += (f"; {fastest.format} has faster products but its conversion does not pay "
                    f"off over {expected_products}")
    why += failed
    return Selection(best.format, preds, why, expected_products, cal.kind, cost, f, plan)


def _blocks(blocks: tuple[tuple[int, int, str], ...]) -> str:
    return ", ".join(f"rows {r0}:{r1} {fmt}" for r0, r1, fmt in blocks)


REASON_WIDTH = 60
"""Characters of a refusal's reason that :meth:`Selection.__str__` shows (the whole reason is
in :attr:`Selection.refusals`)."""


def _shortened(reason: str) -> str:
    return reason if len(reason) <= REASON_WIDTH else reason[:REASON_WIDTH - 3] + "..."


def _strips(csr: sp.csr_matrix, device: Device, precision: Precision | None,
            expected_products: int | None, cal: Calibration, trial: bool | None,
            preds: dict[str, Prediction], f: Features, plan: StripsPlan, started: float,
            owned: bool) -> Selection | None:
    """:func:`select`'s choice once a strips plan worth a trial (or worthwhile) is found: where
    a trial is due (``trial``, or its predicted cost at most :data:`.trial.SHARE` of the
    expected products') what :mod:`.strips_trial` measured, else the plan where it is
    worthwhile (:attr:`StripsPlan.worthwhile`), else None (the single formats' path decides;
    also when a block of the plan fits nowhere on the device). ``started``: the
    ``perf_counter`` the selection began at (the blocks' predictions count in its cost)."""
    done = None
    if trial or (trial is None and expected_products is not None):
        names = trials.candidates(preds, expected_products)
        blocks = strips_trial.block_candidates(csr, device, cal, plan, expected_products)
        if trial is None:
            cost_s = strips_trial.predicted_seconds(preds, names, blocks, device.type)
            trial = trials.affordable(cost_s, expected_products,  # type: ignore[arg-type]
                                      plan.predicted_s)
        if trial:
            try:
                done = strips_trial.run(csr, device, precision or resolve(csr.dtype, csr.dtype),
                                        plan, blocks, names, cal.launch_s, owned)
            except strips_trial.BlockTrialError:
                return None
    cost = (time.perf_counter() - started) * 1e3
    if done is None:
        if not plan.worthwhile:
            return None
        why = (f"row strips predicted {plan.gain:.0%} faster ({plan.predicted_s * 1e3:.4g} ms) "
               f"than the best single format, {plan.single_format}: {_blocks(plan.blocks)}")
        return Selection(Strips.name, preds, why, expected_products, cal.kind, cost, f, plan)
    ms = done.kernel_ms
    singles = sorted((k for k in ms if k != Strips.name), key=lambda k: ms[k])
    against = (f"the fastest single format tried, {singles[0]} ({ms[singles[0]]:.4g} ms)"
               if singles else "no single format (none fit the device)")
    why = (f"row strips measured {ms[Strips.name]:.4g} ms against {against}: "
           f"{_blocks(done.plan.blocks)} (the model's plan: {_blocks(plan.blocks)})")
    chosen_plan = done.plan if done.winner == Strips.name else plan
    return Selection(done.winner, preds, why, expected_products, cal.kind, cost, f,
                     chosen_plan, ms, done.seconds, done.converted)


def _best(preds: dict[str, Prediction], expected_products: int | None) -> Prediction:
    """The accepted format of least predicted kernel time (or conversion plus
    ``expected_products`` products); ValueError when every format refuses."""
    accepted = [p for p in preds.values() if p.refused is None]
    if not accepted:
        raise ValueError("every format refuses this matrix: " + "; ".join(
            p.refused or "" for p in preds.values()))
    if expected_products is None:
        return min(accepted, key=lambda p: (p.kernel_s, p.format))
    return min(accepted, key=lambda p: (p.total_s(expected_products), p.format))
