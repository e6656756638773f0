"""The runs section of report.md (exact commands, hosts, which code ran, settings, devices and
their measured bandwidth) and the section saying how the numbers are made, both from the runs'
meta data alone."""

from __future__ import annotations

from typing import Any

from ..bench.methodology import cite
from .common import DASH, Definitions, num, table


def runs_section(metas: list[dict[str, Any]]) -> str:
    out = []
    for i, meta in enumerate(metas, 1):
        host = meta.get("host", {})
        commit = _source(meta)
        versions = ", ".join(f"{k} {v}" for k, v in meta.get("versions", {}).items())
        title = f"### Run {i}" if len(metas) > 1 else "### Run"
        out += [title, "", "Command (exactly as run):", "", "```", meta.get("command", "?"),
                "```", "",
                f"- host: {host.get('name', '?')}, {host.get('cpu', '?')}, "
                f"{host.get('cores', '?')} cores, {host.get('os', '?')}",
                f"- started {meta.get('started', '?')}, finished {meta.get('finished') or '?'}"
                + (" — **interrupted**: the results are partial" if meta.get("interrupted")
                   else ""),
                f"- code: {commit}", f"- versions: {versions}"]
        if meta.get("note"):
            out.append(f"- note: {meta['note']}")
        if "thread_pools" in meta:  # older runs did not record them
            out.append(f"- thread pools (threadpoolctl): {thread_pools_text(meta['thread_pools'])}")
        settings = meta.get("settings", {})
        suite = _plain(settings.get("suite"), "none (matrices named on the command line)")
        out.append(f"- settings: suite {suite}"
                   f"; formats {_plain(settings.get('formats'))}"
                   f"; value types {_plain(settings.get('dtypes'))}"
                   f"; baselines {_plain(settings.get('baselines'))}"
                   f"; repeat {settings.get('repeat')}, warm-up {settings.get('warmup')}"
                   f"; MKL threads {settings.get('mkl_threads') or 'MKL default'}"
                   + _operations_setting(settings))
        if meta.get("not_run"):
            out.append(f"- not run: {'; '.join(meta['not_run'])}")
        out += ["", devices_table(meta.get("devices", [])), ""]
    return "\n".join(out)


def thread_pools_text(pools: list[dict[str, Any]] | str) -> str:
    """The native thread pools a run recorded (:func:`clspmv.bench.metadata.thread_pools`), e.g.
    ``mkl 2026.2 (libmkl_rt, intel): 2 threads``; or why it could not (a sentence)."""
    if isinstance(pools, str):
        return pools
    parts = []
    for pool in pools:
        name = " ".join(str(pool[k]) for k in ("internal_api", "version") if pool.get(k))
        where = ", ".join(str(pool[k]) for k in ("prefix", "threading_layer") if pool.get(k))
        threads = pool.get("num_threads", "?")
        parts.append(f"{name or '?'}{f' ({where})' if where else ''}: {threads} "
                     f"thread{'' if threads == 1 else 's'}")
    return "; ".join(parts) or "none loaded"


def _plain(value: Any, none: str = "none") -> str:
    """A setting as plain text: a list comma-separated, None as ``none``."""
    if value is None:
        return none
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def _source(meta: dict[str, Any]) -> str:
    """Which code ran: the git commit of the checkout, or the installed package's version."""
    git = meta.get("git") or {}
    version = (meta.get("versions") or {}).get("clspmv", "?")
    if not git.get("commit"):
        return f"clspmv {version} (installed package, or a copy without .git: no git commit known)"
    text = f"git commit {git['commit']}" + (" (with local changes)" if git.get("modified")
                                           else "")
    if git.get("installed"):
        text += (f" of the checkout {git.get('checkout')}; clspmv {version} ran from an "
                 "installed package, which may differ from it")
    return text


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


def method_section(metas: list[dict[str, Any]], defs: Definitions) -> str:
    """How the numbers are made: the methodology and formulas the first run recorded."""
    formulas = metas[0].get("formulas", {}) if metas else {}
    lines = ["## How the numbers are made", "", *[f"- {cite(line)}" for line in defs.method],
             ""]
    lines += [f"- `{k}` = {cite(v)}" for k, v in formulas.items()]
    return "\n".join(lines)
