"""The report section and plot of ``clspmv bench --distributed`` (records with ``operation``
``distributed``, :mod:`clspmv.bench.distributed`); present only when such records exist. Runs
with different rank counts (``reports/scaling.sh``: 1, 2, 4, 8) merge into one scaling table.
A pure function of the records, like :mod:`.tables`.

Per device, value type and format pair:

* scaling: per matrix and rank count, for each mode the time per product, the speedup over one
  rank, the parallel efficiency and the model's prediction with its error;
* where the time goes: per matrix, rank count and mode the parts of a product (local and
  non-local kernels, host staging, gathering, the exchange), the load imbalance and the bytes
  exchanged;
* products back to back: per matrix, rank count and mode the time per product of a loop of
  products and its speedup over one rank measured the same way;
* the model's inputs of each run (device bandwidth reached by the 1-rank kernel, staging and
  network bandwidth, latency).

* one product's timeline per rank (the bench's ``timeline``): when each OpenCL command kind and
  each host wait ran.

The figures (efficiency against the ranks, one product per rank) are
:mod:`.distributed_plots`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .common import (
    DASH,
    Rec,
    matrices_by_size,
    num,
    of,
    short_device,
    table,
    unique,
)

OPERATION = "distributed"

INTRO = (
    "`mpiexec -n N clspmv bench --distributed`: the rows of the matrix in contiguous blocks over "
    "N MPI ranks, one OpenCL device each (`clspmv.distributed`, pjds-multigpu.txt section 3); "
    "modes `vector` (exchange, then the product), `overlap` (non-blocking exchange during the "
    "local part) and `task` (a host thread drives the exchange). Time per product: every rank "
    "waits at a barrier, runs the product on vectors resident on its device and waits for its "
    "queue; a product takes the slowest rank's time; median over the repeats. `× 1 rank`: the "
    "time of the same code, mode, format and device on one rank (measured in the same run by "
    "rank 0 alone on a sub-communicator of size 1; a 1-rank run is its own reference) / this "
    "time; `eff.` = that speedup / N. `model`: the paper's model (code balance + staging + "
    "network terms, `clspmv.distributed.model`) with the device bandwidth the 1-rank local kernel "
    "reached and the staging and network figures probed in the same run; in brackets its error "
    "(predicted − measured) / measured.")

PARTS_INTRO = (
    "Each part: per rank the median over the products, then the largest rank's (ms). `staging`: "
    "host ↔ device copies of the exchanged values; `gather`: host time filling the send buffer; "
    "`exchange`: start to completion of the messages (in `task` mode on its own thread, beside "
    "the local kernel); `imbalance`: the largest rank's kernel time / the ranks' mean; bytes "
    "per product: sent and received by the busiest rank, and sent by all ranks together.")


STREAM_INTRO = (
    "Products back to back: every rank waits at a barrier, runs `--repeat` products without "
    "waiting for its queue between them, then waits for it; the slowest rank's time / repeat, "
    "median of 3 rounds, and the same on one rank (same run) / this. What a loop of products "
    "costs: the host enqueues the next product while the device computes, which one product "
    "alone (the table above: its host enqueueing and the wait for its queue included) cannot "
    "hide. `model`: the model's time without the host's share of one product (the table "
    "above adds it: the 1-rank reference's time less the model's device time for it).")

TIMELINE_INTRO = (
    "One product of each run, per rank (its `timeline` field says which): for each kind of "
    "OpenCL command (from its profiling times, placed on the host's clock) and for the host's "
    "wait for the exchange, "
    "its first start–last stop in ms since the rank's product began, and in brackets the time "
    "it was busy (lengths added) and how many there were. Copies down (device → window or send "
    "buffer) and up (→ halo) overlapping each other and the local kernel is what `overlap` and "
    "`task` are for.")
TIMELINE_STEPS = (("device", "gather"), ("device", "local"), ("device", "copy down"),
                  ("device", "copy up"), ("host", "wait"), ("device", "non_local"))
"""The steps of a product the timeline table and figure show, in order."""

TIMELINE_PNG = "_timeline.png"
"""The end of the timeline figure's name: ``distributed_<dtype>_timeline.png`` (under the
``distributed_*.png`` pattern of the report's plots)."""


def passed(r: Rec) -> bool:
    return r["status"] == "ok"


def modes_of(recs: list[Rec]) -> list[str]:
    order = ("vector", "overlap", "task")
    present = unique(r.get("mode") for r in recs if r.get("mode"))
    return [m for m in order if m in present] + [m for m in present if m not in order]


def _pct(value: Any) -> str:
    return DASH if value is None else f"{100 * value:.0f}%"


def _model(r: Rec, prefix: str = "") -> str:
    """The model's prediction and its error: of one product, or (``prefix`` ``"stream_"``) of
    one back to back."""
    predicted = r.get(f"predicted_{prefix}ms")
    if predicted is None:
        return DASH
    err = r.get(f"{prefix}model_error_pct")
    return num(predicted, ".3f") + ("" if err is None else f" ({err:+.0f}%)")


