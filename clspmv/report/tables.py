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

from collections.abc import Iterable
from typing import Any

from tabulate import tabulate

from ..bench.records import BASELINES
from ..matrix import FORMATS
from ..stats import COLUMNS as TABLE_I_COLUMNS
from ..stats import format_table

Rec = dict[str, Any]
DASH = "—"
MIXED = "mixed"
"""The dtype of records with float32 values summed in float64; compared with float32's
baselines."""
MIXED_NOTE = ("`mixed`: float32 values, x and y with every sum in float64 "
              "(`DeviceMatrix.from_scipy(A, dtype=\"mixed\")`). Its baselines are the float32 "
              "ones (scipy, MKL, cuSPARSE in float32, same matrix and x): `× X` is X's float32 "
              "time / the mixed kernel time.")


def baseline_dtype(dtype: str) -> str:
    """The dtype of the baseline records a format's records of ``dtype`` are compared with."""
    return "float32" if dtype == MIXED else dtype


def with_baselines(records: list[Rec], dtype: str) -> list[Rec]:
    """The records of ``dtype``; for mixed also the float32 baseline records it is compared
    with."""
    return [r for r in records if r["dtype"] == dtype or (
        dtype == MIXED and r.get("kind") == "baseline" and r["dtype"] == baseline_dtype(dtype))]


# -- small helpers -------------------------------------------------------------------------------
def num(value: Any, spec: str = ".2f") -> str:
    """``value`` formatted with ``spec``, or a dash for a missing value."""
    if value is None:
        return DASH
    return format(value, spec)


def table(rows: list[list[Any]], headers: list[str]) -> str:
    """A GitHub-flavoured Markdown table of already formatted cells."""
    return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)


def _unique(values: Iterable[Any]) -> list[Any]:
    return list(dict.fromkeys(values))


def matrices_by_size(records: list[Rec]) -> list[str]:
    """Matrix names ordered by number of entries, then name."""
    sizes = {r["matrix"]: r["nnz"] for r in records}
    return sorted(sizes, key=lambda m: (sizes[m], m))


def spmv_records(records: list[Rec]) -> list[Rec]:
    """The A x records (those of runs older than the other operations are all A x)."""
    return [r for r in records if r.get("operation", "spmv") == "spmv"]


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


# -- sections ------------------------------------------------------------------------------------
def runs_section(metas: list[dict[str, Any]]) -> str:
    out = []
    for i, meta in enumerate(metas, 1):
        host = meta.get("host", {})
        git = meta.get("git") or {}
        commit = git.get("commit", "not a git checkout")
        if git.get("modified"):
            commit += " (with local changes)"
        versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
        title = f"### Run {i}" if len(metas) > 1 else "### Run"
        out += [title, "", "Command (exactly as run):", "", "```", meta.get("command", "?"),
                "```", "",
                f"- host: {host.get('name', '?')}, {host.get('cpu', '?')}, "
                f"{host.get('cores', '?')} cores, {host.get('os', '?')}",
                f"- started {meta.get('started', '?')}, finished {meta.get('finished') or '?'}"
                + (" — **interrupted**: the results are partial" if meta.get("interrupted")
                   else ""),
                f"- git commit: {commit}", f"- versions: {versions}"]
        if meta.get("note"):
            out.append(f"- note: {meta['note']}")
        settings = meta.get("settings", {})
        out.append(f"- settings: suite {settings.get('suite')}, formats {settings.get('formats')}"
                   f", dtypes {settings.get('dtypes')}, baselines {settings.get('baselines')}, "
                   f"repeat {settings.get('repeat')}, warm-up {settings.get('warmup')}, "
                   f"MKL threads {settings.get('mkl_threads') or 'MKL default'}"
                   + _operations_setting(settings))
        if meta.get("not_run"):
            out.append(f"- not run: {'; '.join(meta['not_run'])}")
        out += ["", devices_table(meta.get("devices", [])), ""]
    return "\n".join(out)


def _operations_setting(settings: dict[str, Any]) -> str:
    """', also: ...' naming the operations a run measured besides A x (none: empty)."""
    parts = []
    if settings.get("transpose"):
        parts.append(f"A^T x (copy amortised over {settings.get('amortised_over')} products)")
    if settings.get("matmat"):
        parts.append(f"A X for k = {', '.join(map(str, settings['matmat']))}")
    if settings.get("solvers"):
        parts.append(f"{', '.join(settings['solvers'])} "
                     f"({settings.get('solver_iterations')} iterations)")
    if settings.get("sweep"):
        parts.append(f"the kernel-parameter sweep ({settings['sweep'].get('variants')} "
                     "configurations)")
    return f"; also {', '.join(parts)}" if parts else ""


