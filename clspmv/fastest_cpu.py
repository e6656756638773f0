"""The record of which CPU OpenCL implementation of this machine is fastest, which the default
device (:func:`clspmv.device.select_device`) reads.

One machine can have several CPU OpenCL implementations over the same cores (Debian's PoCL, the
PyPI PoCL of the ``pocl`` extra, Intel's CPU runtime), each a platform of its own.
:mod:`clspmv.implementations` compares those with a stored calibration and records them here
(:func:`remember`): ``<cache>/cpu-implementations-<host>-<clspmv version>.json``, each compared
device with its processor (:func:`processor`), its predicted time and the size and modification
time of the calibration file it came from. The default device reads it (:func:`recorded_fastest`:
one small file and a ``stat`` per compared calibration, no model and no probe, since the model
sits above this module) and takes the fastest of the CPU devices present, while at least two of
them are in the record and each one's calibration file is still the one compared.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .cache_files import cache_dir, device_file, host_cpu, read_checked, write_json
from .cache_schema import items, number, record, row, text
from .version import __version__

if TYPE_CHECKING:
    from .device import Device

_ENTRY = record({
    "processor": text(), "platform": text(), "name": text(), "driver": text(),
    "seconds": number(high=1e6, positive=True),
    "calibration": row(number(high=2.0**63, integer=True), number(high=2.0**63, integer=True)),
})
RECORD = record({"clspmv": text(), "host": text(), "devices": items(_ENTRY, max_len=64)})
"""The shape of the record (:mod:`clspmv.cache_schema`); ``calibration`` is the compared
calibration file's size and modification time in nanoseconds."""

_MARKS = re.compile(r"\((?:r|tm|c)\)", re.IGNORECASE)
_POCL_PREFIX = re.compile(r"^(?:pthread|cpu|basic)-")


def processor(device: Device) -> str:
    """The processor a CPU device runs on, from its name, for telling which implementations
    share one: lower case, without (R) and (TM) marks. PoCL names a device
    ``<driver>-<LLVM CPU>-<processor>`` (``pthread-skylake-avx512-Intel(R) Xeon(R)
    Processor``): the part from the last ``-`` before the first space is dropped; Intel's
    runtime names the processor alone. The compute units are not compared: an implementation
    may be limited to fewer threads of the same processor."""
    name = device.name.strip()
    if _POCL_PREFIX.match(name):
        head, space, tail = name.partition(" ")
        name = head.rpartition("-")[2] + space + tail
    return " ".join(_MARKS.sub("", name).lower().split())


@dataclass(frozen=True)
class Compared:
    """One compared CPU device: its predicted product time (seconds, lower is faster)."""

    device: Device
    seconds: float


def record_path() -> Path:
    """The record's file (one per host processor and clspmv version)."""
    key = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{host_cpu()}-{__version__}")
    return cache_dir() / f"cpu-implementations-{key}.json"


def _stamp(device: Device) -> list[int] | None:
    """Size and modification time (ns) of ``device``'s calibration file; None without one."""
    try:
        st = os.stat(device_file(device, "calibration"))
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _identity(device: Device) -> tuple[str, str, str]:
    return (device.platform, device.name, device.driver_version)


def remember(compared: Sequence[Compared]) -> bool:
    """Record ``compared`` (replacing the record) for the default device; False where it could
    not be stored (:func:`clspmv.cache_files.write_json` warns once) or a compared device's
    calibration file is gone."""
    entries = []
    for c in compared:
        stamp = _stamp(c.device)
        if stamp is None:
            return False
        entries.append({"processor": processor(c.device), "platform": c.device.platform,
                        "name": c.device.name, "driver": c.device.driver_version,
                        "seconds": c.seconds, "calibration": stamp})
    data = {"clspmv": __version__, "host": host_cpu(), "devices": entries}
    return write_json(record_path(), data, RECORD)


def _read(data: object) -> list[dict[str, object]]:
    RECORD(data, "")
    assert isinstance(data, dict)
    if (data["clspmv"], data["host"]) != (__version__, host_cpu()):
        raise ValueError(f"it was made by clspmv {data['clspmv']} on {data['host']}")
    return list(data["devices"])


def recorded_fastest(cpus: Sequence[Device]) -> Device | None:
    """The fastest of the CPU devices ``cpus`` by the record: among those of the first one's
    processor that the record holds, where they are at least two and each one's calibration
    file is the one compared; else None (no record, fewer than two of them compared, or a
    calibration measured again or removed since: ``clspmv doctor`` compares them again).
    Reads nothing where ``cpus`` are fewer than two."""
    if len(cpus) < 2:
        return None
    entries = read_checked(record_path(), "CPU implementations record", _read,
                           "the first CPU device is the default until clspmv doctor compares "
                           "them again")
    if not entries:
        return None
    mine = processor(cpus[0])
    by_identity = {(e["platform"], e["name"], e["driver"]): e for e in entries
                   if e["processor"] == mine}
    present = [(d, by_identity[_identity(d)]) for d in cpus
               if processor(d) == mine and _identity(d) in by_identity]
    if len(present) < 2 or any(_stamp(d) != e["calibration"] for d, e in present):
        return None
    return min(present, key=lambda pair: float(pair[1]["seconds"]))[0]  # type: ignore[arg-type]