def _bytes(value: Any) -> str:
    if value is None:
        return DASH
    if value >= 2**20:
        return f"{value / 2**20:.1f} MiB"
    return f"{value / 2**10:.1f} KiB" if value >= 2**10 else f"{value} B"


def _groups(recs: list[Rec]) -> list[tuple[str, str, str, list[Rec]]]:
    out = []
    for device in unique(r["device"] for r in recs):
        for dtype in unique(r["dtype"] for r in recs if r["device"] == device):
            for fmt in unique(r["format"] for r in recs
                              if r["device"] == device and r["dtype"] == dtype):
                here = [r for r in recs if r["device"] == device and r["dtype"] == dtype
                        and r["format"] == fmt]
                out.append((device, dtype, fmt, here))
    return out


def _pick(here: list[Rec], matrix: str, ranks: int, mode: str) -> Rec | None:
    return next((r for r in here if r["matrix"] == matrix and r.get("ranks") == ranks
                 and r.get("mode") == mode), None)


def _matrix_ranks(here: list[Rec]) -> Iterator[tuple[str, int]]:
    """Each matrix (smallest first) and each rank count it was run on, in the tables' order."""
    for m in matrices_by_size(here):
        for n in sorted({r.get("ranks") or 0 for r in here if r["matrix"] == m}):
            yield m, n


def _passed_runs(here: list[Rec]) -> Iterator[tuple[str, int, str, Rec]]:
    """(matrix, ranks, mode, record) of every run that passed, in the tables' order."""
    for m, n in _matrix_ranks(here):
        for mode in modes_of(here):
            r = _pick(here, m, n, mode)
            if r is not None and passed(r):
                yield m, n, mode, r


def _mode_table(here: list[Rec], columns: tuple[str, ...],
                cells: Callable[[Rec | None], list[str]]) -> str:
    """Per matrix and rank count, ``columns`` per mode filled by ``cells(record or None)``;
    rows whose cells are all dashes are left out (empty without any row)."""
    modes = modes_of(here)
    rows = []
    for m, n in _matrix_ranks(here):
        row = [m, str(n)]
        for mode in modes:
            row += cells(_pick(here, m, n, mode))
        if any(cell != DASH for cell in row[2:]):
            rows.append(row)
    headers = ["matrix", "ranks"] + [f"{mode} {c}" for mode in modes for c in columns]
    return table(rows, headers) if rows else ""


def scaling_table(here: list[Rec]) -> str:
    """Per matrix and rank count, for each mode one product's time, its speedup over one rank,
    the parallel efficiency and the model's prediction."""
    def cells(r: Rec | None) -> list[str]:
        if r is None:
            return ["", "", "", ""]
        if not passed(r):
            return [r["status"], DASH, DASH, DASH]
        return [num(r.get("kernel_ms"), ".3f"), num(r.get("speedup_over_one"), ".2f"),
                _pct(r.get("efficiency")), _model(r)]
    return _mode_table(here, ("ms", "× 1 rank", "eff.", "model ms (err)"), cells)


def stream_table(here: list[Rec]) -> str:
    """Per matrix and rank count, for each mode the time per product back to back, its
    speedup over one rank measured the same way and the model's (empty for records without
    it)."""
    def cells(r: Rec | None) -> list[str]:
        if r is None or not passed(r) or r.get("stream_ms") is None:
            return [DASH, DASH, DASH]
        return [num(r.get("stream_ms"), ".3f"), num(r.get("stream_speedup_over_one"), ".2f"),
                _model(r, "stream_")]
    return _mode_table(here, ("ms", "× 1 rank", "model ms (err)"), cells)


def parts_table(here: list[Rec]) -> str:
    rows = [[m, str(n), mode, num(r.get("kernel_ms"), ".3f"),
             *[num(r.get(f"{p}_ms"), ".3f") for p in
               ("local", "non_local", "staging", "gather", "communication")],
             num(r.get("imbalance"), ".2f"), _bytes(r.get("bytes_sent")),
             _bytes(r.get("bytes_received")), _bytes(r.get("bytes_exchanged"))]
            for m, n, mode, r in _passed_runs(here)]
    return table(rows, ["matrix", "ranks", "mode", "product", "local", "non-local", "staging",
                        "gather", "exchange", "imbalance", "sent / rank", "received / rank",
                        "sent, all ranks"])


