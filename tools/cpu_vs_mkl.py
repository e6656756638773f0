"""The fastest clspmv format against MKL at its best, side by side in one process (issue 44).

Per matrix, from a numpy x to a numpy y (float64 by default, MKL on ``--threads`` threads):

1. every format is converted in turn (``DeviceMatrix.from_scipy(A, format=f)``), checked against
   scipy and timed alone (``--search-rounds`` products after a warm-up); the ``--finalists``
   fastest are kept;
2. ``--rounds`` alternating rounds, each one product of every contestant in a rotating order:
   the finalists, ``format="auto"`` (default arguments), MKL's optimised handle
   (``mkl_sparse_set_mv_hint`` + ``mkl_sparse_optimize``, :mod:`clspmv.bench.mkl_optimised`),
   MKL's plain handle (sparse_dot_mkl's, the bench's ``mkl`` baseline) and scipy. The medians
   of the rounds give the ratios; the fastest format is the finalist, or auto's matrix (a
   format too), of least median there;
3. MKL's optimised handle timed alone, ``--rounds`` products in a row with Intel OpenMP's
   default blocktime (:data:`MKL_BLOCKTIME_ALONE_MS`): "× MKL optimised in a row" is its median
   there over the fastest format's median alone (step 1), both with the caches warm from the
   products before.

In the rounds MKL's OpenMP threads sleep as soon as a call ends (:data:`MKL_BLOCKTIME_ROUNDS_MS`,
as ``KMP_BLOCKTIME=0``): by default they spin for 200 ms after each call, on the cores the next
contestant's product needs, and on the GPU node's 16-core Xeon under PoCL 5.0 that made
clspmv's products in the rounds 2-7x slower than the same products in a row
(``reports/experiments/2026-11-28-node-cpu-pocl50``).

A slow phase of a shared machine thus falls on all contestants alike; absolute times still need a
quiet machine. One command writes a report folder (report.md, whose header holds the command,
and results.json with every sample)::

    python tools/cpu_vs_mkl.py --suite cpu --suite real --device 1:0 --threads 2 \\
        --out reports/2026-11-28-cpu-2core-xeon-mkl-optimised
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import clspmv
from clspmv.bench import baselines, openmp
from clspmv.bench.errors import classify
from clspmv.bench.metadata import device_meta, git_info, thread_pools, versions
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import suite
from clspmv.canonical import canonical_csr
from clspmv.report.runs import thread_pools_text

WARMUP = 3
"""Untimed products of each contestant before its timed ones (the first builds kernels)."""
BOUND_C = 2.0
"""Per-row error bound C (len_i + 1) eps (|A| |x|)_i, as the tests' oracle."""
MKL_BLOCKTIME_ROUNDS_MS = 0
"""Intel OpenMP's blocktime (``kmp_set_blocktime``, as ``KMP_BLOCKTIME``) in the rounds: MKL's
threads sleep as soon as a call ends instead of spinning into the next contestant's product."""
MKL_BLOCKTIME_ALONE_MS = openmp.DEFAULT_BLOCKTIME_MS
"""MKL's optimised handle timed alone after the rounds with Intel OpenMP's default blocktime, its
threads spinning between calls as they do by default (its best in a loop of products)."""


def geomean(values: list[float]) -> float:
    """The geometric mean (NaN of none)."""
    return float(np.exp(np.mean(np.log(values)))) if values else float("nan")


def rows_within_bound(y: np.ndarray, A: sp.csr_matrix, x: np.ndarray) -> bool:
    """Whether every row of ``y`` is within the per-row bound of scipy's ``A @ x``."""
    wide = np.longdouble
    ref = A.astype(wide) @ x.astype(wide)
    mag = abs(A).astype(wide) @ np.abs(x).astype(wide)
    finfo = np.finfo(A.dtype)
    bound = BOUND_C * (np.diff(A.indptr) + 1) * (finfo.eps * mag + finfo.tiny)
    return bool(np.all(np.abs(np.asarray(y, wide) - ref) <= bound))


def wall_ms(call, count: int) -> list[float]:
    """Milliseconds of ``count`` calls of ``call``, one by one."""
    out = []
    for _ in range(count):
        t0 = time.perf_counter_ns()
        call()
        out.append((time.perf_counter_ns() - t0) / 1e6)
    return out


