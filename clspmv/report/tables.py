"""report.md as a pure function of benchmark records and the meta data of their runs.

:func:`render` takes what ``results.json`` files hold (one or several runs, merged) and returns
Markdown: the runs (exact command lines, hosts, devices and their measured bandwidth), how the
numbers are made, Table I statistics of the matrices, per device and value type the GFLOP/s of
every format with the best in bold, the best format's times, rates, conversion cost, memory and
speedups, conversion / break-even and memory tables, the baselines, mixed precision (float32
values summed in float64: its time and error next to float32's; its speedups are against the
float32 baselines), the CPU-vs-GPU crossover by number of entries, and every skipped format and
absent baseline with its reason. These are
computed from the A x records (``operation`` ``spmv``); the sections of the other operations
(transpose products, several right-hand sides, solvers) come from :mod:`.operations` and appear
only when such records exist.
"""

from __future__ import annotations

from typing import Any

from ..bench.records import upgrade
from ..row_stats import COLUMNS as TABLE_I_COLUMNS
from ..row_stats import format_table
from .common import (
    DASH,
    Definitions,
    Rec,
    baseline_records,
    best,
    format_records,
    matrices_by_size,
    num,
    short_device,
    speedup,
    table,
    unique,
)
from .crossover import crossover_section
from .operations import sections
from .runs import method_section, runs_section
from .summary import baseline_index, ran, summary_section, wall_speedup

# -- sections ------------------------------------------------------------------------------------

def matrices_section(records: list[Rec]) -> str:
    first = {}
    for r in records:
        first.setdefault(r["matrix"], r)
    rows = []
    for m in matrices_by_size(records):
        r = first[m]
        values = (m, r["rows"], r["nnz"], r.get("av"), r.get("max_minus_av"), r.get("sigma"),
                  r.get("pct_sigma_over_av"), r.get("pct_ell_hyb"))
        rows.append(dict(zip(TABLE_I_COLUMNS, values, strict=True)))
    return "## Matrices (Table I of the ELLPACK-R paper)\n\n" + format_table(
        rows, tablefmt="github")


def gflops_table(recs: list[Rec], matrices: list[str], formats: list[str]) -> str:
    rows = []
    for m in matrices:
        here = {r["format"]: r for r in recs if r["matrix"] == m}
        winner = best(list(here.values()))
        row = [m]
        for f in formats:
            r = here.get(f)
            if r is None:
                row.append("")
            elif r["status"] == "ok":
                cell = num(r.get("gflops"))
                row.append(f"**{cell}**" if r is winner else cell)
            else:
                row.append(r["status"])
        rows.append(row)
    return table(rows, ["matrix", *formats])


def best_table(recs: list[Rec], matrices: list[str], defs: Definitions,
               records: list[Rec] | None = None) -> str:
    """The best format per matrix: times, rates, conversion, memory, and the kernel speedup
    over every baseline (and the wall-time speedup over those that ran, from ``records``)."""
    index = baseline_index(records or [])
    winners = {m: best([r for r in recs if r["matrix"] == m]) for m in matrices}
    dtype = recs[0]["dtype"] if recs else ""
    walls = [x for x in ran(records or [], defs, dtype) if any(
        wall_speedup(w, x, index, defs) is not None for w in winners.values())]
    rows = []
    for m in matrices:
        b = winners[m]
        if b is None:
            rows.append([m, "none ran"] + [""] * (13 + len(walls)))
            continue
        rows.append([
            m, b["format"], num(b["kernel_ms"], ".3f"),
            f"{num(b.get('kernel_ms_min'), '.3f')}–{num(b.get('kernel_ms_max'), '.3f')}",
            num(b.get("gflops")), num(b.get("gbps"), ".1f"), num(b.get("pct_copy_bw"), ".0f"),
            "cache" if b.get("fits_cache") else "", num(b.get("wall_ms"), ".3f"),
            num(b.get("conversion_ms"), ".1f"), _breakeven(b),
            num((b.get("device_bytes") or 0) / 2**20, ".1f"),
            num(b.get("reduction_vs_ell_pct"), ".1f"),
            *[num(speedup(b, x), ".2f") for x in defs.baselines],
            *[num(wall_speedup(b, x, index, defs), ".2f") for x in walls]])
    return table(rows, ["matrix", "best", "kernel ms", "min–max", "GFLOP/s", "GB/s",
                        "% copy BW", "cache", "wall ms", "conv. ms", "break-even", "MiB",
                        "% less than ELL", *[f"× {x}" for x in defs.baselines],
                        *[f"× {x} wall" for x in walls]])