def devices_table(devices: list[dict[str, Any]]) -> str:
    rows = []
    for d in devices:
        bw = d.get("bandwidth") or {}
        over = (bw.get("buffer_bytes", 0) / d["cache_bytes"]) if d.get("cache_bytes") else None
        rows.append([d["label"], d["type"], d.get("driver_version", ""), d.get("compute_units"),
                     num(d.get("cache_bytes", 0) / 2**20, ".0f"),
                     num(bw.get("copy_gbps"), ".1f") + (f" ({bw['copy_variant']})" if bw else ""),
                     num(bw.get("read_gbps"), ".1f") + (f" ({bw['read_variant']})" if bw else ""),
                     num(bw.get("buffer_bytes", 0) / 2**20, ".0f") if bw else DASH,
                     num(over, ".1f")])
    return table(rows, ["device", "type", "driver", "CUs", "cache MiB", "copy GB/s (best)",
                        "read GB/s (best)", "buffer MiB", "buffer/cache"])


def method_section(metas: list[dict[str, Any]]) -> str:
    formulas = metas[0].get("formulas", {}) if metas else {}
    lines = ["## How the numbers are made", "",
             "- Kernel time: OpenCL profiling events of each product (start to end of every "
             "kernel of the product, summed), after warm-up products, with x and y on the "
             "device: median of the repeats (min and max are in results.json). cuSPARSE: CUDA "
             "events around each product, so both GPU times are kernel-only. scipy and MKL: "
             "the host wall clock of the call (x and y are in host memory anyway).",
             "- Wall time: one product from a numpy x to a numpy y, including the host→device "
             "copy of x and the device→host copy of y (the PCIe transfer scenario of the pJDS "
             "paper, pjds-multigpu.txt §2.2).",
             "- Conversion: host layout from canonical CSR (numpy) plus upload; kernel "
             "compilation excluded. Break-even: the single-product scenario of the naive-SpMV "
             "paper (naive-spmv-transpose.txt) generalised to n products against csr-scalar.",
             "- Every product is checked against scipy in float64; a format above the error "
             "bound is marked `wrong` and never counted as best.",
             "- `cache`: the matrix's minimum bytes fit in the device's last-level cache "
             "(reported by the driver), so its % of DRAM copy bandwidth can exceed 100.", ""]
    lines += [f"- `{k}` = {v}" for k, v in formulas.items()]
    return "\n".join(lines)


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


def best_table(recs: list[Rec], matrices: list[str]) -> str:
    rows = []
    for m in matrices:
        b = best([r for r in recs if r["matrix"] == m])
        if b is None:
            rows.append([m, "none ran"] + [""] * 13)
            continue
        rows.append([
            m, b["format"], num(b["kernel_ms"], ".3f"),
            f"{num(b.get('kernel_ms_min'), '.3f')}–{num(b.get('kernel_ms_max'), '.3f')}",
            num(b.get("gflops")), num(b.get("gbps"), ".1f"), num(b.get("pct_copy_bw"), ".0f"),
            "cache" if b.get("fits_cache") else "", num(b.get("wall_ms"), ".3f"),
            num(b.get("conversion_ms"), ".1f"), _breakeven(b),
            num((b.get("device_bytes") or 0) / 2**20, ".1f"),
            num(b.get("reduction_vs_ell_pct"), ".1f"),
            *[num(b.get(f"speedup_vs_{x}"), ".2f") for x in BASELINES]])
    return table(rows, ["matrix", "best", "kernel ms", "min–max", "GFLOP/s", "GB/s",
                        "% copy BW", "cache", "wall ms", "conv. ms", "break-even", "MiB",
                        "% less than ELL", *[f"× {x}" for x in BASELINES]])


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


