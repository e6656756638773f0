"""PNG plots of benchmark records (matplotlib, Agg backend; the ``plot`` extra).

Per value type: ``gflops_<dtype>.png`` (GFLOP/s of every format per matrix, one panel per
device), ``speedup_<dtype>.png`` (each device's best format over each baseline, log scale) and
``bandwidth_<dtype>.png`` (the best format's % of the device's copy bandwidth; hatched bars:
matrices that fit in the device's cache); with ``--matmat`` records ``matmat_<dtype>.png``
(GFLOP/s against the number of right-hand sides k, one panel per matrix). Like the tables, a
pure function of the records.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ..matrix import FORMATS
from .common import Rec, best, format_records, matrices_by_size, short_device, unique
from .common import speedup as speedup_of


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
          hatches: dict[str, list[bool]] | None = None,
          notes: dict[str, list[str]] | None = None) -> None:
    import matplotlib

    width = 0.8 / max(len(series), 1)
    x = np.arange(len(matrices))
    colors = matplotlib.colormaps["tab20" if len(series) > 10 else "tab10"].colors
    for i, (name, values) in enumerate(series.items()):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width,
                      [np.nan if v is None else v for v in values], width, label=name,
                      color=colors[i % len(colors)])
        for bar, hatch in zip(bars, (hatches or {}).get(name, []), strict=False):
            if hatch:
                bar.set_hatch("//")
        for bar, note, v in zip(bars, (notes or {}).get(name, []), values, strict=False):
            if note and v is not None:
                ax.annotate(note, (bar.get_x() + bar.get_width() / 2, v), ha="center",
                            va="bottom", fontsize=6, rotation=90, xytext=(0, 2),
                            textcoords="offset points")
    ax.set_xticks(x, _labels(matrices), fontsize=7)
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)


def gflops(plt, records: list[Rec], dtype: str, path: Path) -> None:
    recs = [r for r in format_records(records) if r["dtype"] == dtype]
    devices = unique(r["device"] for r in recs)
    matrices = matrices_by_size(recs)
    fig, axes = plt.subplots(len(devices), 1, figsize=(max(8, 1.6 * len(matrices)),
                                                        3.6 * len(devices)), squeeze=False)
    for ax, device in zip(axes[:, 0], devices, strict=True):
        here = [r for r in recs if r["device"] == device]
        formats = [f for f in FORMATS if any(r["format"] == f for r in here)]
        series = {f: [next((r.get("gflops") for r in here if r["matrix"] == m and
                            r["format"] == f and r["status"] == "ok"), None) for m in matrices]
                  for f in formats}
        _bars(ax, matrices, series, "GFLOP/s")
        ax.set_title(f"{device}, {dtype}", fontsize=9)
        ax.legend(fontsize=6, ncol=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def speedup(plt, records: list[Rec], dtype: str, path: Path) -> bool:
    recs = [r for r in format_records(records) if r["dtype"] == dtype]
    devices = unique(r["device"] for r in recs)
    matrices = matrices_by_size(recs)
    series: dict[str, list[float | None]] = {}
    for d in devices:
        winners = [best([r for r in recs if r["device"] == d and r["matrix"] == m])
                   for m in matrices]
        for b in unique(name for w in winners if w for name in w.get("speedups") or {}):
            values = [speedup_of(w, b) for w in winners]
            if any(v is not None for v in values):
                series[f"{short_device(d)} vs {b}"] = values
    if not series:
        return False
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(matrices)), 4.5))
    _bars(ax, matrices, series, "speedup (baseline time / best format time)")
    ax.set_yscale("log")
    from matplotlib.ticker import ScalarFormatter

    ax.yaxis.set_major_formatter(ScalarFormatter())
    ax.yaxis.set_minor_formatter(ScalarFormatter())
    ax.tick_params(axis="y", which="minor", labelsize=6)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_title(f"Best format per device over the baselines, {dtype}", fontsize=9)
    ax.legend(fontsize=6, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
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
    fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(matrices)), 4.5))
    _bars(ax, matrices, series, "% of measured copy bandwidth", hatches, notes)
    ax.margins(y=0.15)
    ax.axhline(100.0, color="black", linewidth=0.8)
    ax.set_title(f"Best format's effective bandwidth (minimum bytes), {dtype}; hatched: fits "
                 "in the device cache", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


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
        ax.set_ylabel("GFLOP/s")
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
    fig.savefig(path, dpi=110)
    plt.close(fig)


def draw(records: list[Rec], out_dir: Path) -> list[str]:
    """Write the plots into ``out_dir``; returns their file names. ImportError without
    matplotlib."""
    plt = _pyplot()
    names = []
    for dtype in unique(r["dtype"] for r in format_records(records)):
        for kind, function in (("gflops", gflops), ("speedup", speedup),
                               ("bandwidth", bandwidth)):
            name = f"{kind}_{dtype}.png"
            if function(plt, records, dtype, Path(out_dir) / name) is not False:
                names.append(name)
    for dtype in unique(r["dtype"] for r in records if r.get("operation") == "matmat"
                         and r["status"] == "ok" and r.get("gflops")):
        name = f"matmat_{dtype}.png"
        matmat(plt, records, dtype, Path(out_dir) / name)
        names.append(name)
    from . import distributed  # efficiency per mode against the ranks

    return names + distributed.draw(plt, records, Path(out_dir))