def search(A: sp.csr_matrix, x: np.ndarray, device: clspmv.Device, formats: list[str],
           rounds: int) -> tuple[dict[str, float], dict[str, str]]:
    """(format -> median ms of ``rounds`` products alone, format -> why it did not run)."""
    times, skipped = {}, {}
    for f in formats:
        try:
            M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=device)
            y = M.matvec(x)
        except Exception as err:  # classify re-raises programming errors
            skipped[f] = "{}: {}".format(*classify(err, "converting"))
            continue
        if rows_within_bound(y, A, x):
            wall_ms(lambda M=M: M.matvec(x), WARMUP)
            times[f] = float(np.median(wall_ms(lambda M=M: M.matvec(x), rounds)))
        else:
            skipped[f] = "wrong: a row outside the error bound of scipy's product"
        del M  # freed before the next format is converted
    return times, skipped


def side_by_side(calls: dict[str, object], rounds: int) -> dict[str, list[float]]:
    """Milliseconds of each call in ``rounds`` rounds of one call each, the order rotating by one
    every round, after :data:`WARMUP` untimed rounds."""
    names = list(calls)
    samples: dict[str, list[float]] = {n: [] for n in names}
    for r in range(-WARMUP, rounds):
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            t0 = time.perf_counter_ns()
            calls[name]()
            if r >= 0:
                samples[name].append((time.perf_counter_ns() - t0) / 1e6)
    return samples


def measure(name: str, A: sp.csr_matrix, args: argparse.Namespace, device: clspmv.Device,
            mkl_module: object) -> dict:
    """One matrix's record: the search, the rounds' samples and medians, the ratios."""
    x = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(A.dtype)
    load_before = os.getloadavg()[0]
    searched, skipped, finalists, auto_format = {}, {}, [], None
    calls: dict[str, object] = {}
    if not args.mkl_only:
        searched, skipped = search(A, x, device, args.formats, args.search_rounds)
        finalists = sorted(searched, key=searched.get)[:args.finalists]
        for f in finalists:
            calls[f] = (lambda M: lambda: M.matvec(x))(
                clspmv.DeviceMatrix.from_scipy(A, format=f, device=device))
        auto = clspmv.DeviceMatrix.from_scipy(A, device=device)
        auto_format = auto.format
        calls["auto"] = lambda: auto.matvec(x)
    # the check, the rounds, the optimised handle alone, the settling product
    expected = 2 * (WARMUP + args.rounds) + 2
    optimised = OptimisedMkl(A, expected_calls=expected)
    out = np.empty(A.shape[0], A.dtype)
    calls["mkl-optimised"] = lambda: optimised.matvec(x, out)
    plain = baselines._MklProduct(mkl_module, A)  # the bench's "mkl" baseline, as it runs
    calls["mkl"] = lambda: plain(x)
    calls["scipy"] = lambda: A @ x
    try:
        with openmp.blocktime(MKL_BLOCKTIME_ROUNDS_MS):
            wrong = [n for n, c in calls.items() if not rows_within_bound(np.array(c()), A, x)]
            samples = side_by_side(calls, args.rounds)
        with openmp.blocktime(MKL_BLOCKTIME_ALONE_MS):
            wall_ms(calls["mkl-optimised"], WARMUP)
            samples["mkl-optimised-alone"] = wall_ms(calls["mkl-optimised"], args.rounds)
        openmp.settle(calls["mkl-optimised"])  # asleep before the next matrix's formats
    finally:
        optimised.close()
        plain.close()
    return {
        "matrix": name, "shape": list(A.shape), "nnz": int(A.nnz), "dtype": str(A.dtype),
        "search_ms": searched, "skipped": skipped, "finalists": finalists,
        "auto_format": auto_format, "mkl_hint_expected_calls": expected, "wrong": wrong,
        "samples_ms": samples, **summaries(samples, auto_format, searched),
        "load_average": [load_before, os.getloadavg()[0]],
    }


BASELINE_KEYS = ("mkl-optimised", "mkl-optimised-alone", "mkl", "scipy")
"""The contestants that are not clspmv formats."""


def summaries(samples: dict[str, list[float]], auto_format: str | None,
              searched: dict[str, float]) -> dict[str, dict]:
    """A record's ``median`` and ``minimum``: :func:`summary` of the rounds' medians and of
    their minima."""
    return {which: summary({n: float(stat(v)) for n, v in samples.items()}, auto_format,
                           searched)
            for which, stat in (("median", np.median), ("minimum", np.min))}


