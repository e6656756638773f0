"""The size of the bandwidth probe's buffers (clspmv.bandwidth.buffer_bytes): four times the
reported cache, but never the gigabytes a CPU's whole-processor cache would ask for, nor more
than a share of the device's memory."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from clspmv import bandwidth

MiB, GiB = 1 << 20, 1 << 30


@pytest.mark.parametrize("cache, memory, allocation, expected", [
    (32 * MiB, 64 * GiB, 16 * GiB, 256 * MiB),      # 4 x the cache below the floor
    (96 * MiB, 64 * GiB, 16 * GiB, 384 * MiB),      # 4 x the cache
    (480 * MiB, 8 * GiB, 2 * GiB, 512 * MiB),       # a VM's whole-processor L3: capped
    (50 * MiB, 80 * GiB, 20 * GiB, 256 * MiB),      # an H100's L2
    (480 * MiB, 2 * GiB, 1 * GiB, 256 * MiB),       # an eighth of the memory
    (4 * MiB, 1 * GiB, 64 * MiB, 32 * MiB),         # half the largest allocation
    (4 * MiB, GiB + 8 * 12345, GiB, 128 * MiB + 12288),  # a multiple of 4 KiB
], ids=["floor", "4x-cache", "capped", "gpu", "memory", "allocation", "rounded"])
def test_buffer_bytes(cache: int, memory: int, allocation: int, expected: int) -> None:
    device = SimpleNamespace(cache_bytes=cache, global_memory=memory, max_allocation=allocation)
    assert bandwidth.buffer_bytes(device) == expected  # type: ignore[arg-type]
    assert bandwidth.MAX_BUFFER == 512 * MiB and bandwidth.MEMORY_SHARE == 8


def test_the_real_device_is_capped(device) -> None:
    size = bandwidth.buffer_bytes(device)
    assert size % 4096 == 0 and size <= min(bandwidth.MAX_BUFFER, device.max_allocation // 2,
                                            device.global_memory // 8)
