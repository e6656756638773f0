"""PNG plots of benchmark records (matplotlib, Agg backend; the ``plot`` extra).

``summary.png``: the answer (per value type, every device's fastest format per matrix and its
kernel and wall-time speedups over each baseline, log scale). Per value type:
``gflops_<dtype>.png`` (GFLOP/s of every format per matrix, one panel per device, the baselines
as black lines, a mark where a format has no bar; log scale where values span decades),
``speedup_<dtype>.png`` (each device's best format over each baseline, kernel and wall time,
log scale) and ``bandwidth_<dtype>.png`` (the best format's % of the device's copy bandwidth;
hatched bars: matrices that fit in the device's cache, said on the plot when all do); with
``--matmat`` records ``matmat_<dtype>.png`` (GFLOP/s against the number of right-hand sides k,
one panel per matrix); the selection and distributed plots are drawn by their sections'
modules. Formats keep one colour and hatch in every plot (:func:`style_map`, in the runs'
format order). Like the tables, a pure function of the records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from .common import (
    SUMMARY_PLOT,
    Definitions,
    Rec,
    baseline_records,
    best,
    format_records,
    matrices_by_size,
    plot_name,
    save_figure,
    short_device,
    unique,
)
from .common import speedup as speedup_of
from .summary import baseline_index, ran, wall_speedup

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")
"""Ten qualitative colours (matplotlib's tab10); an eleventh series and on reuse them with a
hatch (:data:`HATCHES`), so no two of 40 series look alike."""
HATCHES = ("", "////", "....", "xxxx")

STATUS_MARK = {"skipped": "n/a", "failed": "failed", "wrong": "wrong", "absent": "absent"}
"""What a bar that did not run shows in its place (the report's tables say why)."""


def style_map(names: list[str]) -> dict[str, dict[str, Any]]:
    """name -> bar style (colour, hatch), stable for a given order of names (the formats in
    the runs' order): the same format looks the same in every plot of a report."""
    return {name: {"color": PALETTE[i % len(PALETTE)],
                   "hatch": HATCHES[(i // len(PALETTE)) % len(HATCHES)]}
            for i, name in enumerate(names)}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _labels(matrices: list[str]) -> list[str]:
    """Generator name, then its parameters two to a line."""
    out = []
    for m in matrices:
        name, _, params = m.removeprefix("gen:").partition(":")
        parts = params.split(",") if params else []
        lines = [",".join(parts[i:i + 2]) for i in range(0, len(parts), 2)]
        out.append("\n".join([name, *lines]))
    return out


def _bars(ax, matrices: list[str], series: dict[str, list[float | None]], ylabel: str,
          styles: dict[str, dict[str, Any]] | None = None,
          hatches: dict[str, list[bool]] | None = None,
          notes: dict[str, list[str]] | None = None,
          missing: dict[str, list[str]] | None = None) -> float:
    """Grouped bars, one group per matrix; ``styles`` name -> colour and hatch (default: in
    order), ``hatches`` bars to hatch, ``notes`` text above bars, ``missing`` text standing in
    for a bar that has no value (why: ``n/a``, ``failed``). Returns the bar width."""
    width = 0.8 / max(len(series), 1)
    x = np.arange(len(matrices))
    styles = styles or style_map(list(series))
    for i, (name, values) in enumerate(series.items()):
        style = styles.get(name) or style_map([name])[name]
        offsets = x + (i - (len(series) - 1) / 2) * width
        bars = ax.bar(offsets, [np.nan if v is None else v for v in values], width,
                      label=name, color=style["color"], hatch=style["hatch"] or None,
                      edgecolor="white" if style["hatch"] else None, linewidth=0)
        for bar, hatch in zip(bars, (hatches or {}).get(name, []), strict=False):
            if hatch:
                bar.set_hatch("//")
                bar.set_edgecolor("black")
        for bar, note, v in zip(bars, (notes or {}).get(name, []), values, strict=False):
            if note and v is not None:
                ax.annotate(note, (bar.get_x() + bar.get_width() / 2, v), ha="center",
                            va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                            textcoords="offset points")
        for pos, why, v in zip(offsets, (missing or {}).get(name, []), values, strict=False):
            if why and v is None:
                ax.annotate(why, (pos, 0), xycoords=("data", "axes fraction"), ha="center",
                            va="bottom", fontsize=5, rotation=90, color="0.35",
                            xytext=(0, 2), textcoords="offset points")
    ax.set_xticks(x, _labels(matrices), fontsize=7)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return width


def _why(r: Rec | None) -> str:
    """The mark of a format that has no bar."""
    if r is None:
        return ""
    return STATUS_MARK.get(r["status"], r["status"]) if r["status"] != "ok" else ""


def _references(ax, matrices: list[str], base: list[Rec]) -> None:
    """Each baseline's GFLOP/s on each matrix as a horizontal line across the matrix's group of
    bars (one line style per baseline, named in the legend with where it ran)."""
    for j, name in enumerate(unique(r["format"] for r in base)):
        labelled = False
        for i, m in enumerate(matrices):
            r = next((r for r in base if r["matrix"] == m and r["format"] == name
                      and r["status"] == "ok" and r.get("gflops")), None)
            if r is None:
                continue
            ax.hlines(r["gflops"], i - 0.45, i + 0.45, colors="black",
                      linestyles=("solid", "dashed", "dotted", "dashdot")[j % 4],
                      linewidth=1.2,
                      label=None if labelled else f"{name} ({short_device(r['device'])})")
            labelled = True


def gflops(plt, records: list[Rec], dtype: str, path: Path, formats: list[str],
           baseline_dtype: str | None = None) -> None:
    recs = [r for r in format_records(records) if r["dtype"] == dtype]
    base = [r for r in baseline_records(records) if r["dtype"] == (baseline_dtype or dtype)]
    devices = unique(r["device"] for r in recs)
    styles = style_map(formats)
    fig, axes = plt.subplots(len(devices), 1, figsize=(max(9, 1.7 * len(matrices_by_size(recs))),
                                                        4.2 * len(devices)), squeeze=False)
    for ax, device in zip(axes[:, 0], devices, strict=True):
        here = [r for r in recs if r["device"] == device]
        matrices = matrices_by_size(here)
        present = [f for f in formats if any(r["format"] == f for r in here)]
        pick = {(r["matrix"], r["format"]): r for r in here}
        series = {f: [pick[m, f].get("gflops") if (m, f) in pick and pick[m, f]["status"] == "ok"
                      else None for m in matrices] for f in present}
        missing = {f: [_why(pick.get((m, f))) for m in matrices] for f in present}
        _bars(ax, matrices, series, "GFLOP/s (2 nnz / kernel time)", styles, missing=missing)
        _references(ax, matrices, base)
        values = [v for vs in series.values() for v in vs if v] + [
            r["gflops"] for r in base if r["matrix"] in matrices and r.get("gflops")
            and r["status"] == "ok"]
        log = bool(values) and max(values) / min(values) > 30
        ax.margins(y=0.3)
        if log:
            _log_axis(ax, values)
        ax.set_title(f"{device}, {dtype}: GFLOP/s per format{' (log scale)' if log else ''}; "
                     f"black lines: the baselines ({baseline_dtype or dtype}); n/a, failed, "
                     "wrong: no bar, report.md says why", fontsize=8)
        _legend_right(ax, ncol=2 if len(series) > 12 else 1)
    fig.tight_layout()
    save_figure(plt, fig, path)


def _speedup_series(recs: list[Rec], records: list[Rec], defs: Definitions, dtype: str,
                    matrices: list[str]) -> tuple[dict[str, list[float | None]],
                                                  dict[str, dict[str, Any]],
                                                  dict[str, list[str]]]:
    """Per device and baseline: the best format's kernel speedup and (hatched) wall-time
    speedup per matrix; their styles; the best format's name above the kernel bars."""
    index = baseline_index(records)
    series: dict[str, list[float | None]] = {}
    notes: dict[str, list[str]] = {}
    names = ran(records, defs, dtype)
    colours = style_map([(d, b) for d in unique(r["device"] for r in recs) for b in names])
    styles: dict[str, dict[str, Any]] = {}
    for d in unique(r["device"] for r in recs):
        winners = [best([r for r in recs if r["device"] == d and r["matrix"] == m])
                   for m in matrices]
        first = True
        for b in names:
            kernel = [speedup_of(w, b) for w in winners]
            wall = [wall_speedup(w, b, index, defs) for w in winners]
            colour = colours[(d, b)]["color"]
            if any(v is not None for v in kernel):
                key = f"{short_device(d)} vs {b}: kernel"
                series[key], styles[key] = kernel, {"color": colour, "hatch": ""}
                notes[key] = [w["format"] if w and first else "" for w in winners]
                first = False
            if any(v is not None for v in wall):
                key = f"{short_device(d)} vs {b}: wall (M @ x, transfers included)"
                series[key], styles[key] = wall, {"color": colour, "hatch": "////"}
    return series, styles, notes


def _legend_right(ax, handles: list | None = None, ncol: int = 1) -> None:
    """The legend beside the panel, where it hides no bar."""
    kwargs = {"handles": handles} if handles else {}
    ax.legend(fontsize=6, ncol=ncol, loc="upper left", bbox_to_anchor=(1.005, 1.0),
              borderaxespad=0, **kwargs)


def _log_axis(ax, values: list[float]) -> None:
    """A log y axis labelled in plain numbers (0.5, 1, 10, 100; the minor ticks labelled
    only when the axis spans less than a decade)."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_yscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    shown = [v for v in values if v and v > 0]
    narrow = bool(shown) and max(shown) / min(shown) < 30
    ax.yaxis.set_minor_formatter(plain if narrow else NullFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=6)


def _log_speedup_axis(ax, series: dict[str, list[float | None]]) -> None:
    ax.margins(y=0.2)
    _log_axis(ax, [v for values in series.values() for v in values if v] + [1.0])
    ax.axhline(1.0, color="black", linewidth=0.8)


def speedup(plt, records: list[Rec], dtype: str, path: Path, defs: Definitions) -> bool:
    recs = [r for r in format_records(records) if r["dtype"] == dtype]
    matrices = matrices_by_size(recs)
    series, styles, notes = _speedup_series(recs, records, defs, dtype, matrices)
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(max(9, 1.7 * len(matrices)), 4.8))
    _bars(ax, matrices, series, "speedup (baseline time / best format time, log)", styles,
          notes=notes)
    _log_speedup_axis(ax, series)
    ax.set_title(f"Best format per device over the baselines, {dtype} (above 1: faster); "
                 "solid: kernel time, hatched: wall time of M @ x", fontsize=8)
    _legend_right(ax)
    fig.tight_layout()
    save_figure(plt, fig, path)
    return True


def summary(plt, records: list[Rec], path: Path, defs: Definitions) -> bool:
    """The answer in one figure: per value type (a panel each), every device's fastest format
    per matrix (named above its bars) and its kernel and wall-time speedups over each
    baseline."""
    recs = format_records(records)
    panels = []
    for dtype in unique(r["dtype"] for r in recs):
        here = [r for r in recs if r["dtype"] == dtype]
        matrices = matrices_by_size(here)
        series, styles, notes = _speedup_series(here, records, defs, dtype, matrices)
        if series:
            panels.append((dtype, matrices, series, styles, notes))
    if not panels:
        return False
    width = max(9, 1.7 * max(len(p[1]) for p in panels))
    fig, axes = plt.subplots(len(panels), 1, figsize=(width, 4.6 * len(panels)),
                             squeeze=False)
    for ax, (dtype, matrices, series, styles, notes) in zip(axes[:, 0], panels, strict=True):
        _bars(ax, matrices, series, "speedup over the baseline (log)", styles, notes=notes)
        _log_speedup_axis(ax, series)
        ax.set_title(f"{dtype}: the fastest format per device (named above its bars) against "
                     "each baseline; solid: kernel time, hatched: wall time of M @ x",
                     fontsize=8)
        _legend_right(ax)
    fig.tight_layout()
    save_figure(plt, fig, path)
    return True


def bandwidth(plt, records: list[Rec], dtype: str, path: Path) -> None:
    recs = [r for r in format_records(records) if r["dtype"] == dtype]
    devices = unique(r["device"] for r in recs)
    matrices = matrices_by_size(recs)
    series, hatches, notes = {}, {}, {}
    for d in devices:
        winners = [best([r for r in recs if r["device"] == d and r["matrix"] == m])
                   for m in matrices]
        series[short_device(d)] = [w.get("pct_copy_bw") if w else None for w in winners]
        hatches[short_device(d)] = [bool(w and w.get("fits_cache")) for w in winners]
        notes[short_device(d)] = [w["format"] if w else "" for w in winners]
    fig, ax = plt.subplots(figsize=(max(9, 1.7 * len(matrices)), 4.8))
    _bars(ax, matrices, series, "% of the device's measured copy bandwidth", None, hatches,
          notes)
    ax.margins(y=0.3)
    ax.axhline(100.0, color="black", linewidth=0.8)
    ax.set_title(f"Best format's effective bandwidth (minimum bytes / kernel time), {dtype}; "
                 "hatched: the matrix fits in the device's cache", fontsize=8)
    flags = [h for values in hatches.values() for h, v in
             zip(values, next(iter(series.values())), strict=False) if v is not None]
    if flags and all(flags):
        ax.text(0.5, 0.93, "every matrix here fits in the device's cache: these bars measure "
                "cache bandwidth, not memory bandwidth\n(run larger matrices, e.g. --suite cpu, "
                "to see the memory bound)", transform=ax.transAxes, ha="center", va="top",
                fontsize=8, color="darkred",
                bbox={"facecolor": "white", "edgecolor": "darkred", "alpha": 0.9})
    from matplotlib.patches import Patch

    style = style_map(list(series))
    handles = [Patch(facecolor=style[name]["color"], label=name) for name in series]
    if any(h for values in hatches.values() for h in values):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                             label="fits in the device's cache"))
    _legend_right(ax, handles)
    fig.tight_layout()
    save_figure(plt, fig, path)


def matmat(plt, records: list[Rec], dtype: str, path: Path) -> None:
    """GFLOP/s against k, one panel per matrix: a colour per device and format (or baseline),
    solid / dotted for row- / column-major X (baselines dashed / dash-dotted), log2 k axis."""
    import matplotlib

    recs = [r for r in records if r.get("operation") == "matmat" and r["dtype"] == dtype
            and r["status"] == "ok" and r.get("gflops")]
    matrices = matrices_by_size(recs)
    devices = unique(r["device"] for r in recs if r["kind"] == "format")
    series = unique((r["kind"], r["device"], r["format"]) for r in recs)
    palette = matplotlib.colormaps["tab20" if len(series) > 10 else "tab10"].colors
    colour = {s: palette[i % len(palette)] for i, s in enumerate(series)}
    styles = {("format", "C"): "-", ("format", "F"): ":", ("baseline", "C"): "--",
              ("baseline", "F"): "-."}
    cols = min(len(matrices), 3)
    rows = -(-len(matrices) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.6 * rows + 1.2),
                             squeeze=False)
    handles: dict[str, Any] = {}
    for ax, m in zip(axes.flat, matrices, strict=False):
        here = [r for r in recs if r["matrix"] == m]
        for kind, device, fmt in series:
            for order in ("C", "F"):
                points = sorted((r["k"], r["gflops"]) for r in here if r["kind"] == kind
                                and r["device"] == device and r["format"] == fmt
                                and r["order"] == order)
                if not points:
                    continue
                name = fmt if kind == "baseline" or len(devices) == 1 else (
                    f"{short_device(device)} {fmt}")
                (line,) = ax.plot([k for k, _ in points], [g for _, g in points],
                                  marker="o", markersize=3, color=colour[(kind, device, fmt)],
                                  linestyle=styles[(kind, order)])
                handles.setdefault(f"{name} {order}", line)
        ks = sorted({r["k"] for r in here})
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("right-hand sides k")
        values = [r["gflops"] for r in here]
        log = max(values) / min(values) > 30  # baselines far below the formats: still readable
        if log:
            _log_axis(ax, values)
        ax.set_ylabel("GFLOP/s (log scale)" if log else "GFLOP/s")
        ax.set_title(_labels([m])[0].replace("\n", " "), fontsize=8)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(matrices):]:
        ax.set_visible(False)
    where = f" on {short_device(devices[0])}" if len(devices) == 1 else ""
    fig.suptitle(f"A X: GFLOP/s (2 nnz k / kernel time) against k{where}, {dtype}\n"
                 "solid / dotted: row- / column-major X; baselines dashed / dash-dotted",
                 fontsize=9)
    fig.legend(list(handles.values()), list(handles), loc="lower center", fontsize=6,
               ncol=min(6, max(len(handles), 1)), frameon=False)
    fig.tight_layout(rect=(0, 0.04 + 0.018 * -(-len(handles) // 6), 1, 0.94))
    save_figure(plt, fig, path)


def draw(records: list[Rec], out_dir: Path, defs: Definitions | None = None) -> list[str]:
    """Write the plots into ``out_dir`` (formats styled in the order of ``defs``, the runs'
    definitions); returns their file names. ImportError without matplotlib."""
    plt = _pyplot()
    defs = defs or Definitions.of([])
    formats = defs.format_order(r["format"] for r in format_records(records))
    names = []
    if summary(plt, records, Path(out_dir) / SUMMARY_PLOT, defs):
        names.append(SUMMARY_PLOT)
    for dtype in unique(r["dtype"] for r in format_records(records)):
        name = plot_name("gflops", dtype)
        gflops(plt, records, dtype, Path(out_dir) / name, formats, defs.baseline_dtype(dtype))
        names.append(name)
        name = plot_name("speedup", dtype)
        if speedup(plt, records, dtype, Path(out_dir) / name, defs):
            names.append(name)
        name = plot_name("bandwidth", dtype)
        bandwidth(plt, records, dtype, Path(out_dir) / name)
        names.append(name)
    for dtype in unique(r["dtype"] for r in records if r.get("operation") == "matmat"
                         and r["status"] == "ok" and r.get("gflops")):
        name = plot_name("matmat", dtype)
        matmat(plt, records, dtype, Path(out_dir) / name)
        names.append(name)
    from . import distributed_plots, selection  # efficiency per mode; predicted against measured

    return (names + selection.draw(plt, records, Path(out_dir))
            + distributed_plots.draw(plt, records, Path(out_dir)))