def summary(ms: dict[str, float], auto_format: str | None,
            searched: dict[str, float] | None = None) -> dict:
    """What hint + optimize buy, and with formats in ``ms`` (medians or minima of the rounds)
    the fastest among the finalists and auto's matrix, its time and the ratios (above 1: the
    fastest format is faster); where MKL optimised was also timed alone, the ratio in a row
    against the fastest of the formats timed alone (``searched``)."""
    out = {"ms": ms, "hint_optimize_speedup": ms["mkl"] / ms["mkl-optimised"],
           "scipy_over_optimised": ms["scipy"] / ms["mkl-optimised"]}
    formats = [n for n in ms if n not in BASELINE_KEYS]
    if not formats:  # --mkl-only
        return out
    fastest = min(formats, key=ms.get)
    if "mkl-optimised-alone" in ms and searched:
        alone = min(searched, key=searched.get)
        out.update(fastest_in_a_row=alone,
                   x_mkl_optimised_in_a_row=ms["mkl-optimised-alone"] / searched[alone])
    return {**out, "fastest": fastest,
            "fastest_format": auto_format if fastest == "auto" else fastest,
            "x_mkl_optimised": ms["mkl-optimised"] / ms[fastest],
            "x_mkl": ms["mkl"] / ms[fastest], "x_scipy": ms["scipy"] / ms[fastest],
            "x_mkl_best": min(ms["mkl"], ms["mkl-optimised"]) / ms[fastest],
            "auto_over_fastest": ms[fastest] / ms["auto"]}


def mkl_table(records: list[dict], which: str) -> list[str]:
    """MKL's plain and optimised handles alone (``--mkl-only``), from ``which`` of the rounds."""
    lines = ["| matrix | nnz | MKL plain ms | MKL optimised ms | plain ÷ optimised | scipy ÷ "
             "optimised | load avg |", "|" + "---|" * 7]
    for r in records:
        t = r[which]
        lines.append(f"| {r['matrix']} | {r['nnz'] / 1e6:.2f} M | {t['ms']['mkl']:.3f} | "
                     f"{t['ms']['mkl-optimised']:.3f} | {t['hint_optimize_speedup']:.2f} | "
                     f"{t['scipy_over_optimised']:.2f} | {r['load_average'][0]:.1f}–"
                     f"{r['load_average'][1]:.1f} |")
    g = {k: geomean([r[which][k] for r in records])
         for k in ("hint_optimize_speedup", "scipy_over_optimised")}
    lines.append(f"| geometric mean ({len(records)}) | | | | {g['hint_optimize_speedup']:.2f} | "
                 f"{g['scipy_over_optimised']:.2f} | |")
    return lines


RATIOS = ("x_mkl_optimised", "x_mkl", "x_mkl_best", "x_scipy", "auto_over_fastest",
          "hint_optimize_speedup")


def alone_text(ms: dict[str, float]) -> str:
    """``; alone`` and MKL optimised's time alone, where it was timed alone."""
    alone = ms.get("mkl-optimised-alone")
    return "" if alone is None else f"; alone {alone:.3f}"


def in_a_row_cell(t: dict) -> str:
    """The cell of the ratio in a row and its format (`` | `` first), where there is one."""
    if "x_mkl_optimised_in_a_row" not in t:
        return ""
    return f" | {t['x_mkl_optimised_in_a_row']:.2f} ({t['fastest_in_a_row']})"