def slowdown_table(recs: list[Rec], matrices: list[str], formats: list[str]) -> str:
    """Per format, its worst kernel time against the fastest format's on the same matrix, over
    the matrices it ran on (refusals and failures left out), and on which matrix."""
    winners = {m: best([r for r in recs if r["matrix"] == m]) for m in matrices}
    rows = []
    for f in formats:
        ratios = [(r["kernel_ms"] / winners[r["matrix"]]["kernel_ms"], r["matrix"])
                  for r in recs if r["format"] == f and r["status"] == "ok"
                  and r.get("kernel_ms") and winners.get(r["matrix"]) is not None]
        if ratios:
            worst, where = max(ratios)
            rows.append([f, len(ratios), num(worst, ".2f"), where])
    return table(rows, ["format", "matrices", "worst time / fastest", "on"])


def _breakeven(r: Rec) -> str:
    if r["status"] != "ok" or r.get("conversion_ms") is None:
        return DASH
    n = r.get("breakeven_products")
    return "never" if n is None else str(n)


def conversion_table(recs: list[Rec], matrices: list[str], formats: list[str]) -> str:
    rows = []
    for m in matrices:
        here = {r["format"]: r for r in recs if r["matrix"] == m}
        rows.append([m] + [
            f"{num(here[f].get('conversion_ms'), '.1f')} / {_breakeven(here[f])}"
            if f in here and here[f]["status"] == "ok" else (here[f]["status"] if f in here
                                                               else "")
            for f in formats])
    return table(rows, ["matrix", *formats])


def memory_table(recs: list[Rec], matrices: list[str], formats: list[str]) -> str:
    rows = []
    for m in matrices:
        here = {r["format"]: r for r in recs if r["matrix"] == m}
        row = [m]
        for f in formats:
            r = here.get(f)
            if r is None or r.get("device_bytes") is None:
                row.append(r["status"] if r else "")
            else:
                row.append(f"{r['device_bytes'] / 2**20:.1f}" + _vs_ell(r))
        rows.append(row)
    return table(rows, ["matrix", *formats])


def _vs_ell(r: Rec) -> str:
    """' (-35%)': the record's memory relative to plain ELLPACK's."""
    saved = r.get("reduction_vs_ell_pct")
    if saved is None:
        return ""
    return f" ({-saved:+.0f}%)" if round(saved) else " (=)"


def device_sections(records: list[Rec], defs: Definitions) -> str:
    recs = format_records(records)
    out = []
    for device in unique(r["device"] for r in recs):
        for dtype in unique(r["dtype"] for r in recs if r["device"] == device):
            here = [r for r in recs if r["device"] == device and r["dtype"] == dtype]
            matrices = matrices_by_size(here)
            present = set(r["format"] for r in here)
            formats = defs.format_order(present)
            out += [f"## {device} — {dtype}", "",
                    *([defs.mixed_note, ""] if dtype == defs.mixed else []),
                    "### GFLOP/s per format (best in bold)", "",
                    gflops_table(here, matrices, formats), "",
                    "### Best format per matrix", "",
                    "Times in ms; `× X` is the kernel speedup over baseline X (X's time / "
                    "this kernel time), `× X wall` the wall-time speedup (X's wall time / "
                    "`wall ms`, the wall time of `M @ x` from a numpy x to a numpy y); "
                    "`% less than ELL` is the memory saved against plain ELLPACK (pJDS "
                    "paper, Table 1).", "",
                    best_table(here, matrices, defs, records), "",
                    "### Slowest against fastest, per format", "",
                    "Each format's largest kernel time / the fastest format's on the same "
                    "matrix, over the matrices it ran on.", "",
                    slowdown_table(here, matrices, formats), "",
                    "### Conversion ms / break-even products vs csr-scalar", "",
                    conversion_table(here, matrices, formats), "",
                    "### Device memory MiB (in brackets: change against plain ELLPACK on "
                    "this device; −: smaller)", "",
                    memory_table(here, matrices, formats), ""]
    return "\n".join(out)


