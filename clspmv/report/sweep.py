"""The report section of ``clspmv bench --sweep`` (records with ``operation`` ``sweep``), shaped
like the tables of Ferez's OpenMP-vs-CUDA paper; present only when such records exist. A pure
function of the records, like :mod:`.tables`.

Per device and value type: GFLOP/s by work-items per row and by work-group size, the wins of each
unroll factor, ELLPACK row- against column-major, ``csr-adaptive`` by block and work-group size,
each matrix's fastest configuration and the best by geometric mean against the run's defaults
(recorded in its meta data, :func:`clspmv.bench.sweep.defaults`), and the configurations skipped,
failed or wrong (docs/benchmarks.md, "Kernel-parameter sweep").
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from ..bench.sweep import ADAPTIVE_FORMAT, OPERATION, Config, block_size, parse_label
from .common import DASH, Definitions, Rec, matrices_by_size, num, table, unique

INTRO = (
    "The kernel-parameter experiments of Ferez's “Sparse Matrix-Vector Product: OpenMP vs CUDA "
    "on Hybrid Platforms” (2023) (`clspmv bench --sweep`, grid in "
    "`clspmv/bench/sweep.py`): every configuration is one kernel of `csr.cl` or `ell.cl` built "
    "with its options (`-DWG`, `-DT`, `-DUNROLL`, `-DROW_MAJOR`), run on the same uploaded "
    "matrix, checked against scipy and timed like A x (kernel time from profiling events, "
    "median of the repeats). GFLOP/s = 2 nnz / kernel time. T: work-items per row (`csr-scalar` "
    "and `ellr` T = 1, `csr-vector` and `ellr-t` T > 1); wg: work-group size; rows per "
    "work-group = wg / T (the paper's 1D block: one row per work-group; 2D: several rows of "
    "several work-items); unroll: entries of a row per iteration of the inner loop, each into "
    "its own partial sum (the paper's horizontal unrolling); row / col: ELLPACK stored "
    "row-major (the paper's arrays \"not transposed\") or column-major (\"transposed\", "
    "clspmv's default). `csr-adaptive` (`csr_adaptive.cl`, `-DWG`, `-DCAP`) is converted "
    "again for each configuration, its partition into row blocks depending on both: T=0 (the "
    "work-items per row are chosen per row block), cap: its block size `block_entries`, `max` "
    "(the default: 8 float64 or 16 float32 entries a work-item, fewer where they would not fit "
    "half the local memory) or a fraction of it.")


def of_sweep(records: list[Rec]) -> list[Rec]:
    """The sweep's records."""
    return [r for r in records if r.get("operation") == OPERATION]


def _config(r: Rec) -> Config:
    return parse_label(r["method"])


def default_config(r: Rec, defaults: dict[str, Any]) -> Config:
    """The configuration of ``r``'s format, T and storage order with the run's ``defaults``
    (meta["settings"]["sweep"]["defaults"]): the format's default work-group size on ``r``'s
    kind of device, the default unroll factor; ``csr-adaptive`` the largest block size."""
    c = _config(r)
    wg = defaults["work_group"][r["format"]][r.get("device_type") or "cpu"]
    c = c._replace(work_group_size=wg, unroll=defaults["unroll"])
    return c._replace(block_divisor=1) if r["format"] == ADAPTIVE_FORMAT else c


def defaults_sentence(defaults: dict[str, Any]) -> str:
    """``wg 256, unroll 1; on GPUs csr-scalar: wg 32, ...; csr-adaptive cap=max``."""
    sizes = defaults["work_group"]
    common = Counter(wg for kinds in sizes.values() for wg in kinds.values()).most_common(1)
    base = common[0][0] if common else DASH
    parts = [f"wg {base}, unroll {defaults['unroll']}"]
    for kind in ("cpu", "gpu"):
        other = [f"{f}: wg {kinds[kind]}" for f, kinds in sizes.items() if kinds[kind] != base]
        if other:
            parts.append(f"on {kind.upper()}s {', '.join(other)}")
    parts.append(f"{ADAPTIVE_FORMAT} cap={defaults['adaptive_block']}")
    return "; ".join(parts)


def _ok(records: list[Rec]) -> list[Rec]:
    return [r for r in records if r["status"] == "ok" and r.get("gflops")]


def _best(records: list[Rec]) -> Rec | None:
    ok = _ok(records)
    return max(ok, key=lambda r: r["gflops"]) if ok else None


def _cell(r: Rec | None, note: str = "") -> str:
    if r is None:
        return DASH
    return f"{num(r['gflops'])} ({note})" if note else num(r["gflops"])


def section(records: list[Rec], defs: Definitions) -> str:
    """The whole sweep section ("" without sweep records)."""
    recs = of_sweep(records)
    if not recs:
        return ""
    out = ["## Kernel-parameter sweep", "", INTRO, ""]
    for device in unique(r["device"] for r in recs):
        for dtype in unique(r["dtype"] for r in recs if r["device"] == device):
            here = [r for r in recs if r["device"] == device and r["dtype"] == dtype]
            out += [f"### {device} — {dtype}", "", device_tables(here, defs.sweep_defaults)]
    out += [problems(recs)]
    return "\n".join(out)


