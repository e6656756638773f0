"""What every report section shares: the definitions of the runs (:class:`Definitions`, read
from their meta data only) and small helpers over records."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabulate import tabulate

from ..bench.records import atomic_write
from .compat import LEGACY_SWEEP_DEFAULTS, upgrade_meta

Rec = dict[str, Any]
DASH = "—"

SUMMARY_PLOT = "summary.png"
PLOT_KINDS = ("gflops", "speedup", "bandwidth", "matmat", "selection", "distributed")
"""The plots drawn per value type, each as :func:`plot_name` names it."""
PLOTS = (SUMMARY_PLOT, *(f"{kind}_*.png" for kind in PLOT_KINDS))
"""Glob patterns of every plot a report draws (what replacing a report removes)."""


def plot_name(kind: str, dtype: str) -> str:
    """The file of the ``kind`` plot (one of :data:`PLOT_KINDS`) of value type ``dtype``."""
    if kind not in PLOT_KINDS:
        raise ValueError(f"unknown plot kind {kind!r}: add it to PLOT_KINDS")
    return f"{kind}_{dtype}.png"


def save_figure(plt: Any, fig: Any, path: Path) -> None:
    """Save ``fig`` as the PNG ``path`` atomically (an interrupt leaves no half-written plot)
    and close it."""
    try:
        atomic_write(path, lambda fh: fig.savefig(fh, format="png", dpi=110), binary=True)
    finally:
        plt.close(fig)


@dataclass(frozen=True)
class Definitions:
    """What the report needs to know beyond the records, from the runs' meta data: the
    baselines (the columns of their tables), mixed precision, the methodology and the sweep's
    defaults."""

    baselines: tuple[str, ...] = ()
    formats: tuple[str, ...] = ()
    """The formats in the order of the tables' columns."""
    mixed: str = "mixed"
    mixed_baseline: str = "float32"
    mixed_note: str = ""
    method: tuple[str, ...] = ()
    sweep_defaults: dict[str, Any] = field(default_factory=dict)
    selection: dict[str, Any] = field(default_factory=dict)
    """The selection's settings (``tie_pct``, ``csr_reference``) of the first run that has them
    (empty: no run measured it)."""
    formulas: dict[str, str] = field(default_factory=dict)
    """Every run's formulas (``meta["formulas"]``, the first run's text where two differ)."""
    baseline_texts: dict[str, str] = field(default_factory=dict)
    """Baseline name -> what it calls and how it is timed (``meta["definitions"]["baselines"]``,
    the first run's text where two differ; none where no run recorded one): which MKL handle
    ``mkl`` and ``mkl-optimised`` are, for instance."""

    @classmethod
    def of(cls, metas: list[dict[str, Any]]) -> Definitions:
        """The definitions of merged runs: the baselines of all, the rest of the first run
        that states them."""
        metas = [upgrade_meta(m) for m in metas] or [upgrade_meta({})]
        baselines = unique(name for m in metas for name in m["definitions"]["baselines"])
        formats = unique(name for m in metas for name in m["definitions"]["formats"])
        mixed = metas[0]["definitions"]["mixed"]
        sweeps = [m["settings"]["sweep"]["defaults"] for m in metas
                  if isinstance((m.get("settings") or {}).get("sweep"), dict)]
        selections = [m["settings"]["selection"] for m in metas
                      if isinstance((m.get("settings") or {}).get("selection"), dict)]
        formulas: dict[str, str] = {}
        texts: dict[str, str] = {}
        for m in metas:
            for name, text in (m.get("formulas") or {}).items():
                formulas.setdefault(name, text)
            for name, text in m["definitions"]["baselines"].items():
                if text:
                    texts.setdefault(name, text)
        return cls(tuple(baselines), tuple(formats), mixed["dtype"], mixed["baseline_dtype"],
                   mixed["note"], tuple(metas[0]["method"]),
                   sweeps[0] if sweeps else LEGACY_SWEEP_DEFAULTS,
                   selections[0] if selections else {}, formulas, texts)

    def baseline_dtype(self, dtype: str) -> str:
        """The dtype of the baseline records a format's records of ``dtype`` are compared
        with."""
        return self.mixed_baseline if dtype == self.mixed else dtype

    def with_baselines(self, records: list[Rec], dtype: str) -> list[Rec]:
        """The records of ``dtype``; for mixed also the baseline records it is compared
        with."""
        return [r for r in records if r["dtype"] == dtype or (
            dtype == self.mixed and r.get("kind") == "baseline"
            and r["dtype"] == self.baseline_dtype(dtype))]


    def baseline_legend(self, intro: str, names: Iterable[str]) -> list[str]:
        """``intro`` and a list defining the baselines ``names`` (the ``× X`` columns) as the
        runs recorded them, e.g. which MKL handle each MKL baseline is; nothing where no run
        recorded any."""
        lines = [f"- `{name}`: {self.baseline_texts[name]}" for name in names
                 if name in self.baseline_texts]
        return [intro, "", *lines, ""] if lines else []

    def format_order(self, present: Iterable[str]) -> list[str]:
        """The formats of ``present`` in the runs' order, then any others by name."""
        present = set(present)
        return [f for f in self.formats if f in present] + sorted(present - set(self.formats))


def num(value: Any, spec: str = ".2f") -> str:
    """``value`` formatted with ``spec``, or a dash for a missing value."""
    if value is None:
        return DASH
    return format(value, spec)


def table(rows: list[list[Any]], headers: list[str]) -> str:
    """A GitHub-flavoured Markdown table of already formatted cells."""
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def unique(values: Iterable[Any]) -> list[Any]:
    """``values`` without repeats, in order."""
    return list(dict.fromkeys(values))


def speedup(r: Rec | None, baseline: str) -> float | None:
    """The record's speedup over ``baseline`` (None: none)."""
    return (r.get("speedups") or {}).get(baseline) if r else None


def matrices_by_size(records: list[Rec]) -> list[str]:
    """Matrix names ordered by number of entries, then name."""
    sizes = {r["matrix"]: r["nnz"] for r in records}
    return sorted(sizes, key=lambda m: (sizes[m], m))


def of(records: list[Rec], operation: str) -> list[Rec]:
    """The records of ``operation`` (records of older runs are ``spmv``)."""
    return [r for r in records if r.get("operation", "spmv") == operation]


def spmv_records(records: list[Rec]) -> list[Rec]:
    """The A x records (those of runs older than the other operations are all A x)."""
    return of(records, "spmv")


def format_records(records: list[Rec]) -> list[Rec]:
    """The A x records of the formats."""
    return [r for r in spmv_records(records) if r.get("kind", "format") == "format"]


def baseline_records(records: list[Rec]) -> list[Rec]:
    """The A x records of the baselines."""
    return [r for r in spmv_records(records) if r.get("kind") == "baseline"]


def best(records: list[Rec]) -> Rec | None:
    """The measured record with the smallest kernel time (``ok`` records only)."""
    ok = [r for r in records if r["status"] == "ok" and r.get("kernel_ms")]
    return min(ok, key=lambda r: r["kernel_ms"]) if ok else None


def short_device(label: str) -> str:
    """A device label without its platform, for narrow column headers."""
    return label.split(" (")[0]
