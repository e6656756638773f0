"""Kernels a format's forward product enqueues for a matrix, and the work-items of its main
kernel, from its features: the ``launch`` and ``work-items`` terms of the time models
(:mod:`.timemodel`).

Each kernel costs its launch whatever its work: on the H200 (NVIDIA OpenCL) an event of a
kernel of almost no work lasts 5-7 us, so on a matrix of 10^5 entries ``hyb``'s three kernels
(its ELL part, its COO part, a level of carries) took 22 us against 8 us for the one kernel of
``csr-adaptive``. The counts follow the formats' default parameters (the device's SIMD width
says whether ``coo`` and ``csr-merge`` stage their work-groups); where a count needs a layout
fact the features lack (local memory), the formats' defaults for a device with
:data:`LOCAL_MEMORY` bytes stand in.
"""

from __future__ import annotations

from ..formats.base import Layout, round_up
from ..formats.coo import default_items, default_launches
from ..formats.csr_adaptive import GPU_WORK_GROUP as ADAPTIVE_GPU_GROUP
from ..formats.csr_adaptive import align_of, max_block_entries
from ..formats.csr_merge import FIXUP_SERIAL, tile_items
from ..formats.layout import LOCKSTEP_SIMD
from .features import Features, threads_per_row

LOCAL_MEMORY = 48 * 1024
"""Local memory assumed for the counts that depend on it (NVIDIA GPUs and PoCL report 48-64
KiB)."""


def launches(fmt: str, f: Features, work_group_size: int = 256) -> int:
    """Kernels ``fmt``'s forward product enqueues for a matrix of features ``f`` (at least 1;
    a split format's COO tail is counted by ``coo``'s model of the tail)."""
    if fmt == "coo":
        return max(1, default_launches(f.entries, f.simd_width, work_group_size, f.itemsize)
                   + (1 if f.empty_rows else 0))
    if fmt == "hyb":
        beyond = f.slots_of("hyb") - round_up(f.rows, f.simd_width) * f.hyb_width
        return 1 + default_launches(beyond, f.simd_width, work_group_size, f.itemsize)
    staged = f.simd_width >= LOCKSTEP_SIMD
    if fmt == "csr-merge":
        if not staged:
            return 2 if f.rows + f.entries > 1 else 1
        share = work_group_size * tile_items(_layout(f, work_group_size), f.itemsize)
        return (1 + (f.rows + f.entries > share)
                + (f.max_row > FIXUP_SERIAL * share))
    if fmt == "csr-adaptive":
        wg = ADAPTIVE_GPU_GROUP if staged else work_group_size
        return 1 + (f.max_row > max_block_entries(_layout(f, wg), f.itemsize))
    return 1


def _layout(f: Features, work_group_size: int) -> Layout:
    """A layout of the features' SIMD width, ``work_group_size`` and :data:`LOCAL_MEMORY`."""
    return Layout(f.simd_width, work_group_size, 1, LOCAL_MEMORY)


def work_items(fmt: str, f: Features, work_group_size: int = 256) -> float:
    """Work-items of ``fmt``'s main kernel for a matrix of features ``f`` (the ``work-items``
    term of the time models): the rows times the work-items sharing a row for the row formats;
    for the formats that cut the entries into equal shares, the shares: ``coo``'s entries per
    work-item, ``csr-merge``'s path steps (rows plus entries) per work-item, ``csr-adaptive``'s
    row blocks times its work-group (greedy blocks end at ``CAP`` entries, less about half a row
    of mean length and, aligned, half the alignment, or at ``CAP`` rows, whichever comes
    first)."""
    staged = f.simd_width >= LOCKSTEP_SIMD
    if fmt == "coo":
        # float64's shares whatever the value size: the calibration measures float64, and the
        # staged kernel's 8 float32 entries per work-item were no faster than 4 on graphs
        # (reports/2026-11-26-coo-items: counted as 8, the model took coo there, 0.93-0.95x)
        return f.entries / default_items(f.simd_width, 8)
    if fmt == "csr-merge" and staged:
        return (f.rows + f.entries) / tile_items(_layout(f, work_group_size), f.itemsize)
    if fmt == "csr-adaptive":
        wg = ADAPTIVE_GPU_GROUP if staged else work_group_size
        layout = _layout(f, wg)
        cap = max_block_entries(layout, f.itemsize)
        half_row = min(f.entries / max(f.rows, 1), cap) / 2
        half_skew = (align_of(layout, cap) - 1) / 2  # the room an aligned block loses
        return max(f.entries / (cap - half_row - half_skew), f.rows / cap) * wg
    return float(f.rows) * threads_per_row(fmt, f)
