"""Device facts that shape a format's layout and launches, and the default work-group size."""

from __future__ import annotations

from dataclasses import dataclass

from ..device import Device
from ..ell_order import ROW_MAJOR_WIDTH, row_major_widths
from .checks import check_int

DEFAULT_WORK_GROUP = 256
"""Work-group size of every format unless the caller, the format's ``gpu_work_group`` on a GPU,
or a smaller device maximum says otherwise."""

LOCKSTEP_SIMD = 32
"""Smallest SIMD width of a device that runs a work-group's work-items side by side in lockstep
groups (warps, wavefronts: GPUs). CPUs report their float vector width, at most 16, and PoCL
runs a work-group's work-items one after another, a loop per stretch between barriers."""


def check_work_group_size(wg: object, maximum: int | None = None) -> int:
    """``wg`` as an int: a power of two (at most ``maximum`` where given), else ValueError
    (TypeError for anything but an int)."""
    wg = check_int("work_group_size", wg)
    if wg < 1 or wg & (wg - 1) or (maximum is not None and wg > maximum):
        bound = "" if maximum is None else f" <= {maximum}"
        raise ValueError(f"work_group_size must be a power of two{bound}, got {wg}")
    return wg


@dataclass(frozen=True)
class Layout:
    """Device facts that shape a layout: SIMD width for padding, work-group size for launches,
    local memory (bytes per work-group) for the formats that stage entries there, where
    work-items do not run in lockstep the row width from which ELL rows are row-major (measured
    per device: :mod:`clspmv.ell_order`), and whether a CPU implementation vectorises across
    work-items (:attr:`Device.vectorises_work_items <clspmv.device.Device.vectorises_work_items>`:
    a work-item per row then suits it, a work-item per run of rows does not) and whether it runs
    SELL's slices (a loop over a slice's rows, vectorised) well."""

    simd_width: int
    work_group_size: int
    compute_units: int
    local_memory: int
    row_major_width: int = ROW_MAJOR_WIDTH
    vectorises_work_items: bool = False
    gathers_slices: bool = False
    """Whether the implementation runs ``sell``'s work-item per slice faster than a work-item per
    row (:attr:`Device.gathers_slices <clspmv.device.Device.gathers_slices>`)."""
    scattered_row_major_width: int = ROW_MAJOR_WIDTH
    """Where work-items do not run in lockstep, the row width from which ELL rows of scattered
    columns (:func:`clspmv.formats.ell.scattered_rows`) are row-major (measured per device too)."""

    @classmethod
    def for_device(cls, device: Device, work_group_size: int | None = None) -> Layout:
        """The layout clspmv uses on ``device``: work-groups of ``work_group_size``, else of
        :data:`DEFAULT_WORK_GROUP` or the device's maximum if smaller; the ELL order stored for
        the device (:func:`clspmv.ell_order.row_major_widths`); whether the implementation
        vectorises across work-items, from its own answers (:mod:`clspmv.cpu_layout`)."""
        wg = (min(DEFAULT_WORK_GROUP, device.max_work_group_size) if work_group_size is None
              else check_work_group_size(work_group_size, device.max_work_group_size))
        regular, scattered = row_major_widths(device)
        return cls(device.simd_width, wg, device.compute_units, device.local_memory, regular,
                   device.vectorises_work_items, device.gathers_slices, scattered)

    @property
    def lockstep(self) -> bool:
        """Whether work-items run side by side (SIMD width of at least :data:`LOCKSTEP_SIMD`),
        so that a step takes as long as its slowest work-item, rather than one after another
        (CPUs), where a step takes the sum of all of them."""
        return self.simd_width >= LOCKSTEP_SIMD


VECTOR_BYTES = 64
"""Bytes of the vector a CPU implementation that vectorises across work-items fills with one
value of each work-item: AVX-512's (the Xeon of issue 44), the widest of x86 CPUs; under AVX2's
32 bytes the lanes are half as many and
:attr:`~clspmv.model.features.Features.lane_padding` counts too much, and ``sell``'s slices
(:func:`clspmv.formats.sell.slice_height`) hold twice the rows of a vector (the device's native
vector width would say it; :class:`~clspmv.device.Device` does not hold it)."""


def vectorised_items(simd_width: int) -> bool:
    """Whether a device of SIMD width ``simd_width`` vectorises across work-items: width 1, a
    device that asks for scalar kernels (Intel's CPU runtime: a preferred float width of 1 below
    a native one of 16, :func:`clspmv.cpu_layout.vectorises_work_items`)."""
    return simd_width == 1


def vector_lanes(itemsize: int) -> int:
    """Values of ``itemsize`` bytes in one vector of :data:`VECTOR_BYTES`: the work-items an
    implementation that vectorises across work-items runs side by side (8 in float64)."""
    return max(1, VECTOR_BYTES // itemsize)


def lane_width(simd_width: int, itemsize: int) -> int:
    """Work-items that share the lanes of one vector or warp, running as long as the longest of them
    (:attr:`~clspmv.model.features.Features.lane_padding`), on a device of SIMD width
    ``simd_width`` for values of ``itemsize`` bytes: the SIMD width, except where the device
    vectorises across work-items (:func:`vectorised_items`), each vector holding
    :data:`VECTOR_BYTES` of values, one per work-item (8 in float64). There, on the 2-core Xeon,
    ``csr-scalar`` took 2.9-3.3 times ``csr-blocks``' time on the quick calibration's power-law
    probe and 1.3-1.4 times on its rows of one length; counted in lanes of one work-item, the
    probes' padding was 0 and ``format="auto"`` took ``pjds`` (slices of one row there) on
    Chung-Lu rows at 0.72-0.79 of the fastest format's speed
    (``reports/2026-11-28-cpu-2core-xeon-intel-auto``). (The Oclgrind simulator, of SIMD width 1
    too, times nothing: no calibration weighs its lanes.)"""
    return vector_lanes(itemsize) if vectorised_items(simd_width) else simd_width