def device_sections(records: list[Rec]) -> str:
    recs = format_records(records)
    out = []
    for device in _unique(r["device"] for r in recs):
        for dtype in _unique(r["dtype"] for r in recs if r["device"] == device):
            here = [r for r in recs if r["device"] == device and r["dtype"] == dtype]
            matrices = matrices_by_size(here)
            present = set(r["format"] for r in here)
            formats = [f for f in FORMATS if f in present] + sorted(present - set(FORMATS))
            out += [f"## {device} — {dtype}", "",
                    *([MIXED_NOTE, ""] if dtype == MIXED else []),
                    "### GFLOP/s per format (best in bold)", "",
                    gflops_table(here, matrices, formats), "",
                    "### Best format per matrix", "",
                    "Times in ms; `× X` is the speedup over baseline X (X's time / this "
                    "kernel time); `% less than ELL` is the memory saved against plain "
                    "ELLPACK (pJDS paper, Table 1).", "",
                    best_table(here, matrices), "",
                    "### Conversion ms / break-even products vs csr-scalar", "",
                    conversion_table(here, matrices, formats), "",
                    "### Device memory MiB (in brackets: change against plain ELLPACK on "
                    "this device; −: smaller)", "",
                    memory_table(here, matrices, formats), ""]
    return "\n".join(out)


def baselines_section(records: list[Rec]) -> str:
    base = baseline_records(records)
    if not base:
        return "## Baselines\n\nNo baseline was run."
    out = ["## Baselines", ""]
    for dtype in _unique(r["dtype"] for r in base):
        here = [r for r in base if r["dtype"] == dtype]
        names = [b for b in BASELINES if any(r["format"] == b for r in here)]
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
        devices = "; ".join(_unique(f"{r['format']}: {r['device']}" for r in here
                                    if r["status"] == "ok"))
        out += [f"### {dtype}", "", f"Where: {devices or 'none ran'}.", "",
                table(rows, ["matrix", *names]), ""]
    return "\n".join(out)


def speedup_section(records: list[Rec]) -> str:
    """Per dtype: the best format of every device against every baseline that ran."""
    recs = format_records(records)
    out = ["## Speedup of each device's best format over the baselines", "",
           "Kernel time of the baseline / kernel time of the device's best format, same "
           "matrix, value type and run. `absent`: the baseline could not run (see below).", ""]
    for dtype in _unique(r["dtype"] for r in recs):
        here = [r for r in recs if r["dtype"] == dtype]
        devices = _unique(r["device"] for r in here)
        ran = {b for b in BASELINES for r in baseline_records(records)
               if r["format"] == b and r["dtype"] == baseline_dtype(dtype)
               and r["status"] == "ok"}
        names = [b for b in BASELINES if b in ran]
        note = [MIXED_NOTE, ""] if dtype == MIXED else []
        if not names:
            out += [f"### {dtype}", "", *note, "No baseline ran.", ""]
            continue
        headers = ["matrix"] + [f"{short_device(d)} × {b}" for d in devices for b in names]
        rows = []
        for m in matrices_by_size(here):
            row = [m]
            for d in devices:
                b = best([r for r in here if r["matrix"] == m and r["device"] == d])
                for name in names:
                    row.append(num(b.get(f"speedup_vs_{name}") if b else None, ".2f"))
            rows.append(row)
        out += [f"### {dtype}", "", *note, table(rows, headers), ""]
    return "\n".join(out)


