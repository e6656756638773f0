"""The "Selection" section: how ``format="auto"`` chose (records of ``operation``
``selection``, :mod:`clspmv.bench.selection`), per device and value type. A pure function of
the records and the runs' definitions (:class:`~clspmv.report.common.Definitions`: the tie
tolerance and the fields' meanings come from the runs' meta data, never from the code).

Per matrix: auto's choice, its measured kernel time, the fastest measured format, auto's time
against it, the model's error (median and worst |predicted - measured| / measured, Spearman rank
correlation) and the selection's cost against one conversion to CSR; then a summary (geometric
mean and worst of auto against the fastest, the share of ties, the median error and rank
correlation over the matrices) and every format's predicted / measured milliseconds. The plot
of predicted against measured times is :func:`clspmv.report.plots.selection`.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

from ..formats import FORMATS
from .common import (
    Definitions,
    Rec,
    num,
    of,
    plot_name,
    save_figure,
    short_device,
    table,
    unique,
)

OPERATION = "selection"
PREFIX = f"{OPERATION}: "


def records_of(records: list[Rec]) -> list[Rec]:
    """The selection records."""
    return of(records, OPERATION)


def _ratio(value: float | None) -> str:
    return num(value, ".2f") + ("×" if value is not None else "")


def _pct(value: float | None) -> str:
    return num(None if value is None else 100 * value, ".0f") + ("%" if value is not None
                                                                else "")


def _tie(within: bool | None) -> str:
    return " (tie)" if within else ""


def _side_by_side(r: Rec) -> str:
    """The side-by-side ratio and the fastest format there (when not auto's choice)."""
    ms = r.get("side_by_side_ms")
    if not ms:
        return ""
    best = min(ms, key=lambda f: ms[f])
    other = "" if best == r.get("chosen") else f" ({best})"
    return _ratio(r.get("side_by_side_vs_fastest")) + _tie(r.get("side_by_side_tie")) + other


def _trial(r: Rec) -> str:
    """The trial's ratio and its choice (when not the model's)."""
    if not r.get("trial_chosen"):
        return ""
    other = "" if r["trial_chosen"] == r.get("chosen") else f" ({r['trial_chosen']})"
    return _ratio(r.get("trial_vs_fastest")) + _tie(r.get("trial_tie")) + other


def _means(ratios: list[float]) -> str:
    geo = math.exp(sum(math.log(v) for v in ratios) / len(ratios))
    return f"geometric mean {geo:.3f}, worst {min(ratios):.3f}"


def _has_side_by_side(recs: list[Rec]) -> bool:
    """Whether the run timed contenders side by side (runs before it did not)."""
    return any("side_by_side_ms" in r for r in recs)


def _has_trial(recs: list[Rec]) -> bool:
    """Whether the run tried formats on the device (runs before trials, or with
    ``--no-trial``, did not)."""
    return any(r.get("trial_chosen") for r in recs)


def matrix_table(here: list[Rec]) -> str:
    side, tried = _has_side_by_side(here), _has_trial(here)
    rows = []
    for r in sorted(here, key=lambda r: (r["nnz"], r["matrix"])):
        if r["status"] != "ok":
            rows.append([r["matrix"], r["status"], r.get("reason", "")]
                        + [""] * (8 + side + tried))
            continue
        rows.append([r["matrix"], r.get("chosen") or "", num(r.get("chosen_ms"), ".4f"),
                     f"{r.get('fastest') or ''} {num(r.get('fastest_ms'), '.4f')}",
                     _ratio(r.get("vs_fastest")) + _tie(r.get("within_tie")),
                     *([_side_by_side(r)] if side else []),
                     *([_trial(r)] if tried else []), _pct(r.get("median_error")),
                     _pct(r.get("worst_error")), num(r.get("rank_correlation"), ".2f"),
                     num(r.get("selection_ms"), ".2f"), num(r.get("csr_conversion_ms"), ".2f"),
                     _ratio(r.get("selection_vs_csr"))])
    return table(rows, ["matrix", "auto's choice", "its ms", "fastest (ms)", "fastest / auto",
                        *(["side by side"] if side else []),
                        *(["with a trial"] if tried else []), "median err", "worst err",
                        "rank corr", "selection ms", "CSR conv ms", "selection / conv"])


def summary(here: list[Rec]) -> str:
    """One sentence over the matrices of one device and value type."""
    ok = [r for r in here if r["status"] == "ok"]
    ratios = [r["vs_fastest"] for r in ok if r.get("vs_fastest")]
    errors = [r["median_error"] for r in ok if r.get("median_error") is not None]
    rhos = [r["rank_correlation"] for r in ok if r.get("rank_correlation") is not None]
    costs = [r["selection_vs_csr"] for r in ok if r.get("selection_vs_csr") is not None]
    if not ratios:
        return "No matrix had auto's choice measured."
    ties = sum(1 for r in ok if r.get("within_tie"))
    parts = [f"Auto against the fastest measured format over {len(ratios)} matrices: "
             f"{_means(ratios)}, {ties} of {len(ratios)} within the tie tolerance."]
    # a matrix without side-by-side times (auto's choice the fastest with no other format
    # near it, or the contenders not convertible together) keeps its ratio of the records
    paired = [r.get("side_by_side_vs_fastest") or r["vs_fastest"] for r in ok
              if r.get("vs_fastest")]
    if any(r.get("side_by_side_ms") for r in ok):
        sbs_ties = sum(1 for r in ok if r.get("vs_fastest") and (
            r["side_by_side_tie"] if r.get("side_by_side_ms") else r.get("within_tie")))
        parts[0] += (f" With the contenders timed side by side: {_means(paired)}, {sbs_ties} "
                     f"of {len(paired)} within the tie tolerance.")
    tried = [r for r in ok if r.get("trial_vs_fastest")]
    if tried:
        seconds = statistics.median(r["trial_s"] for r in tried)
        parts[0] += (f" With a trial on the device (`trial=True`): "
                     f"{_means([r['trial_vs_fastest'] for r in tried])}, "
                     f"{sum(1 for r in tried if r.get('trial_tie'))} of {len(tried)} within the "
                     f"tie tolerance (median trial {seconds:.2f} s).")
    if errors:
        parts.append(f"Model error: median of the per-matrix medians "
                     f"{100 * statistics.median(errors):.0f} %, worst per-matrix median "
                     f"{100 * max(errors):.0f} %")
    if rhos:
        parts.append(f"median rank correlation {statistics.median(rhos):.2f}")
    if costs:
        parts.append(f"selection cost / one CSR conversion: median {statistics.median(costs):.2f}"
                     f", worst {max(costs):.2f}.")
    return " ".join([parts[0], "; ".join(parts[1:])]).strip()


def formats_table(here: list[Rec], defs: Definitions) -> str:
    """Predicted / measured ms of every format (columns in the runs' order)."""
    ok = [r for r in here if r["status"] == "ok"]
    formats = defs.format_order({f for r in ok for f in (r.get("predicted_ms") or {})}
                                | {f for r in ok for f in (r.get("measured_ms") or {})})
    rows = []
    for r in sorted(ok, key=lambda r: (r["nnz"], r["matrix"])):
        pred, meas = r.get("predicted_ms") or {}, r.get("measured_ms") or {}
        cells = []
        for f in formats:
            cell = f"{num(pred.get(f), '.3g')} / {num(meas.get(f), '.3g')}"
            cells.append(f"**{cell}**" if f == r.get("chosen") else cell)
        rows.append([r["matrix"], *cells])
    return table(rows, ["matrix", *formats])


def definitions(defs: Definitions) -> str:
    """The fields' meanings as the runs recorded them."""
    lines = [f"- `{name.removeprefix(PREFIX)}`: {text}" for name, text in defs.formulas.items()
             if name.startswith(PREFIX)]
    return "\n".join(lines)


def section(records: list[Rec], defs: Definitions) -> str:
    """The whole Selection section ("" without selection records)."""
    recs = records_of(records)
    if not recs:
        return ""
    tie = defs.selection.get("tie_pct")
    intro = ("`format=\"auto\"` (`clspmv.model.select`, the library's choice) against every "
             "format this run measured on the same matrix, value type and device. "
             "`fastest / auto` is the fastest measured kernel time over auto's (1.00× = auto "
             "chose the fastest)"
             + (f"; (tie): within {tie:g} % of the fastest" if tie is not None else "")
             + (". `side by side`: the same ratio with auto's choice and the formats measured "
                "near the fastest converted again together and timed in alternating rounds (the "
                "fastest there in brackets when it is not auto's choice)"
                if _has_side_by_side(recs) else "")
             + (". `with a trial`: the same ratio for the format `trial=True` takes (the "
                "likeliest formats converted and timed on the device, the fastest kept; what "
                "`from_scipy` does where the expected products pay for it), judged in this "
                "run's records; its choice in brackets when not the model's"
                if _has_trial(recs) else "")
             + ". Errors are |predicted - measured| / measured over the formats both predicted "
             "and measured.")
    out = ["## Selection", "", intro, ""]
    fields = definitions(defs)
    if fields:
        out += ["Fields (from the run's meta data):", "", fields, ""]
    for device in unique(r["device"] for r in recs):
        for dtype in unique(r["dtype"] for r in recs if r["device"] == device):
            here = [r for r in recs if r["device"] == device and r["dtype"] == dtype]
            kinds = unique(r.get("calibration") for r in here if r.get("calibration"))
            out += [f"### {device} — {dtype}", "",
                    f"Calibration: {', '.join(kinds) or 'none'}.", "", matrix_table(here), "",
                    summary(here), "",
                    "Predicted / measured kernel ms of every format (auto's choice in bold; "
                    "— : refused by the model, or not measured ok).", "",
                    formats_table(here, defs), ""]
    return "\n".join(out).rstrip() + "\n"


MARKERS = "os^vD<>phX*P8"


def plot(plt: Any, records: list[Rec], dtype: str, path: Path) -> bool:
    """Predicted against measured kernel ms (log-log) of every format on every matrix, one
    marker per format, the diagonal y = x; False when nothing was both predicted and
    measured."""
    recs = [r for r in records if r.get("operation") == "selection" and r["dtype"] == dtype
            and r["status"] == "ok"]
    devices = unique(r["device"] for r in recs)
    points = {d: {} for d in devices}
    for r in recs:
        pred, meas = r.get("predicted_ms") or {}, r.get("measured_ms") or {}
        for f in pred:
            if f in meas and pred[f] > 0 and meas[f] > 0:
                points[r["device"]].setdefault(f, []).append((pred[f], meas[f]))
    devices = [d for d in devices if points[d]]
    if not devices:
        return False
    order = [f for f in FORMATS if any(f in points[d] for d in devices)]
    order += sorted({f for d in devices for f in points[d]} - set(order))
    fig, axes = plt.subplots(1, len(devices), figsize=(5.2 * len(devices), 5), squeeze=False)
    handles = {}
    colors = plt.get_cmap("tab20").colors
    for ax, device in zip(axes.flat, devices, strict=False):
        values = [v for pts in points[device].values() for p in pts for v in p]
        lo, hi = min(values) / 1.5, max(values) * 1.5
        ax.plot([lo, hi], [lo, hi], color="grey", linewidth=0.8, linestyle="--")
        for i, f in enumerate(order):
            pts = points[device].get(f)
            if pts:
                handles[f] = ax.scatter([p for p, _ in pts], [m for _, m in pts], s=18,
                                        marker=MARKERS[i % len(MARKERS)], label=f, alpha=0.8,
                                        color=colors[i % len(colors)])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_xlabel("predicted kernel ms")
        ax.set_ylabel("measured kernel ms")
        ax.set_title(short_device(device), fontsize=8)
        ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"format='auto': the model's predicted against measured kernel time, {dtype}"
                 "\n(dashed: predicted = measured)", fontsize=9)
    fig.legend(list(handles.values()), list(handles), loc="lower center", fontsize=6,
               ncol=min(7, max(len(handles), 1)), frameon=False)
    fig.tight_layout(rect=(0, 0.04 + 0.02 * -(-len(handles) // 7), 1, 0.92))
    save_figure(plt, fig, path)
    return True


def draw(plt: Any, records: list[Rec], out_dir: Path) -> list[str]:
    """``selection_<dtype>.png`` per value type with selection records; their file names."""
    names = []
    for dtype in unique(r["dtype"] for r in records if r.get("operation") == OPERATION):
        name = plot_name("selection", dtype)
        if plot(plt, records, dtype, out_dir / name):
            names.append(name)
    return names
