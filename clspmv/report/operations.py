"""The report sections of the operations beyond A x (``clspmv bench --transpose``, ``--matmat``,
``--solver``), each present only when such records exist. Pure functions of the records, like
:mod:`.tables`.

* Transpose products: per device and value type, A x against A^T x by the atomic kernel and by
  the transposed copy (kernel times and ratios), the copy's one-time cost and memory, one
  product from the stored matrix against the cost per product over many (the naive-SpMV paper's
  Fig. 3), the break-even count; then every device's fastest A^T x against scipy, MKL and
  cuSPARSE, for many products and for a single one.
* Several right-hand sides: GFLOP/s against k per format and order (in brackets the speed-up
  over k separate products), and the baselines'; the plot is ``matmat_<dtype>.png``.
* Solvers: time per iteration on each device and format against scipy's on the host.
"""

from __future__ import annotations

from typing import Any

from .common import (
    DASH,
    Definitions,
    Rec,
    matrices_by_size,
    num,
    of,
    short_device,
    speedup,
    table,
    unique,
)
from .distributed import section as distributed_section
from .selection import section as selection_section
from .sweep import section as sweep_section


def _ok(r: Rec | None) -> bool:
    return r is not None and r["status"] == "ok"


def _ms(r: Rec | None, field: str = "kernel_ms", spec: str = ".3f") -> str:
    if r is None:
        return ""
    return num(r.get(field), spec) if _ok(r) else r["status"]


def _ratio(value: Any) -> str:
    return DASH if value is None else f"{value:.2f}×"


def _fastest(records: list[Rec], field: str) -> Rec | None:
    ok = [r for r in records if _ok(r) and r.get(field) is not None]
    return min(ok, key=lambda r: r[field]) if ok else None


def _by_format(records: list[Rec]) -> list[str]:
    """Format names in order of first appearance."""
    return unique(r["format"] for r in records)


# -- transpose ------------------------------------------------------------------------------------
TRANSPOSE_INTRO = (
    "A^T x by the two methods of `rmatvec` (Steinberger, Derler, Zayer, Seidel: “How naive is "
    "naive SpMV on the GPU?”, HPEC 2016): `atomic`, the format's "
    "transpose kernel (atomic adds into y, no extra memory), and `copy`, the forward kernel of a "
    "transposed copy built once by `prepare_transpose()` (download, transposition on the host, "
    "upload; kernels compiled before it is timed). Kernel times in ms, in brackets the ratio to "
    "A x of the same format. As in the paper's Fig. 3, `1 product` is the whole operation from "
    "the stored matrix (copy: build + one product) and `per product over N` the cost when N "
    "products share one copy; `break-even`: products after which the copy beats the atomic "
    "kernel (`never`: it is not faster per product).")


def transpose_section(records: list[Rec], defs: Definitions) -> str:
    trans = of(records, "transpose")
    if not trans:
        return ""
    spmv = of(records, "spmv")
    fmts = [r for r in trans if r["kind"] == "format"]
    out = ["## Transpose products", "", TRANSPOSE_INTRO, ""]
    for device in unique(r["device"] for r in fmts):
        for dtype in unique(r["dtype"] for r in fmts if r["device"] == device):
            here = [r for r in fmts if r["device"] == device and r["dtype"] == dtype]
            direct = [r for r in spmv if r["device"] == device and r["dtype"] == dtype
                      and r["kind"] == "format"]
            out += [f"### {device} — {dtype}", "", transpose_table(here, direct), ""]
    out += transpose_baselines(trans, spmv, defs)
    return "\n".join(out)


def transpose_table(here: list[Rec], direct: list[Rec]) -> str:
    over = unique(r.get("amortised_over") for r in here if r.get("amortised_over"))
    n = over[0] if len(over) == 1 else "N"
    rows = []
    for m in matrices_by_size(here):
        for fmt in _by_format([r for r in here if r["matrix"] == m]):
            pick = {r.get("method"): r for r in here if r["matrix"] == m and r["format"] == fmt}
            atomic, copy = pick.get("atomic"), pick.get("transpose")
            ax = next((r for r in direct if r["matrix"] == m and r["format"] == fmt), None)
            rows.append([
                m, fmt, _ms(ax),
                _with_ratio(atomic), _with_ratio(copy),
                _ms(copy, "one_time_ms", ".1f"),
                num(copy["extra_bytes"] / 2**20, ".1f")
                if _ok(copy) and copy.get("extra_bytes") is not None else DASH,
                f"{_ms(atomic, 'single_ms')} / {_ms(copy, 'single_ms')}",
                f"{_ms(atomic, 'amortised_ms')} / {_ms(copy, 'amortised_ms')}",
                _breakeven(copy),
            ])
    return table(rows, ["matrix", "format", "A x", "A^T x atomic", "A^T x copy",
                        "copy build ms", "copy MiB", "1 product: atomic / copy",
                        f"per product over {n}: atomic / copy", "break-even"])