def device_tables(here: list[Rec], defaults: dict[str, Any]) -> str:
    """Every table of one device and value type."""
    matrices = matrices_by_size(here)
    parts = [
        "Work-items per row, CSR (unroll 1): GFLOP/s, in brackets the best work-group size.", "",
        threads_table(here, matrices), "",
        "Work-group size, CSR (unroll 1): GFLOP/s of the best T, in brackets T and the rows per "
        "work-group.", "", work_group_table(here, matrices), "",
        "Unrolling (the paper's Table 2): for each work-group size, on how many cases (matrix x "
        "kernel) each unroll factor was the fastest.", "", unroll_table(here), "",
        "ELLPACK-R row- against column-major (the paper's Table 3), GFLOP/s at the best "
        "work-group size (unroll 1).", "", ell_order_table(here, matrices), "",
        "csr-adaptive: GFLOP/s by block size and work-group size, the fastest of each matrix in "
        "bold.", "", adaptive_table(here, matrices), "",
        "Fastest configuration per matrix, against the same format, T and storage order with "
        f"the defaults of the run ({defaults_sentence(defaults)}).", "",
        best_table(here, matrices, defaults), "",
        "Findings: per format and storage order, the configuration with the best geometric "
        "mean GFLOP/s over the matrices where every configuration compared ran, against the "
        "defaults with the same T.", "", findings_table(here, defaults), ""]
    return "\n".join(parts)


def _csr(here: list[Rec], unroll: int = 1) -> list[Rec]:
    """csr-scalar and csr-vector (the ``threads`` experiment's kernels) at ``unroll``."""
    return [r for r in here if r["format"] in ("csr-scalar", "csr-vector")
            and _config(r).unroll == unroll]


def threads_table(here: list[Rec], matrices: list[str]) -> str:
    csr = _csr(here)
    threads = sorted({_config(r).threads for r in csr})
    rows = []
    for m in matrices:
        row: list[Any] = [m]
        for t in threads:
            b = _best([r for r in csr if r["matrix"] == m and _config(r).threads == t])
            row.append(_cell(b, f"wg {_config(b).work_group_size}" if b else ""))
        rows.append(row)
    return table(rows, ["matrix", *(f"T={t}" for t in threads)])


def work_group_table(here: list[Rec], matrices: list[str]) -> str:
    csr = _csr(here)
    sizes = sorted({_config(r).work_group_size for r in csr})
    rows = []
    for m in matrices:
        row: list[Any] = [m]
        for wg in sizes:
            b = _best([r for r in csr if r["matrix"] == m and _config(r).work_group_size == wg])
            if b is None:
                row.append(DASH)
            else:
                t = _config(b).threads
                row.append(_cell(b, f"T={t}, {wg // t} rows"))
        rows.append(row)
    return table(rows, ["matrix", *(f"wg {wg}" for wg in sizes)])


def _kernel(r: Rec) -> tuple[str, int, str]:
    c = _config(r)
    return (r["format"], c.threads, c.order)


def unroll_table(here: list[Rec]) -> str:
    """Rows: unroll factors; columns: work-group sizes; cells: cases where it was fastest."""
    cases: dict[tuple[str, tuple[str, int, str], int], list[Rec]] = {}
    for r in _ok(here):
        cases.setdefault((r["matrix"], _kernel(r), _config(r).work_group_size), []).append(r)
    # a case counts where more than one unroll factor ran (the unroll experiment's kernels)
    cases = {k: v for k, v in cases.items() if len({_config(r).unroll for r in v}) > 1}
    if not cases:
        return "No unrolled configuration ran."
    unrolls = sorted({_config(r).unroll for v in cases.values() for r in v})
    sizes = sorted({k[2] for k in cases})
    counts = {(u, wg): 0 for u in unrolls for wg in sizes}
    for (_, _, wg), recs in cases.items():
        counts[(_config(max(recs, key=lambda r: r["gflops"])).unroll, wg)] += 1
    kernels = sorted({f"{k[1][0]} T={k[1][1]} {k[1][2]}" for k in cases})
    rows = [[f"unroll {u}", *(counts[(u, wg)] for wg in sizes)] for u in unrolls]
    rows.append(["cases", *(sum(1 for k in cases if k[2] == wg) for wg in sizes)])
    return (table([[str(c) for c in row] for row in rows], ["", *(f"wg {wg}" for wg in sizes)])
            + f"\n\nKernels: {', '.join(kernels)}.")