def mixed_section(records: list[Rec]) -> str:
    """What mixed precision buys: per device and matrix, its best time and its error next to
    float32's (and float64's where it ran). Empty without mixed records."""
    recs = format_records(records)
    if not any(r["dtype"] == MIXED for r in recs):
        return ""
    out = ["## Mixed precision: float32 values, float64 sums", "", MIXED_NOTE, "",
           "`max rel. error` = max |y − y_ref| / max |y_ref| of the checked product, y_ref "
           "the float64 product of the stored values (for float32 and mixed the same float32 "
           "values and x), worst over the formats that ran; `time` is the best format's "
           "kernel time; `mixed / float32` its ratio (above 1: mixed is slower).", ""]
    dtypes = ("float32", MIXED, "float64")
    for device in _unique(r["device"] for r in recs if r["dtype"] == MIXED):
        here = [r for r in recs if r["device"] == device and r["dtype"] in dtypes]
        rows = []
        for m in matrices_by_size([r for r in here if r["dtype"] == MIXED]):
            by = {d: [r for r in here if r["matrix"] == m and r["dtype"] == d] for d in dtypes}
            winners = {d: best(by[d]) for d in dtypes}
            errors = {d: _worst_error(by[d]) for d in dtypes}
            w32, wmix = winners["float32"], winners[MIXED]
            ratio = (wmix["kernel_ms"] / w32["kernel_ms"]) if w32 and wmix else None
            rows.append([m, *[_winner(winners[d]) for d in ("float32", MIXED)],
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


def crossover_section(records: list[Rec]) -> str:
    """CPU vs GPU by number of entries (openmp-vs-cuda.txt): best of each kind per matrix."""
    out = ["## CPU vs GPU crossover by number of entries", "",
           "Best kernel time on any CPU (PoCL formats, scipy, MKL) against the best on any GPU "
           "(OpenCL formats, cuSPARSE), matrices in order of entries, as in the OpenMP-vs-CUDA "
           "paper (openmp-vs-cuda.txt). `GPU wall` adds the PCIe copies of x and y.", ""]
    records = spmv_records(records)
    for dtype in _unique(r["dtype"] for r in records):
        here = [r for r in records if r["dtype"] == dtype and r["status"] == "ok"]
        if not any(r["device_type"] == "gpu" for r in here) or not any(
                r["device_type"] == "cpu" for r in here):
            kinds = sorted({r["device_type"].upper() for r in here}) or ["no"]
            out += [f"### {dtype}", "", f"Only {', '.join(kinds)} results: no crossover to "
                    "show.", ""]
            continue
        rows, gpu_wins = [], []
        for m in matrices_by_size(here):
            cpu = best([r for r in here if r["matrix"] == m and r["device_type"] == "cpu"])
            gpu = best([r for r in here if r["matrix"] == m and r["device_type"] == "gpu"])
            if cpu is None or gpu is None:
                continue
            ratio = cpu["kernel_ms"] / gpu["kernel_ms"]
            gpu_wins.append((cpu["nnz"], ratio > 1))
            rows.append([m, str(cpu["nnz"]), f"{short_device(cpu['device'])} {cpu['format']}",
                         num(cpu["kernel_ms"], ".3f"),
                         f"{short_device(gpu['device'])} {gpu['format']}",
                         num(gpu["kernel_ms"], ".3f"), num(gpu.get("wall_ms"), ".3f"),
                         num(ratio, ".2f"), "GPU" if ratio > 1 else "CPU"])
        out += [f"### {dtype}", "", table(rows, ["matrix", "entries", "best CPU", "CPU ms",
                                                 "best GPU", "GPU ms", "GPU wall ms",
                                                 "CPU/GPU time", "faster"]), "",
                crossover_sentence(gpu_wins), ""]
    return "\n".join(out)


def crossover_sentence(gpu_wins: list[tuple[int, bool]]) -> str:
    """Where the GPU starts to win for good, from (entries, GPU faster) pairs sorted by size."""
    if not gpu_wins:
        return "No matrix ran on both a CPU and a GPU."
    if all(win for _, win in gpu_wins):
        return f"The GPU is faster on every matrix (from {gpu_wins[0][0]} entries up)."
    if not any(win for _, win in gpu_wins):
        return "The CPU is faster on every matrix."
    last_cpu = max(i for i, (_, win) in enumerate(gpu_wins) if not win)
    if last_cpu == len(gpu_wins) - 1:
        return ("The CPU is faster on the largest matrix: no crossover in this size range "
                f"(the GPU wins on {sum(w for _, w in gpu_wins)} of {len(gpu_wins)}).")
    return (f"Crossover: the GPU is faster on every matrix from {gpu_wins[last_cpu + 1][0]} "
            f"entries up; the CPU wins at {gpu_wins[last_cpu][0]} entries.")


def problems_section(records: list[Rec]) -> str:
    bad = [r for r in format_records(records) if r["status"] not in ("ok",)]
    rows = [[r["matrix"], r["device"], r["format"], r["dtype"], r["status"], r.get("reason", "")]
            for r in bad]
    out = ["## Formats skipped, failed or wrong", ""]
    out.append(table(rows, ["matrix", "device", "format", "dtype", "status", "reason"])
               if rows else "None.")
    absent = [r for r in baseline_records(records) if r["status"] != "ok"]
    out += ["", "## Baselines absent", ""]
    reasons = _unique((r["format"], r["status"], r.get("reason", "")) for r in absent)
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
    """The whole report.md for ``records`` of the runs described by ``metas``.

    ``plots`` lists the PNG files written beside report.md, or is a sentence saying why there
    are none.
    """
    parts = ["# clspmv benchmark report", "",
             f"{len(records)} records from {len(metas)} run{'s' if len(metas) != 1 else ''}.",
             "", "## Runs", "", runs_section(metas), method_section(metas), ""]
    if records:
        from .operations import sections

        mixed = mixed_section(records)
        parts += [matrices_section(records), "", device_sections(records),
                  baselines_section(records), "", speedup_section(records),
                  *([mixed] if mixed else []), crossover_section(records),
                  *sections(records, plots), problems_section(records), ""]
    parts.append(plots_section(plots))
    return "\n".join(parts).rstrip() + "\n"