def _with_ratio(r: Rec | None) -> str:
    if not _ok(r):
        return r["status"] if r else ""
    return f"{num(r.get('kernel_ms'), '.3f')} ({_ratio(r.get('ratio_to_spmv'))})"


def _breakeven(r: Rec | None) -> str:
    if not _ok(r):
        return DASH
    n = r.get("breakeven_products")
    return "never" if n is None else str(n)


def transpose_baselines(trans: list[Rec], spmv: list[Rec], defs: Definitions) -> list[str]:
    base = [r for r in trans if r["kind"] == "baseline"]
    fmts = [r for r in trans if r["kind"] == "format"]
    out = []
    for dtype in unique(r["dtype"] for r in trans):
        here = [r for r in base if r["dtype"] == defs.baseline_dtype(dtype)]
        names = [b for b in defs.baselines if any(r["format"] == b for r in here)]
        if names and dtype != defs.mixed:  # mixed's are float32's, shown there
            rows = []
            for m in matrices_by_size(here):
                row = [m]
                for b in names:
                    r = next((r for r in here if r["matrix"] == m and r["format"] == b), None)
                    row += [_ms(r), _ratio(r.get("ratio_to_spmv")) if _ok(r) else DASH]
                rows.append(row)
            headers = ["matrix"] + [h for b in names for h in (f"{b} A^T x ms", "÷ its A x")]
            where = "; ".join(unique(f"{r['format']}: {r['device']}" + (
                f" ({r['params']})" if r.get("params") else "") for r in here if _ok(r)))
            out += [f"### Baselines — {dtype}", "", f"Where and how: {where or 'none ran'}.",
                    "", table(rows, headers), ""]
        out += fastest_transpose(fmts, here, dtype, defs)
    return out


def fastest_transpose(fmts: list[Rec], base: list[Rec], dtype: str, defs: Definitions
                      ) -> list[str]:
    """Each device's fastest A^T x (many products; one product) against each baseline."""
    here = [r for r in fmts if r["dtype"] == dtype]
    names = [b for b in defs.baselines if any(r["format"] == b and _ok(r) for r in base)]
    rows = []
    for m in matrices_by_size(here):
        for device in unique(r["device"] for r in here if r["matrix"] == m):
            mine = [r for r in here if r["matrix"] == m and r["device"] == device]
            many, once = _fastest(mine, "kernel_ms"), _fastest(mine, "single_ms")
            if many is None:
                continue
            row = [m, short_device(device), _label(many), num(many["kernel_ms"], ".3f")]
            row += [num(speedup(many, b), ".2f") for b in names]
            row += [_label(once), num(once["single_ms"], ".3f")]
            for b in names:
                r = next((r for r in base if r["matrix"] == m and r["format"] == b), None)
                row.append(num(r["single_ms"] / once["single_ms"], ".2f")
                           if _ok(r) and r.get("single_ms") else DASH)
            rows.append(row)
    if not rows:
        return []
    headers = (["matrix", "device", "fastest A^T x", "ms"] + [f"× {b}" for b in names]
               + ["fastest single A^T x", "ms (with copy build)"]
               + [f"× {b} (single)" for b in names])
    return [f"### Fastest A^T x per device — {dtype}", "",
            "`× X`: baseline X's A^T x time / this time; `single`: one product from the stored "
            "matrix, the copy's build included (the baselines need none).", "",
            table(rows, headers), ""]


def _label(r: Rec) -> str:
    return f"{r['format']} {'copy' if r.get('method') == 'transpose' else r.get('method', '')}"


# -- several right-hand sides ---------------------------------------------------------------------
MATMAT_INTRO = (
    "GFLOP/s of A X = 2 nnz k / kernel time for X and Y of k columns, row-major (C) or "
    "column-major (F); in brackets the speed-up over k separate products of A x by the same "
    "format or baseline (k × its A x time / this time). `block`: the format's block kernel; "
    "`columns`: one product per column (formats without a block kernel); k = 1 is the plain "
    "product.")


def matmat_section(records: list[Rec], plots: list[str] | str = "") -> str:
    mm = of(records, "matmat")
    if not mm:
        return ""
    drawn = [p for p in plots if p.startswith("matmat_")] if isinstance(plots, list) else []
    out = ["## Several right-hand sides", "", MATMAT_INTRO + (
        f" Plotted against k in {', '.join(f'`{p}`' for p in drawn)}." if drawn else ""), ""]
    fmts = [r for r in mm if r["kind"] == "format"]
    for device in unique(r["device"] for r in fmts):
        for dtype in unique(r["dtype"] for r in fmts if r["device"] == device):
            here = [r for r in fmts if r["device"] == device and r["dtype"] == dtype]
            out += [f"### {device} — {dtype}", "", matmat_table(here), ""]
    base = [r for r in mm if r["kind"] == "baseline"]
    for dtype in unique(r["dtype"] for r in base):
        here = [r for r in base if r["dtype"] == dtype]
        where = "; ".join(unique(f"{r['format']}: {r['device']}" + (
            f" ({r['params']})" if r.get("params") else "") for r in here if _ok(r)))
        out += [f"### Baselines — {dtype}", "", f"Where and how: {where or 'none ran'}.", "",
                matmat_table(here), ""]
    return "\n".join(out)


