"""Files clspmv keeps per device in the user cache directory: where they live and their key.

A file is ``<cache>/<kind>-<device>-<driver><host>-<clspmv version>.json``: a new driver or
clspmv version measures again; for a CPU device ``<host>`` is the host's processor
(:func:`host_cpu`: PoCL names a device by its instruction set and vendor, so a VM moved from one
processor generation to another kept the name while the fastest formats changed). ``<cache>``
is ``platformdirs.user_cache_dir("clspmv")`` or the directory in ``CLSPMV_CACHE_DIR``. The
calibration (:mod:`clspmv.model.store`) and the ELL order (:mod:`clspmv.ell_order`) live there.
"""

from __future__ import annotations

import functools
import os
import platform
import re
from pathlib import Path

from .device import Device
from .version import __version__


def cache_dir() -> Path:
    """The directory of the per-device files (``CLSPMV_CACHE_DIR`` or the user cache directory)."""
    env = os.environ.get("CLSPMV_CACHE_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("clspmv"))


@functools.cache
def host_cpu() -> str:
    """The host's processor: vendor, family and model from ``/proc/cpuinfo`` (e.g.
    ``AuthenticAMD-26-2``), else what :func:`platform.processor` or :func:`platform.machine`
    says. The 2-core VM of this project's CPU reports ran on a Zen 4 and later on a Zen 5, both
    ``pthread-skylake-avx512-AMD EPYC`` to PoCL 3.1: column-major ELL rows of 4-8 slots went
    from 0.9x to 2.2x the row-major time (``reports/2026-11-26-cpu-2core-zen5-suites``)."""
    try:
        pairs = (line.split(":", 1) for line in Path("/proc/cpuinfo").read_text()
                 .splitlines()[:30] if ":" in line)
        fields = {k.strip(): v.strip() for k, v in pairs}
        found = [fields.get(k, "") for k in ("vendor_id", "cpu family", "model")]
        if all(found):
            return "-".join(found)
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measures_on_first_use() -> bool:
    """Whether a device without a stored file may be measured on first use: not with
    ``CLSPMV_CALIBRATE=0`` (then a stored file is still read, and what is missing takes its
    documented default)."""
    return os.environ.get("CLSPMV_CALIBRATE", "1") != "0"


def device_file(device: Device, kind: str) -> Path:
    """The cache file of ``kind`` (``"calibration"``, ``"ell-order"``) for ``device``."""
    host = f"-{host_cpu()}" if device.type == "cpu" else ""
    key = f"{device.name}-{device.driver_version}{host}-{__version__}"
    return cache_dir() / f"{kind}-{re.sub(r'[^A-Za-z0-9._-]+', '_', key)}.json"
