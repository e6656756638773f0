"""The answer report.md opens with: per device and value type, the fastest format of every
matrix, its bandwidth, and how much faster it is than each baseline, by kernel time and by the
wall time a user of ``M @ x`` sees; with ``--formats auto`` or ``--selection`` records, auto's
choice and the fastest's kernel time over its own (``fastest / auto``, the orientation of
:mod:`.selection` too). A pure function of the records, like :mod:`.tables`.

The wall-time speedup is computed here from the records (older runs did not store it):
baseline X's wall time over the format's ``wall_ms`` (:func:`wall_speedup`; its definition,
:data:`clspmv.bench.methodology.WALL_SPEEDUP`, is in the formulas of newer runs).
"""

from __future__ import annotations

from .common import (
    SUMMARY_PLOT,
    Definitions,
    Rec,
    baseline_records,
    best,
    format_records,
    matrices_by_size,
    num,
    speedup,
    table,
    unique,
)

INTRO = (
    "Columns: the fastest format of each matrix (smallest kernel time among "
    "the products that passed the error check), its effective bandwidth (minimum bytes / "
    "kernel time) and its share of the copy bandwidth measured in the same run (`cache`: the "
    "matrix fits in the device's last-level cache, so the share can pass 100 %), and its "
    "speedup over each baseline that ran. `kernel`: the baseline's time / the kernel time, x "
    "and y already on the device (scipy's and MKL's time is their whole call). `wall`: the "
    "baseline's wall time / the wall time of `M @ x` from a numpy x to a numpy y, transfers "
    "included: what a scipy user who changes one line sees (none for cuSPARSE, timed by "
    "kernel only). `fastest / auto`: the fastest format's kernel time / that of the format "
    "`format=\"auto\"` chose, as in the Selection section (1.00 = auto chose the fastest; 0.50 "
    "= its format takes twice as long).")

AUTO_PREFIX = "auto:"
"""How the record of the format ``--formats auto`` chose starts its ``params``."""


def baseline_wall_ms(r: Rec | None) -> float | None:
    """A baseline's wall time of y = A @ x from numpy to numpy: its ``wall_ms`` where it has
    one, else its time when it ran on the host (scipy, MKL: the wall clock of the call); None
    for a device baseline that measured kernel time only (cuSPARSE) or one that did not run."""
    if r is None or r["status"] != "ok":
        return None
    if r.get("wall_ms"):
        return r["wall_ms"]
    return r.get("kernel_ms") if r.get("device_type") == "cpu" else None


def baseline_index(records: list[Rec]) -> dict[tuple[str, str, str], Rec]:
    """(matrix, dtype, baseline name) -> the baseline's A x record."""
    return {(r["matrix"], r["dtype"], r["format"]): r for r in baseline_records(records)}


def wall_speedup(r: Rec | None, name: str, index: dict[tuple[str, str, str], Rec],
                 defs: Definitions) -> float | None:
    """Baseline ``name``'s wall time / the format record ``r``'s ``wall_ms`` (None where
    either is missing)."""
    if r is None or not r.get("wall_ms"):
        return None
    base = baseline_wall_ms(index.get((r["matrix"], defs.baseline_dtype(r["dtype"]), name)))
    return base / r["wall_ms"] if base else None


def ran(records: list[Rec], defs: Definitions, dtype: str) -> list[str]:
    """The baselines that ran (status ok) for format records of ``dtype``, in the runs'
    order."""
    done = {r["format"] for r in baseline_records(records)
            if r["dtype"] == defs.baseline_dtype(dtype) and r["status"] == "ok"}
    return [b for b in defs.baselines if b in done]


def auto_choice(recs: list[Rec], records: list[Rec]) -> tuple[str, float | None] | None:
    """(auto's format, the fastest's kernel time / auto's: at most 1, the orientation of every
    ratio of auto in report.md) for the matrix, device and dtype of
    ``recs`` (its format records): from the run's selection record (``--selection``, which
    compares auto with every format measured) or the record ``--formats auto`` chose; None when
    the run did not choose."""
    if not recs:
        return None
    key = (recs[0]["matrix"], recs[0]["device"], recs[0]["dtype"])
    sel = next((r for r in records if r.get("operation") == "selection" and r["status"] == "ok"
                and (r["matrix"], r["device"], r["dtype"]) == key and r.get("chosen")), None)
    if sel is not None:
        return sel["chosen"], sel.get("vs_fastest")
    chosen = next((r for r in recs if (r.get("params") or "").startswith(AUTO_PREFIX)
                   or f"; {AUTO_PREFIX}" in (r.get("params") or "")), None)
    if chosen is None:
        return None
    w = best(recs)
    ratio = (w["kernel_ms"] / chosen["kernel_ms"] if w and chosen["status"] == "ok"
             and chosen.get("kernel_ms") and w.get("kernel_ms") else None)
    return chosen["format"], ratio


def summary_rows(recs: list[Rec], records: list[Rec], defs: Definitions, dtype: str
                 ) -> tuple[list[list[str]], list[str]]:
    """The rows and headers of one device's and dtype's summary table."""
    index = baseline_index(records)
    names = ran(records, defs, dtype)
    matrices = matrices_by_size(recs)
    winners = {m: best([r for r in recs if r["matrix"] == m]) for m in matrices}
    walls = {b: [wall_speedup(winners[m], b, index, defs) for m in matrices] for b in names}
    autos = {m: auto_choice([r for r in recs if r["matrix"] == m], records) for m in matrices}
    show_auto = any(autos.values())
    headers = ["matrix", "fastest format", "GB/s", "% copy BW"]
    for b in names:
        headers.append(f"× {b} kernel")
        if any(v is not None for v in walls[b]):
            headers.append(f"× {b} wall")
    if show_auto:
        headers += ["auto's choice", "fastest / auto"]
    rows = []
    for i, m in enumerate(matrices):
        w = winners[m]
        if w is None:
            rows.append([m, "none ran"] + [""] * (len(headers) - 2))
            continue
        pct = num(w.get("pct_copy_bw"), ".0f") + (" (cache)" if w.get("fits_cache") else "")
        row = [m, w["format"], num(w.get("gbps"), ".1f"), pct]
        for b in names:
            row.append(num(speedup(w, b), ".2f"))
            if any(v is not None for v in walls[b]):
                row.append(num(walls[b][i], ".2f"))
        if show_auto:
            chosen, ratio = autos[m] or ("—", None)
            row += [chosen, num(ratio, ".2f")]
        rows.append(row)
    return rows, headers


def summary_section(records: list[Rec], defs: Definitions, plots: list[str] | str) -> str:
    """The summary tables (one per device and dtype) and the summary plot when drawn."""
    recs = format_records(records)
    if not recs:
        return ""
    out = ["## Summary: the fastest format per matrix", "",
           "Which format is fastest on each device and value type, and how much faster it is "
           "than each baseline (the columns are defined below the tables).", ""]
    shown: list[str] = []  # the baselines of the columns
    for device in unique(r["device"] for r in recs):
        for dtype in unique(r["dtype"] for r in recs if r["device"] == device):
            here = [r for r in recs if r["device"] == device and r["dtype"] == dtype]
            rows, headers = summary_rows(here, records, defs, dtype)
            out += [f"### On {device}, {dtype}", "", table(rows, headers), ""]
            shown += ran(records, defs, dtype)
    out += [INTRO, "", *defs.baseline_legend("The baselines, as the runs define them:",
                                             unique(shown))]
    if isinstance(plots, list) and SUMMARY_PLOT in plots:
        out += [f"![{SUMMARY_PLOT}]({SUMMARY_PLOT})", ""]
    return "\n".join(out)