def matmat_table(here: list[Rec]) -> str:
    ks = sorted({r["k"] for r in here if r.get("k")})
    rows = []
    for m in matrices_by_size(here):
        for fmt in _by_format([r for r in here if r["matrix"] == m]):
            for order in unique(r["order"] for r in here if r["matrix"] == m
                                 and r["format"] == fmt):
                pick = {r["k"]: r for r in here if r["matrix"] == m and r["format"] == fmt
                        and r["order"] == order}
                methods = unique(r.get("method") for r in pick.values()
                                  if r.get("method") not in ("", "spmv"))
                row = [m, fmt + (f" ({', '.join(methods)})" if methods else ""), order]
                for k in ks:
                    r = pick.get(k)
                    if r is None:
                        row.append("")
                    elif not _ok(r):
                        row.append(r["status"])
                    else:
                        ratio = r.get("ratio_to_spmv")
                        row.append(f"{num(r.get('gflops'))}" + (
                            f" ({1 / ratio:.2f}×)" if ratio else ""))
                rows.append(row)
    return table(rows, ["matrix", "format", "order", *[f"k={k}" for k in ks]])


# -- solvers --------------------------------------------------------------------------------------
SOLVER_INTRO = (
    "Wall time per iteration of a fixed number of iterations (rtol = atol = 0), b = A x for "
    "the run's random x: clspmv's solver with every vector on the device (one residual norm "
    "read back per iteration) against scipy's on the host with the same iterations. `÷ A x`: "
    "an iteration's time in products of the same format; `× scipy`: scipy's time per "
    "iteration / this one; residuals |b − A x| / |b| after the last iteration.")


def solver_section(records: list[Rec], defs: Definitions) -> str:
    """Per value type: each format's time per iteration, against every baseline that ran the
    same solver (its time, the speedup over it and its residual)."""
    sol = of(records, "solver")
    if not sol:
        return ""
    out = ["## Solvers", "", SOLVER_INTRO, ""]
    for dtype in unique(r["dtype"] for r in sol):
        here = defs.with_baselines(sol, dtype)
        names = [b for b in defs.baselines if any(r["format"] == b for r in here)]
        rows = []
        for m in matrices_by_size(here):
            for method in unique(r["method"] for r in here if r["matrix"] == m):
                mine = [r for r in here if r["matrix"] == m and r["method"] == method]
                base = {b: next((r for r in mine if r["format"] == b), None) for b in names}
                for r in mine:
                    if r["kind"] != "format":
                        continue
                    row = [m, short_device(r["device"]), r["format"], method,
                           str(r.get("iterations") or DASH), _ms(r, "ms_per_iteration"),
                           _ratio(r.get("ratio_to_spmv")) if _ok(r) else DASH]
                    for b in names:
                        row += [_ms(base[b], "ms_per_iteration") if base[b] else DASH,
                                num(speedup(r, b), ".2f") if _ok(r) else DASH]
                    row.append(num(r.get("residual"), ".2e"))
                    row += [num((base[b] or {}).get("residual"), ".2e") for b in names]
                    rows.append(row)
        headers = ["matrix", "device", "format", "solver", "iterations", "ms / iteration",
                   "÷ A x", *[h for b in names for h in (f"{b} ms / iteration", f"× {b}")],
                   "residual", *[f"{b} residual" for b in names]]
        out += [f"### {dtype}", "", table(rows, headers), ""]
    return "\n".join(out)


def problems_section(records: list[Rec]) -> str:
    """Records of the other operations that did not run well, with the reason: one row per
    device, format, operation and reason, naming the matrices and value types concerned (the
    sweep lists its own, :mod:`.sweep`)."""
    bad = [r for r in records if r.get("operation", "spmv") not in ("spmv", "sweep",
                                                                   "distributed")
           and r["status"] != "ok"]
    if not bad:
        return ""
    groups: dict[tuple[str, ...], list[Rec]] = {}
    for r in bad:
        key = (short_device(r["device"]), r["format"],
               f"{r['operation']} {r.get('method') or ''}".strip(), r["status"],
               r.get("reason", ""))
        groups.setdefault(key, []).append(r)
    rows = [[*key[:4], ", ".join(unique(f"{r['matrix']} {r['dtype']}" for r in recs)),
             key[4]] for key, recs in groups.items()]
    return "\n".join(["## Other operations skipped, failed, wrong or absent", "",
                      table(rows, ["device", "format", "operation", "status",
                                   "matrices", "reason"]), ""])


def sections(records: list[Rec], defs: Definitions, plots: list[str] | str = "") -> list[str]:
    """The sections of the operations that have records, in order."""
    parts = [transpose_section(records, defs), matmat_section(records, plots),
             solver_section(records, defs), selection_section(records, defs),
             sweep_section(records, defs), distributed_section(records, plots),
             problems_section(records)]
    return [p for p in parts if p]
