"""Reports from benchmark records: report.md (:mod:`.tables`) and PNG plots (:mod:`.plots`).

:func:`load` merges several results.json files (records keyed by matrix, device, format and
value type: a later file replaces an earlier one's record; every run's meta is kept),
:func:`save_merged` saves such a merge as one results.json / results.csv, and :func:`write`
turns records into report.md and plots in a folder made ready for them (:mod:`.folder`: which
folder a run writes into, and the removal of an old report there).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from ..bench.records import atomic_write, key_of, read_json, upgrade, write_csv, write_json
from . import tables
from .common import Definitions
from .folder import REPORT

PLOT_HINT = 'matplotlib is not installed, so no plots were drawn: pip install "clspmv[plot]"'


def load(paths: list[str | Path]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(metas, records) of several results.json files (or their folders) merged into one
    comparison; :class:`~clspmv.bench.records.ResultsFileError` naming a file that is not one.

    A file written by :func:`save_merged` contributes the meta of every run it was made from.
    """
    metas, merged = [], {}
    for path in paths:
        meta, records = read_json(path)
        metas.extend(meta.get("runs") or [meta])
        for r in records:
            merged[key_of(r)] = r
    return metas, list(merged.values())


def save_merged(out_dir: str | Path, metas: list[dict[str, Any]],
                records: list[dict[str, Any]]) -> None:
    """results.json (``meta.runs``: the meta of every run) and results.csv of merged runs."""
    out = Path(out_dir)
    write_json(out / "results.json", {"tool": "clspmv report", "runs": metas}, records)
    write_csv(out / "results.csv", records)


def write(out_dir: str | Path, metas: list[dict[str, Any]],
          records: list[dict[str, Any]]) -> Path:
    """Write report.md and the plots into ``out_dir``, a folder without a report (new, or
    made ready by :func:`.folder.claim` or :func:`.folder.clear_report`, which remove an old
    one: then an interrupted write leaves no old report.md or plot beside the new ones); returns
    the path of report.md. Each file is written atomically: none is left half written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    records = [upgrade(r) for r in records]
    drawn: list[str] | str = PLOT_HINT
    if importlib.util.find_spec("matplotlib") is not None:
        from . import plots

        drawn = plots.draw(records, out, Definitions.of(metas))
    path = out / REPORT
    text = tables.render(metas, records, drawn)
    atomic_write(path, lambda fh: fh.write(text))
    return path
