"""How the device probes that time many kernels run: never on a simulator, with progress, and
within a bound of time.

Those probes (the copy bandwidth of :mod:`clspmv.bandwidth`, the x cache probe of
:mod:`clspmv.model.probes`) size their work from the device's facts: buffers beyond its cache,
matrices of millions of entries. On a device thousands of times slower than its facts suggest
they would run for hours and show nothing (the Oclgrind simulator reports itself as a GPU). So:

* nothing is measured on a simulator (:func:`refuse_simulator`): its times say nothing of any
  hardware, and one product of a probe's matrix takes it minutes; the callers take documented
  defaults there (a bandwidth record without rates, the quick-default calibration);
* a probe shows its steps on a tqdm bar (cleared when it ends; none with ``progress=False``) and
  stops with a :class:`~clspmv.errors.DeviceError` naming the device, the probe and the fix once
  it has run :func:`limit_s` seconds (:class:`ProbeRun`). The bound is checked between the
  probe's kernels: a kernel that has started is not interrupted, which is why the simulator is
  refused beforehand rather than bounded.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .env_seconds import env_seconds
from .errors import DeviceError

if TYPE_CHECKING:
    from .device import Device

PROBE_LIMIT_S = 300.0
"""Seconds a probe may run: 20 times the slowest probe seen on a 2-core CPU, kernel builds
included (docs/measurements.md, "Evidence behind the code")."""
LIMIT_VARIABLE = "CLSPMV_PROBE_LIMIT_S"
"""The environment variable that sets another bound, in seconds."""


def limit_s() -> float:
    """The bound of a probe's time: ``$CLSPMV_PROBE_LIMIT_S``, else :data:`PROBE_LIMIT_S`
    (:func:`clspmv.env_seconds.env_seconds`: a :class:`~clspmv.errors.SettingError` for a value
    that is no number of seconds above 0)."""
    return env_seconds(LIMIT_VARIABLE, PROBE_LIMIT_S)


def refuse_simulator(device: Device, probe: str) -> None:
    """Raise :class:`DeviceError` when ``device`` is a simulator, on which ``probe`` measures
    nothing (see the module docstring)."""
    if device.is_simulator:
        raise DeviceError(f"{device} is the Oclgrind simulator: clspmv measures nothing on it "
                          f"({probe} would run for hours and time no hardware); measure on "
                          "another device (clspmv devices lists them)")


class ProbeRun:
    """One probe's run on a device: its steps on a tqdm bar and the bound of its time (from
    its creation). A context manager: the bar is closed at the end, also on an error."""

    def __init__(self, device: Device, probe: str, total: int | None = None,
                 progress: bool = True) -> None:
        from tqdm import tqdm

        self.device, self.probe, self.limit = device, probe, limit_s()
        self.start = time.monotonic()
        self.bar = tqdm(total=total, desc=f"{probe} on {device.name[:32]}", unit="step",
                        disable=not progress, leave=False, dynamic_ncols=True)

    def __enter__(self) -> ProbeRun:
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.close()

    def step(self) -> None:
        """One step done: shown, then :meth:`check`."""
        self.bar.update()
        self.check()

    def check(self) -> None:
        """Raise :class:`DeviceError` once the probe has run past its bound."""
        elapsed = time.monotonic() - self.start
        if elapsed > self.limit:
            raise DeviceError(
                f"{self.device}: {self.probe} stopped after {elapsed:.1f} s, past its bound of "
                f"{self.limit:g} s: the device is far slower than its facts suggest (a "
                "simulator, or a driver that runs kernels on one thread). Choose another device "
                "(clspmv devices lists them; device=..., --device or $CLSPMV_DEVICE), or allow "
                f"the probe more time with ${LIMIT_VARIABLE}=SECONDS")
