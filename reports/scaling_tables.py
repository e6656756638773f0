"""The tables of reports/scaling.sh that the bench's own report has no place for (issue 45):

    python3 reports/scaling_tables.py weak OUT.md RESULTS.json...   weak scaling per mode
    python3 reports/scaling_tables.py cg OUT.md RECORD.json...      CG's ms per iteration

weak: the bench records of one matrix family (the generator) at 1, 2, 4 ranks, the problem
grown with the ranks; efficiency at N ranks = t(1 rank, its size) / t(N ranks, N times that).
cg: reports/scaling_cg.py's records; x 1 rank = the 1-rank record's ms per iteration (same
matrix) / this one's. Each table's header lists the commands of its runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _family(matrix: str) -> str:
    parts = matrix.split(":")
    return parts[1] if parts[0] == "gen" and len(parts) > 1 else matrix


def weak(out: Path, files: list[str]) -> None:
    commands, records = [], []
    for name in files:
        data = json.loads(Path(name).read_text())
        meta = data["meta"]  # one run's, or merged runs' (clspmv report)
        commands += [run["command"] for run in meta.get("runs", [meta])]
        records += [r for r in data["records"] if r.get("operation") == "distributed"]
    ranks = sorted({r["ranks"] for r in records})
    modes = list(dict.fromkeys(r["mode"] for r in records))
    lines = ["# Weak scaling (reports/scaling.sh)", "", "Commands:", "",
             *[f"    {c}" for c in commands], "",
             "ms per product (the slowest rank's median); eff. = t(1 rank) / t(N ranks), the "
             "matrix N times as large on N ranks; then the same for products back to back "
             "(the bench's stream_ms), where recorded.", "",
             "| matrix | mode | " + " | ".join(f"{n} ranks: matrix, ms, eff." for n in ranks)
             + " |", "|---|---|" + "---|" * len(ranks)]
    for family in dict.fromkeys(_family(r["matrix"]) for r in records):
        for mode in modes:
            mine = {r["ranks"]: r for r in records
                    if _family(r["matrix"]) == family and r["mode"] == mode}
            base = mine.get(1)
            cells = []
            for n in ranks:
                r = mine.get(n)
                if r is None or r["status"] != "ok" or not r.get("kernel_ms"):
                    cells.append("–" if r is None else r["status"])
                    continue
                cell = (f"{r['matrix'].removeprefix('gen:')}, {r['kernel_ms']:.3f}, "
                        f"{_efficiency(base, r, 'kernel_ms')}")
                if r.get("stream_ms"):
                    cell += (f"; back to back {r['stream_ms']:.3f}, "
                             f"{_efficiency(base, r, 'stream_ms')}")
                cells.append(cell)
            lines.append(f"| {family} | {mode} | " + " | ".join(cells) + " |")
    out.write_text("\n".join(lines) + "\n")


def _efficiency(base: dict | None, r: dict, key: str) -> str:
    """t(1 rank) / t(N ranks) of ``key``, as a percentage ("–" without the 1-rank time)."""
    if base is None or not base.get(key):
        return "–"
    return f"{100 * base[key] / r[key]:.0f}%"


def cg(out: Path, files: list[str]) -> None:
    records = [json.loads(Path(name).read_text()) for name in files]
    lines = ["# Distributed CG, ms per iteration (reports/scaling.sh)", "", "Commands:", "",
             *[f"    {r['command']}" for r in records], "",
             "| matrix | exchange | ranks | mode | ms / iteration | × 1 rank | residual check |",
             "|---|---|---|---|---|---|---|"]
    ones = {r["matrix"]: r["ms_per_iteration"] for r in records if r["ranks"] == 1}
    for r in sorted(records, key=lambda r: (r["matrix"], r["ranks"])):
        one = ones.get(r["matrix"])
        speedup = f"{one / r['ms_per_iteration']:.2f}" if one else "–"
        lines.append(f"| {r['matrix']} | {'+'.join(dict.fromkeys(r['exchange']))} | "
                     f"{r['ranks']} | {r['mode']} | {r['ms_per_iteration']:.3f} | {speedup} | "
                     f"{r['residual_check']} |")
    out.write_text("\n".join(lines) + "\n")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] not in ("weak", "cg"):
        print(__doc__, file=sys.stderr)
        return 2
    (weak if argv[0] == "weak" else cg)(Path(argv[1]), argv[2:])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