def table(records: list[dict], which: str) -> list[str]:
    """The table of ``which`` (``median`` or ``minimum``) of the rounds, geometric means last;
    with the ratios in a row where MKL optimised was also timed alone."""
    row = bool(records) and "x_mkl_optimised_in_a_row" in records[0][which]
    head = ("| matrix | nnz | fastest | ms | × MKL optimised | "
            + ("× MKL optimised in a row | " if row else "")
            + "× MKL plain | × MKL best | "
            "× scipy | auto | auto speed ÷ fastest | MKL plain ÷ optimised (ms) | load avg |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in records:
        t = r[which]
        m = t["ms"]
        lines.append(
            f"| {r['matrix']} | {r['nnz'] / 1e6:.2f} M | {t['fastest_format']}"
            f"{' (auto)' if t['fastest'] == 'auto' else ''} | {m[t['fastest']]:.3f} "
            f"| {t['x_mkl_optimised']:.2f}{in_a_row_cell(t)} | {t['x_mkl']:.2f} "
            f"| {t['x_mkl_best']:.2f} "
            f"| {t['x_scipy']:.2f} "
            f"| {r['auto_format']} | {t['auto_over_fastest']:.2f} "
            f"| {t['hint_optimize_speedup']:.2f} ({m['mkl']:.3f} → {m['mkl-optimised']:.3f}"
            f"{alone_text(m)}) "
            f"| {r['load_average'][0]:.1f}–{r['load_average'][1]:.1f} |")
    g = {k: geomean([r[which][k] for r in records]) for k in RATIOS}
    worst = min((r[which]["x_mkl_optimised"] for r in records), default=float("nan"))
    in_row = ""
    if row:
        ratios = [r[which]["x_mkl_optimised_in_a_row"] for r in records]
        in_row = f" | {geomean(ratios):.2f} (worst {min(ratios):.2f})"
    lines.append(f"| geometric mean ({len(records)}) | | | | {g['x_mkl_optimised']:.2f} "
                 f"(worst {worst:.2f}){in_row} | {g['x_mkl']:.2f} | {g['x_mkl_best']:.2f} | "
                 f"{g['x_scipy']:.2f} | | "
                 f"{g['auto_over_fastest']:.2f} | {g['hint_optimize_speedup']:.2f} | |")
    return lines


def method(settings: dict) -> str:
    """The method paragraph of the report."""
    rounds = (f"{settings['rounds']} alternating rounds (order rotating), medians. Every time "
              "is numpy x in, numpy y out (clspmv: `M.matvec(x)`, a new y; MKL: into a "
              "preallocated y; scipy: `A @ x`).")
    blocktime = settings.get("mkl_blocktime")
    if blocktime:  # runs since the optimised handle is also timed alone
        rounds += (f" MKL's OpenMP blocktime in the rounds {blocktime['rounds_ms']} ms "
                   "(kmp_set_blocktime; by default its threads spin 200 ms after each call, "
                   "on the cores the next contestant needs). Then MKL optimised alone, as "
                   f"many products in a row with its default blocktime "
                   f"({blocktime['alone_ms']} ms): × MKL optimised in a row is its median there "
                   "÷ the fastest format's median alone (the search's products in a row), "
                   "both with the caches warm from the products before (the rounds leave them "
                   "cold: six contestants' matrices take turns).")
    if settings["mkl_only"]:
        return f"Method (--mkl-only): MKL optimised, MKL plain and scipy in {rounds}"
    return ("Method: per matrix, every format converted, checked against scipy and timed alone "
            f"({settings['search_rounds']} products from numpy x to numpy y); the "
            f"{settings['finalists']} fastest, `format=\"auto\"` (default arguments), MKL "
            f"optimised, MKL plain and scipy then in {rounds}")


def write_report(out: Path, meta: dict, records: list[dict]) -> None:
    """results.json and report.md (:func:`render`) in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"meta": meta, "records": records}, indent=1))
    (out / "report.md").write_text(render(meta, records))


def render_again(folder: Path) -> None:
    """``folder``'s results.json with each record's summaries made again from its samples (as
    :func:`measure` makes them now), and its report.md (:func:`write_report`)."""
    data = json.loads((folder / "results.json").read_text())
    for r in data["records"]:
        r.update(summaries(r["samples_ms"], r["auto_format"], r["search_ms"]))
    write_report(folder, data["meta"], data["records"])


def render(meta: dict, records: list[dict]) -> str:
    """The report.md of a run: a function of its results.json alone."""
    tabulate = mkl_table if meta["settings"]["mkl_only"] else table
    lines = [
        "# clspmv's fastest format against MKL at its best (issue 44)", "",
        f"Command: `{meta['command']}`", "",
        f"{meta['note']}" if meta["note"] else "",
        f"Started {meta['started']}, finished {meta['finished']}; host {meta['host']['cpu']} "
        f"({meta['host']['cores']} cores), load average at start {meta['load_average'][0]:.1f}; "
        f"device {meta['device']['label']} ({meta['device']['driver_version']}); "
        f"{meta['settings']['dtype']}; MKL {meta['versions'].get('mkl', '?')}.",
        f"Thread pools (threadpoolctl): {thread_pools_text(meta['thread_pools'])}.", "",
        method(meta["settings"]),
        "",
        "* **MKL optimised**: `mkl_sparse_?_create_csr`, `mkl_sparse_set_mv_hint("
        "SPARSE_OPERATION_NON_TRANSPOSE, general, expected_calls = the products the rounds run)`, "
        "`mkl_sparse_optimize`, then `mkl_sparse_?_mv` (ctypes on sparse_dot_mkl's libmkl_rt).",
        "* **MKL plain**: sparse_dot_mkl's handle (no hint, no optimize), `mkl_sparse_?_mv`: the "
        "bench's `mkl` baseline and the one earlier reports' \"× MKL\" used.",
        "* × X = X's median ÷ the fastest format's median (above 1: clspmv faster); the fastest "
        "format is the finalist or auto's matrix (marked \"(auto)\") of least median in the "
        "rounds; × MKL best: against the faster of MKL's two handles on that matrix (hint + "
        "optimize can make MKL slower: a few very long rows); auto speed ÷ fastest = fastest's "
        "median ÷ auto's; MKL plain ÷ optimised: what hint + optimize buy.",
        "", "## From the medians of the rounds (the figures to quote)", "",
        *tabulate(records, "median"), "",
        "## From the minima of the rounds (least disturbed by other load; a check, not a claim)",
        "", *tabulate(records, "minimum"), ""]
    skipped = [f"* {r['matrix']}: " + "; ".join(f"{f}: {why}" for f, why in r["skipped"].items())
               for r in records if r["skipped"]]
    wrong = [f"* {r['matrix']}: {', '.join(r['wrong'])}" for r in records if r["wrong"]]
    if wrong:
        lines += ["## Results outside the error bound (their times are not comparable)", "",
                  *wrong, ""]
    if skipped:
        lines += ["## Formats that did not run", "", *skipped, ""]
    if meta["not_run"]:
        lines += ["## Matrices not run", "", *(f"* {m}" for m in meta["not_run"]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("matrices", nargs="*", help="gen: specs, .mtx files or folders")
    parser.add_argument("--suite", action="append", default=[],
                        help="a clspmv.bench suite (repeatable; e.g. cpu, real)")
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    parser.add_argument("--threads", type=int, default=2, help="MKL's threads")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--search-rounds", type=int, default=5)
    parser.add_argument("--finalists", type=int, default=3)
    parser.add_argument("--formats", default=",".join(clspmv.FORMATS))
    parser.add_argument("--mkl-only", action="store_true",
                        help="MKL optimised, MKL plain and scipy only: what hint + optimize buy")
    parser.add_argument("--note", default="", help="a line for the report's header")
    parser.add_argument("--out", type=Path, help="the report folder to write")
    parser.add_argument("--render", type=Path, metavar="FOLDER",
                        help="measure nothing: the summaries of FOLDER's results.json made "
                        "again from its samples, and its report.md written again")
    args = parser.parse_args(argv)
    if args.render:
        render_again(args.render)
        return 0
    if args.out is None:
        parser.error("the report folder to write: --out FOLDER")
    args.formats = args.formats.split(",")
    specs = list(args.matrices) + [s for name in args.suite for s in suite(name)]
    if not specs:
        parser.error("name matrices or a --suite")
    device = clspmv.select_device(args.device)
    mkl_module, _, _ = baselines.mkl_threads_set(args.threads)  # before the pools are read
    meta = {
        "tool": "tools/cpu_vs_mkl.py",
        "command": shlex.join(["python", "tools/cpu_vs_mkl.py", *(argv or sys.argv[1:])]),
        "note": args.note, "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "finished": None, "load_average": list(os.getloadavg()),
        "host": {"cpu": baselines.host_cpu(), "cores": os.cpu_count()},
        "thread_pools": thread_pools(), "versions": versions(), "git": git_info(),
        "device": device_meta(device),
        "settings": {"dtype": args.dtype, "threads": args.threads, "rounds": args.rounds,
                     "search_rounds": args.search_rounds, "finalists": args.finalists,
                     "mkl_only": args.mkl_only,
                     "mkl_blocktime": {"rounds_ms": MKL_BLOCKTIME_ROUNDS_MS,
                                       "alone_ms": MKL_BLOCKTIME_ALONE_MS},
                     "formats": args.formats, "matrices": specs},
        "not_run": [],
    }
    records = []
    for source in resolve_all(specs, progress=False):
        A = canonical_csr(source.load(), np.dtype(args.dtype))
        try:
            record = measure(source.name, A, args, device, mkl_module)
        except MemoryError as err:
            meta["not_run"].append(f"{source.name}: out of memory ({err})")
        else:
            records.append(record)
            print(json.dumps({k: v for k, v in record.items()
                              if k not in ("samples_ms", "search_ms")}), file=sys.stderr)
        meta["finished"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
        write_report(args.out, meta, records)  # after each matrix: an interrupted run keeps it
    return 0


if __name__ == "__main__":
    sys.exit(main())