def ell_order_table(here: list[Rec], matrices: list[str]) -> str:
    ell = [r for r in here if r["format"].startswith("ellr") and _config(r).unroll == 1]
    if not ell:
        return "No ELLPACK-R configuration ran."
    headers = ["matrix", "row-major: 1 work-item", "row-major: best 1 row / work-group",
               "row-major: best 2D", "column-major: 1 work-item", "column-major: best T > 1",
               "best"]
    rows = []
    for m in matrices:
        mine = [r for r in ell if r["matrix"] == m]
        if not mine:
            continue

        def pick(order: str, test, mine: list[Rec] = mine) -> Rec | None:
            return _best([r for r in mine if _config(r).order == order
                          and test(*_config(r)[:2])])

        cols = {
            "row-major: 1 work-item": pick("row", lambda t, wg: t == 1),
            "row-major: best 1 row / work-group": pick("row", lambda t, wg: t == wg),
            "row-major: best 2D": pick("row", lambda t, wg: 1 < t < wg),
            "column-major: 1 work-item": pick("col", lambda t, wg: t == 1),
            "column-major: best T > 1": pick("col", lambda t, wg: t > 1),
        }
        winner = max(((k, r) for k, r in cols.items() if r is not None),
                     key=lambda kr: kr[1]["gflops"], default=None)
        if winner is None:
            rows.append([m, *([DASH] * 5), "none ran (see the skipped configurations)"])
            continue
        rows.append([m, *(_cell(r, f"T={_config(r).threads}, wg {_config(r).work_group_size}")
                          if r is not None and k.endswith(("best 2D", "T > 1"))
                          else _cell(r, f"wg {_config(r).work_group_size}") if r is not None
                          else DASH
                          for k, r in cols.items()), winner[0]])
    return table(rows, headers)


def adaptive_table(here: list[Rec], matrices: list[str]) -> str:
    """Rows: each matrix at each block size; columns: work-group sizes; the matrix's fastest
    configuration in bold."""
    recs = [r for r in here if r["format"] == ADAPTIVE_FORMAT]
    if not recs:
        return "No csr-adaptive configuration ran."
    sizes = sorted({_config(r).work_group_size for r in recs})
    divisors = sorted({_config(r).block_divisor for r in recs})
    rows = []
    for m in matrices:
        mine = [r for r in recs if r["matrix"] == m]
        if not mine:
            continue
        best = _best(mine)
        for d in divisors:
            cells = []
            for wg in sizes:
                r = _best([r for r in mine if _config(r).work_group_size == wg
                           and _config(r).block_divisor == d])
                cells.append(DASH if r is None else f"**{num(r['gflops'])}**" if r is best
                             else num(r["gflops"]))
            rows.append([m, block_size(d), *cells])
    return table(rows, ["matrix", "block", *(f"wg {wg}" for wg in sizes)])


def _default_of(r: Rec, recs: list[Rec], defaults: dict[str, Any]) -> Rec | None:
    default = default_config(r, defaults)
    return next((d for d in _ok(recs) if d["format"] == r["format"]
                 and _config(d) == default), None)


def best_table(here: list[Rec], matrices: list[str], defaults: dict[str, Any]) -> str:
    rows = []
    for m in matrices:
        mine = [r for r in here if r["matrix"] == m]
        b = _best(mine)
        if b is None:
            continue
        d = _default_of(b, mine, defaults)
        rows.append([m, b["format"], b["method"], num(b["gflops"]),
                     num(b.get("pct_copy_bw"), ".1f"),
                     f"{b['gflops'] / d['gflops']:.2f}×" if d else DASH])
    return table(rows, ["matrix", "format", "configuration", "GFLOP/s", "% copy BW",
                        "vs defaults"]) if rows else "No configuration ran."


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def findings_table(here: list[Rec], defaults: dict[str, Any]) -> str:
    rows = []
    for fmt in unique(r["format"] for r in here):
        for order in unique(_config(r).order for r in here if r["format"] == fmt):
            recs = [r for r in here if r["format"] == fmt and _config(r).order == order]
            by_config: dict[str, dict[str, float]] = {}
            for r in _ok(recs):
                by_config.setdefault(r["method"], {})[r["matrix"]] = r["gflops"]
            matrices = set.intersection(*(set(v) for v in by_config.values())) \
                if by_config else set()
            if not matrices:
                continue
            means = {c: _geomean([v[m] for m in matrices]) for c, v in by_config.items()}
            best = max(means, key=means.__getitem__)
            default = default_config({**recs[0], "method": best}, defaults).label
            ratio = (f"{means[best] / means[default]:.2f}×" if default in means else DASH)
            rows.append([fmt, order if fmt.startswith("ell") else DASH, best,
                         num(means[best]), ratio, len(matrices)])
    return table(rows, ["format", "storage", "best configuration", "geo-mean GFLOP/s",
                        "vs defaults", "matrices"]) if rows else "No configuration ran."


def problems(recs: list[Rec]) -> str:
    """Configurations skipped, failed or wrong: one row per device, format, status and reason."""
    bad = [r for r in recs if r["status"] != "ok"]
    if not bad:
        return ""
    groups: dict[tuple[str, ...], list[Rec]] = {}
    for r in bad:
        groups.setdefault((r["device"].split(" (")[0], r["format"], r["status"],
                           r.get("reason", "")), []).append(r)
    rows = [[*key[:3], len(v), ", ".join(unique(f"{r['matrix']} {r['dtype']}" for r in v)),
             key[3]] for key, v in groups.items()]
    return "\n".join(["### Sweep configurations skipped, failed or wrong", "",
                      table([[str(c) for c in row] for row in rows],
                            ["device", "format", "status", "configurations", "matrices",
                             "reason"]), ""])