def model_table(here: list[Rec]) -> str:
    """The model's inputs per matrix and rank count (the host's share of one product where the
    records hold it)."""
    host = any(r.get("host_overhead_us") is not None for r in here)
    rows = []
    for m, n in _matrix_ranks(here):
        r = next((r for r in here if r["matrix"] == m and r.get("ranks") == n and passed(r)
                  and r.get("predicted_ms") is not None), None)
        if r is None:
            continue
        rows.append([m, str(n), num(r.get("model_device_gbps"), ".2f"),
                     num(r.get("probed_copy_gbps"), ".1f"), num(r.get("staging_gbps"), ".1f"),
                     num(r.get("network_gbps"), ".2f"), num(r.get("latency_us"), ".1f"),
                     num(r.get("launch_us"), ".1f"),
                     *([num(r.get("host_overhead_us"), ".1f")] if host else []),
                     r.get("reference") or DASH])
    return table(rows, ["matrix", "ranks", "device GB/s (1-rank kernel)", "copy GB/s (probe)",
                        "staging GB/s", "network GB/s", "latency µs", "launch µs",
                        *(["host µs / product"] if host else []), "1-rank reference"])


def step_of(rows: list[dict[str, Any]], where: str, name: str) -> dict[str, Any] | None:
    return next((row for row in rows if row["where"] == where and row["name"] == name), None)


def timeline_table(here: list[Rec]) -> str:
    """Per matrix, rank count (> 1), mode and rank: each of :data:`TIMELINE_STEPS`."""
    rows = []
    for m, n, mode, r in _passed_runs(here):
        if not r.get("timeline") or n < 2:
            continue
        for rank, steps in enumerate(r["timeline"]):
            cells = []
            for where, name in TIMELINE_STEPS:
                step = step_of(steps, where, name)
                cells.append(DASH if step is None else
                             f"{step['first']:.2f}–{step['last']:.2f} "
                             f"({step['busy']:.2f}, {step['count']})")
            rows.append([m, str(n), mode, str(rank), *cells])
    return table(rows, ["matrix", "ranks", "mode", "rank",
                        *[f"{name} ({where})" if where == "host" else name
                          for where, name in TIMELINE_STEPS]]) if rows else ""


def _titled(title: str, intro: str, body: str) -> list[str]:
    """The lines of a sub-section, none where ``body`` is empty."""
    return [f"#### {title}", "", intro, "", body, ""] if body else []


def _chosen(here: list[Rec], fmt: str) -> list[str]:
    """With ``format="auto"``: what the ranks chose, and how the rows were cut, per matrix."""
    if "auto" not in fmt:
        return []
    lines = []
    for m in matrices_by_size(here):
        r = next((r for r in here if r["matrix"] == m and passed(r)), None)
        if r is not None:
            lines.append(f"{m}: (local/non-local) per rank "
                         f"{', '.join(r.get('formats') or []) or DASH}; partition "
                         f"{r.get('partition') or DASH}.")
    return ["", "Formats chosen by auto: " + " ".join(lines)] if lines else []


def _advice(here: list[Rec]) -> list[str]:
    """The model's verdict per matrix and rank count (``clspmv.distributed.model
    .more_ranks_help``, recorded by the bench): whether more ranks are worth it."""
    lines = unique(f"- {r['matrix']}: {r['advice']}." for r in here
                   if passed(r) and r.get("advice"))
    return ["", "The model's advice (`clspmv.distributed.model.more_ranks_help`):", "",
            *lines] if lines else []


def section(records: list[Rec], plots: list[str] | str = "") -> str:
    """The section of the distributed records (empty without any)."""
    recs = of(records, OPERATION)
    if not recs:
        return ""
    drawn = ([p for p in plots if p.startswith("distributed_") and not p.endswith(TIMELINE_PNG)]
             if isinstance(plots, list) else [])
    traced = [p for p in plots if p.endswith(TIMELINE_PNG)] if isinstance(plots, list) else []
    out = ["## Distributed product (MPI, one device per rank)", "", INTRO + (
        f" Efficiency against the ranks: {', '.join(f'`{p}`' for p in drawn)}."
        if drawn else "") + (f" One product per rank: {', '.join(f'`{p}`' for p in traced)}."
                             if traced else ""), ""]
    for device, dtype, fmt, here in _groups(recs):
        devices = unique(d for r in here for d in r.get("devices") or [device])
        where = "; ".join(devices)
        out += [f"### {short_device(device)} — {dtype} — {fmt}", "",
                f"Devices: {where}.", *_chosen(here, fmt), *_advice(here), "",
                scaling_table(here), "",
                *_titled("Products back to back", STREAM_INTRO, stream_table(here)),
                "#### Where the time goes", "", PARTS_INTRO, "", parts_table(here), "",
                "#### The model's inputs", "", model_table(here), ""]
        out += _titled("One product, per rank", TIMELINE_INTRO, timeline_table(here))
    bad = [r for r in recs if not passed(r)]
    if bad:
        rows = unique((r["matrix"], r["method"], r["dtype"], r["status"], r.get("reason", ""))
                      for r in bad)
        out += ["#### Not measured", "",
                table([list(x) for x in rows], ["matrix", "case", "dtype", "status", "reason"]),
                ""]
    return "\n".join(out)
