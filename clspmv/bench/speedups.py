"""Numbers that compare records: speedups over the baselines and break-even counts."""

from __future__ import annotations

import math

from .records import Record

REFERENCE_FORMAT = "csr-scalar"
"""Break-even counts compare conversion + products against this format (the naive CSR of the
naive-SpMV paper, Steinberger et al., “How naive is naive SpMV on the GPU?”)."""


def breakeven(conv: float, kern: float, conv_ref: float, kern_ref: float) -> int | None:
    """Smallest n >= 0 with conv + n kern <= conv_ref + n kern_ref; None if there is none."""
    if conv <= conv_ref and kern <= kern_ref:
        return 0
    if kern >= kern_ref:
        return None
    return max(0, math.ceil((conv - conv_ref) / (kern_ref - kern)))


def set_breakeven(group: list[Record]) -> None:
    """Break-even counts of the records of one matrix, device and dtype against csr-scalar."""
    ref = next((r for r in group if r.format == REFERENCE_FORMAT and r.status == "ok"), None)
    for rec in group:
        if ref is None or rec.status != "ok" or rec.conversion_ms is None:
            continue
        rec.breakeven_products = breakeven(rec.conversion_ms, rec.kernel_ms or 0.0,
                                           ref.conversion_ms or 0.0, ref.kernel_ms or 0.0)


def times(records: dict[str, Record], field: str = "kernel_ms") -> dict[str, float]:
    """The compared times (``field``: the operation's ``compared``) of the baseline records
    that ran well."""
    return {name: r.value(field) for name, r in records.items()
            if r.status == "ok" and r.value(field)}


def set_speedups(rec: Record, baseline_ms: dict[str, float], field: str = "kernel_ms") -> None:
    """speedups[X] = baseline X's time / the record's ``field`` (the operation's ``compared``:
    kernel times, or times per iteration for solvers; for baselines that ran the same case)."""
    ms = rec.value(field)
    if rec.status not in ("ok", "wrong") or not ms:
        return
    rec.speedups.update({name: baseline / ms for name, baseline in baseline_ms.items()})
