"""Device facts that shape a format's layout and launches, and the default work-group size."""

from __future__ import annotations

from dataclasses import dataclass

from ..device import Device

DEFAULT_WORK_GROUP = 256
"""Work-group size of every format unless the caller, the format's ``gpu_work_group`` on a GPU,
or a smaller device maximum says otherwise."""


@dataclass(frozen=True)
class Layout:
    """Device facts that shape a layout: SIMD width for padding, work-group size for launches,
    local memory (bytes per work-group) for the formats that stage entries there."""

    simd_width: int
    work_group_size: int
    compute_units: int
    local_memory: int

    @classmethod
    def for_device(cls, device: Device, work_group_size: int | None = None) -> Layout:
        """The layout clspmv uses on ``device``: work-groups of ``work_group_size``, else of
        :data:`DEFAULT_WORK_GROUP` or the device's maximum if smaller."""
        wg = work_group_size or min(DEFAULT_WORK_GROUP, device.max_work_group_size)
        if wg < 1 or wg & (wg - 1) or wg > device.max_work_group_size:
            raise ValueError(
                f"work_group_size must be a power of two <= {device.max_work_group_size}, got {wg}"
            )
        return cls(device.simd_width, wg, device.compute_units, device.local_memory)
