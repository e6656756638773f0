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

from .common import Definitions, Rec, num, of, table, unique

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


def matrix_table(here: list[Rec]) -> str:
    rows = []
    for r in sorted(here, key=lambda r: (r["nnz"], r["matrix"])):
        if r["status"] != "ok":
            rows.append([r["matrix"], r["status"], r.get("reason", "")] + [""] * 8)
            continue
        tie = "" if r.get("within_tie") is None else (" (tie)" if r["within_tie"] else "")
        rows.append([r["matrix"], r.get("chosen") or "", num(r.get("chosen_ms"), ".4f"),
                     f"{r.get('fastest') or ''} {num(r.get('fastest_ms'), '.4f')}",
                     _ratio(r.get("vs_fastest")) + tie, _pct(r.get("median_error")),
                     _pct(r.get("worst_error")), num(r.get("rank_correlation"), ".2f"),
                     num(r.get("selection_ms"), ".2f"), num(r.get("csr_conversion_ms"), ".2f"),
                     _ratio(r.get("selection_vs_csr"))])
    return table(rows, ["matrix", "auto's choice", "its ms", "fastest (ms)", "fastest / auto",
                        "median err", "worst err", "rank corr", "selection ms", "CSR conv ms",
                        "selection / conv"])


def summary(here: list[Rec]) -> str:
    """One sentence over the matrices of one device and value type."""
    ok = [r for r in here if r["status"] == "ok"]
    ratios = [r["vs_fastest"] for r in ok if r.get("vs_fastest")]
    errors = [r["median_error"] for r in ok if r.get("median_error") is not None]
    rhos = [r["rank_correlation"] for r in ok if r.get("rank_correlation") is not None]
    costs = [r["selection_vs_csr"] for r in ok if r.get("selection_vs_csr") is not None]
    if not ratios:
        return "No matrix had auto's choice measured."
    geo = math.exp(sum(math.log(v) for v in ratios) / len(ratios))
    ties = sum(1 for r in ok if r.get("within_tie"))
    parts = [f"Auto against the fastest measured format over {len(ratios)} matrices: geometric "
             f"mean {geo:.3f}, worst {min(ratios):.3f}, {ties} of {len(ratios)} within the "
             "tie tolerance."]
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