def baselines_section(records: list[Rec], defs: Definitions) -> str:
    base = baseline_records(records)
    if not base:
        return "## Baselines\n\nNo baseline was run."
    out = ["## Baselines", "", *defs.baseline_legend(
        "As the runs define them:", [b for b in defs.baselines if any(r["format"] == b
                                                                      for r in base)])]
    for dtype in unique(r["dtype"] for r in base):
        here = [r for r in base if r["dtype"] == dtype]
        names = [b for b in defs.baselines if any(r["format"] == b for r in here)]
        rows = []
        for m in matrices_by_size(here):
            row = [m]
            for b in names:
                r = next((r for r in here if r["matrix"] == m and r["format"] == b), None)
                if r is None:
                    row.append("")
                elif r["status"] in ("ok", "wrong"):
                    row.append(f"{num(r['kernel_ms'], '.3f')} ms, {num(r.get('gflops'))} "
                               f"GFLOP/s" + (" (wrong)" if r["status"] == "wrong" else ""))
                else:
                    row.append(r["status"])
            rows.append(row)
        devices = "; ".join(unique(f"{r['format']}: {r['device']}" for r in here
                                    if r["status"] == "ok"))
        out += [f"### {dtype}", "", f"Where: {devices or 'none ran'}.", "",
                table(rows, ["matrix", *names]), ""]
    return "\n".join(out)


def speedup_section(records: list[Rec], defs: Definitions) -> str:
    """Per dtype: the best format of every device against every baseline that ran."""
    recs = format_records(records)
    out = ["## Speedup of each device's best format over the baselines", "",
           "`kernel`: time of the baseline / kernel time of the device's best format; `wall`: "
           "wall time of the baseline / wall time of the best format's `M @ x` from a numpy x "
           "to a numpy y (transfers included; none for cuSPARSE, timed by kernel only); same "
           "matrix, value type and run. `absent`: the baseline could not run (see below).", ""]
    index = baseline_index(records)
    for dtype in unique(r["dtype"] for r in recs):
        here = [r for r in recs if r["dtype"] == dtype]
        devices = unique(r["device"] for r in here)
        ran = {b for b in defs.baselines for r in baseline_records(records)
               if r["format"] == b and r["dtype"] == defs.baseline_dtype(dtype)
               and r["status"] == "ok"}
        names = [b for b in defs.baselines if b in ran]
        note = [defs.mixed_note, ""] if dtype == defs.mixed else []
        if not names:
            out += [f"### {dtype}", "", *note, "No baseline ran.", ""]
            continue
        matrices = matrices_by_size(here)
        winners = {(m, d): best([r for r in here if r["matrix"] == m and r["device"] == d])
                   for m in matrices for d in devices}
        columns = []  # (device, baseline, wall?)
        for d in devices:
            for name in names:
                columns.append((d, name, False))
                if any(wall_speedup(winners[m, d], name, index, defs) is not None
                       for m in matrices):
                    columns.append((d, name, True))
        headers = ["matrix"] + [f"{short_device(d)} × {b} {'wall' if wall else 'kernel'}"
                                for d, b, wall in columns]
        rows = []
        for m in matrices:
            rows.append([m] + [num(wall_speedup(winners[m, d], b, index, defs) if wall
                                   else speedup(winners[m, d], b), ".2f")
                               for d, b, wall in columns])
        out += [f"### {dtype}", "", *note, table(rows, headers), ""]
    return "\n".join(out)


