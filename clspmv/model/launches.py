"""Kernels a format's forward product enqueues for a matrix, and the work-items of its main
kernel, from its features: the ``launch`` and ``work-items`` terms of the time models
(:mod:`.timemodel`).

Each kernel costs its launch whatever its work: on the H200 (NVIDIA OpenCL) an event of a
kernel of almost no work lasts 5-7 us, so on a matrix of 10^5 entries ``hyb``'s three kernels
(its ELL part, its COO part, a level of carries) took 22 us against 8 us for the one kernel of
``csr-adaptive``. Each format counts its own (:meth:`~clspmv.formats.costs.FormatCosts.launches` and
:meth:`~clspmv.formats.costs.FormatCosts.work_items`), following its default parameters (the
device's SIMD width says whether ``coo`` and ``csr-merge`` stage their work-groups); where a
count needs a layout fact the features lack (local memory), the formats' defaults for a device
with :data:`LOCAL_MEMORY` bytes stand in.
"""

from __future__ import annotations

from ..formats import format_class
from ..formats.base import Layout
from .features import Features

LOCAL_MEMORY = 48 * 1024
"""Local memory assumed for the counts that depend on it (NVIDIA GPUs and PoCL report 48-64
KiB)."""


def model_layout(f: Features, work_group_size: int = 256) -> Layout:
    """The layout the counts assume: the features' SIMD width, ``work_group_size`` and
    :data:`LOCAL_MEMORY`."""
    return Layout(f.simd_width, work_group_size, 1, LOCAL_MEMORY)


def launches(fmt: str, f: Features, work_group_size: int = 256) -> int:
    """Kernels ``fmt``'s forward product enqueues for a matrix of features ``f`` (at least 1;
    a split format's tail of long rows is counted by its tail format's model of the tail)."""
    return format_class(fmt).launches(f, model_layout(f, work_group_size))


def work_items(fmt: str, f: Features, work_group_size: int = 256) -> float:
    """Work-items of ``fmt``'s main kernel for a matrix of features ``f`` (the ``work-items``
    term of the time models): the rows times the work-items sharing a row for the row formats;
    for the formats that cut the entries into equal shares, the shares (``coo``'s entries per
    work-item, ``csr-merge``'s path steps per work-item, ``csr-adaptive``'s row blocks times its
    work-group)."""
    return format_class(fmt).work_items(f, model_layout(f, work_group_size))


__all__ = ["LOCAL_MEMORY", "launches", "model_layout", "work_items"]
