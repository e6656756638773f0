"""The figures of the distributed records (:mod:`.distributed` has their tables):
``distributed_<dtype>.png``, the parallel efficiency against the ranks per mode (dashed: the
model's), one panel per matrix; ``distributed_<dtype>_timeline.png``, one product per rank (a
bar per kind of command, from its first start to its last stop), one panel per matrix and rank
count."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .common import Rec, matrices_by_size, num, of, plot_name, save_figure, short_device, unique
from .distributed import OPERATION, TIMELINE_PNG, TIMELINE_STEPS, modes_of, passed, step_of


def draw(plt: Any, records: list[Rec], out_dir: Path) -> list[str]:
    """``distributed_<dtype>.png`` per value type: parallel efficiency against the ranks per
    mode (solid, measured; dashed, the model's), one panel per matrix; returns the file names."""
    import matplotlib

    recs = [r for r in of(records, OPERATION) if passed(r) and r.get("efficiency") is not None]
    names = []
    colours = dict(zip(("vector", "overlap", "task"), matplotlib.colormaps["tab10"].colors,
                       strict=False))
    for dtype in unique(r["dtype"] for r in recs):
        here = [r for r in recs if r["dtype"] == dtype]
        matrices = matrices_by_size(here)
        cols = min(len(matrices), 3)
        rows = -(-len(matrices) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(max(4.8 * cols, 6.4), 3.4 * rows + 0.9),
                                 squeeze=False)
        for ax, m in zip(axes.flat, matrices, strict=False):
            mine = [r for r in here if r["matrix"] == m]
            for mode in modes_of(mine):
                pts = sorted((r["ranks"], r["efficiency"], r.get("predicted_efficiency"))
                             for r in mine if r.get("mode") == mode)
                colour = colours.get(mode)
                ranks = [p[0] for p in pts]
                ax.plot(ranks, [100 * p[1] for p in pts], marker="o", color=colour,
                        label=mode)
                model = [(p[0], 100 * p[2]) for p in pts if p[2] is not None]
                if model:
                    ax.plot(*zip(*model, strict=True), linestyle="--", marker="x",
                            color=colour, label=f"{mode} (model)")
            ticks = sorted({r["ranks"] for r in mine})
            ax.set_xscale("log", base=2)
            ax.set_xticks(ticks, [str(t) for t in ticks])
            ax.axhline(100.0, color="black", linewidth=0.6)
            ax.set_xlabel("ranks")
            ax.set_ylabel("parallel efficiency %")
            ax.set_title(m.removeprefix("gen:"), fontsize=8)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=6)
        for ax in list(axes.flat)[len(matrices):]:
            ax.set_visible(False)
        devices = unique(short_device(r["device"]) for r in here)
        fig.suptitle(f"Distributed product: efficiency against one rank, {dtype}\n"
                     f"{', '.join(devices)}; dashed: the model", fontsize=8)
        fig.tight_layout()
        name = plot_name("distributed", dtype)
        save_figure(plt, fig, Path(out_dir) / name)
        names.append(name)
    return names + _draw_timelines(plt, recs, out_dir)


def _draw_timelines(plt: Any, recs: list[Rec], out_dir: Path) -> list[str]:
    """Per value type, one panel per matrix and rank count (> 1): per rank, a bar per step of
    :data:`TIMELINE_STEPS` from its first start to its last stop, of the ``overlap`` run (else
    the first mode measured)."""
    import matplotlib

    names = []
    colours = dict(zip(TIMELINE_STEPS, matplotlib.colormaps["tab10"].colors, strict=False))
    for dtype in unique(r["dtype"] for r in recs):
        chosen = []
        for r in recs:
            if r["dtype"] != dtype or (r.get("ranks") or 0) < 2 or not r.get("timeline"):
                continue
            modes = modes_of([q for q in recs if q["matrix"] == r["matrix"]
                            and q.get("ranks") == r["ranks"] and q["dtype"] == dtype])
            if r.get("mode") == ("overlap" if "overlap" in modes else modes[0]):
                chosen.append(r)
        if not chosen:
            continue
        cols = min(len(chosen), 2)
        rows = -(-len(chosen) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(7.0 * cols, 2.6 * rows + 0.9),
                                 squeeze=False)
        for ax, r in zip(axes.flat, chosen, strict=False):
            lanes = len(TIMELINE_STEPS)
            for rank, steps in enumerate(r["timeline"]):
                for lane, key in enumerate(TIMELINE_STEPS):
                    step = step_of(steps, *key)
                    if step is None:
                        continue
                    ax.barh(rank * (lanes + 1) + lane, step["last"] - step["first"],
                            left=step["first"], height=0.9, color=colours[key],
                            label=key[1] if rank == 0 else None)
            ax.set_yticks([rank * (lanes + 1) + lanes / 2 for rank in range(len(r["timeline"]))],
                          [f"rank {rank}" for rank in range(len(r["timeline"]))])
            ax.invert_yaxis()
            ax.set_xlim(left=0)
            ax.set_xlabel("ms since the product began")
            ax.set_title(f"{r['matrix'].removeprefix('gen:')}, {r['ranks']} ranks, "
                         f"{r.get('mode')}: {num(r.get('kernel_ms'), '.3f')} ms", fontsize=8)
            ax.grid(alpha=0.3, axis="x")
            ax.legend(fontsize=6, loc="lower right")
        for ax in list(axes.flat)[len(chosen):]:
            ax.set_visible(False)
        fig.suptitle(f"Distributed product: one product per rank, {dtype}", fontsize=8)
        fig.tight_layout()
        name = plot_name("distributed", dtype).removesuffix(".png") + TIMELINE_PNG
        save_figure(plt, fig, Path(out_dir) / name)
        names.append(name)
    return names