def mixed_section(records: list[Rec], defs: Definitions) -> str:
    """What mixed precision buys: per device and matrix, its best time and its error next to
    float32's (and float64's where it ran). Empty without mixed records."""
    recs = format_records(records)
    mixed = defs.mixed
    if not any(r["dtype"] == mixed for r in recs):
        return ""
    out = ["## Mixed precision: float32 values, float64 sums", "", defs.mixed_note, "",
           "`max rel. error` = max |y − y_ref| / max |y_ref| of the checked product, y_ref "
           "the float64 product of the stored values (for float32 and mixed the same float32 "
           "values and x), worst over the formats that ran; `time` is the best format's "
           "kernel time; `mixed / float32` its ratio (above 1: mixed is slower).", ""]
    dtypes = ("float32", mixed, "float64")
    for device in unique(r["device"] for r in recs if r["dtype"] == mixed):
        here = [r for r in recs if r["device"] == device and r["dtype"] in dtypes]
        rows = []
        for m in matrices_by_size([r for r in here if r["dtype"] == mixed]):
            by = {d: [r for r in here if r["matrix"] == m and r["dtype"] == d] for d in dtypes}
            winners = {d: best(by[d]) for d in dtypes}
            errors = {d: _worst_error(by[d]) for d in dtypes}
            w32, wmix = winners["float32"], winners[mixed]
            ratio = (wmix["kernel_ms"] / w32["kernel_ms"]) if w32 and wmix else None
            rows.append([m, *[_winner(winners[d]) for d in ("float32", mixed)],
                         num(ratio, ".2f"), *[num(errors[d], ".2e") for d in dtypes]])
        out += [f"### {device}", "",
                table(rows, ["matrix", "float32 best (time ms)", "mixed best (time ms)",
                             "mixed / float32", "float32 max rel. error",
                             "mixed max rel. error", "float64 max rel. error"]), ""]
    return "\n".join(out)


def _winner(r: Rec | None) -> str:
    return DASH if r is None else f"{r['format']} ({num(r['kernel_ms'], '.3f')})"


def _worst_error(recs: list[Rec]) -> float | None:
    errors = [r["max_rel_error"] for r in recs
              if r["status"] == "ok" and r.get("max_rel_error") is not None]
    return max(errors) if errors else None


def problems_section(records: list[Rec]) -> str:
    bad = [r for r in format_records(records) if r["status"] not in ("ok",)]
    rows = [[r["matrix"], r["device"], r["format"], r["dtype"], r["status"], r.get("reason", "")]
            for r in bad]
    out = ["## Formats skipped, failed or wrong", ""]
    out.append(table(rows, ["matrix", "device", "format", "dtype", "status", "reason"])
               if rows else "None.")
    absent = [r for r in baseline_records(records) if r["status"] != "ok"]
    out += ["", "## Baselines absent", ""]
    reasons = unique((r["format"], r["status"], r.get("reason", "")) for r in absent)
    out.append(table([list(x) for x in reasons], ["baseline", "status", "reason"])
               if reasons else "None: every requested baseline ran.")
    return "\n".join(out)


def plots_section(plots: list[str] | str) -> str:
    if isinstance(plots, str):
        return f"## Plots\n\n{plots}"
    if not plots:
        return "## Plots\n\nNothing to plot."
    return "## Plots\n\n" + "\n\n".join(f"![{p}]({p})" for p in plots)


def render(metas: list[dict[str, Any]], records: list[Rec],
           plots: list[str] | str = "") -> str:
    """The whole report.md for ``records`` of the runs described by ``metas``: a function of
    both alone (definitions and defaults come from ``metas``, :class:`Definitions`).

    ``plots`` lists the PNG files written beside report.md, or is a sentence saying why there
    are none.
    """
    defs = Definitions.of(metas)
    records = [upgrade(r) for r in records]
    parts = ["# clspmv benchmark report", "",
             f"{len(records)} records from {len(metas)} run{'s' if len(metas) != 1 else ''}; "
             "the answer first, then the runs, the definitions and every table.", ""]
    summary = summary_section(records, defs, plots) if records else ""
    parts += [summary] if summary else []
    parts += ["## Runs", "", runs_section(metas), method_section(metas, defs), ""]
    if records:
        mixed = mixed_section(records, defs)
        parts += [matrices_section(records), "", device_sections(records, defs),
                  baselines_section(records, defs), "", speedup_section(records, defs),
                  *([mixed] if mixed else []), crossover_section(records),
                  *sections(records, defs, plots), problems_section(records), ""]
    parts.append(plots_section(plots))
    return "\n".join(parts).rstrip() + "\n"
