"""Where calibrations live: one readable JSON file per device in the user cache directory.

The file is ``<cache>/calibration-<device>-<driver><host>-<clspmv version>.json``
(:func:`clspmv.cache_files.device_file`: a new driver, clspmv version or, for a CPU device, host
processor calibrates again). A file that cannot be read, is not :data:`CALIBRATION_FILE`, or was
made for another device, driver, clspmv version or way of measuring
(:data:`clspmv.model.calibrate.MEASUREMENT`), or on a CPU in another ELL order than the one
stored now (:mod:`clspmv.ell_order`), is rebuilt with one warning; one of an earlier model form
that keeps its timings is fitted again to them (seconds) and saved, with a warning.

Threads and processes that need a calibration at once measure it once: the others wait for it
and read it (:func:`clspmv.cache_files.measuring`). Where the cache folder cannot hold files the
calibration is kept in memory for the process (one warning).

Two kinds are measured: the quick calibration (:mod:`clspmv.model.quick`: seconds of probes
scaling a prior of the device's class), which the first ``format="auto"`` on a device measures,
and the full one (:mod:`clspmv.model.calibrate`: a minute on a GPU, one to several on a 2-core
CPU), which ``clspmv calibrate``, :func:`calibration` with ``full=True`` or ``force=True``, or
``CLSPMV_CALIBRATE=full`` (or ``1``: what the first use measured before the quick calibration)
measure. A stored full calibration is always taken over a quick one, and a quick one never
replaces it. ``CLSPMV_CALIBRATE=0``, and the Oclgrind simulator, measure nothing: a calibration
stored for the device is still used, else the quick default of
:data:`clspmv.model.timemodel.QUICK_DEFAULT` (device facts only).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

from tabulate import tabulate

from .. import cache_files
from ..cache_files import (
    device_file,
    measures_on_first_use,
    measuring,
    read_checked,
    user_stacklevel,
    where_stored,
    write_json,
)
from ..cache_schema import items, nullable, number, record, rising, row, table, text
from ..device import Device
from ..ell_order import described, row_major_widths, stored
from ..errors import ClspmvWarning
from ..formats import SINGLE_FORMATS
from ..version import __version__
from .calibrate import calibrate, refit_stored
from .measurements import MEASUREMENT, MEASUREMENTS
from .quick import QUICK_MEASUREMENT, QUICK_MEASUREMENTS, quick_calibrate
from .timemodel import TERMS, Calibration, quick_default

logger = logging.getLogger(__name__)
_memory: dict[Path, Calibration] = {}

FULL = ("1", "full")
"""The values of ``CLSPMV_CALIBRATE`` that ask for the full calibration on first use and in
place of a stored quick one (``1``: what the first use measured before the quick calibration);
unset or ``quick``, the first use measures the quick one; ``0``, nothing."""


def _either_measurements(value: object, where: str) -> None:
    """A calibration's ``measurements``: a quick one's probes or a full one's timings."""
    if isinstance(value, dict) and "quick" in value:
        QUICK_MEASUREMENTS(value, where)
    else:
        MEASUREMENTS(value, where)

_COEFFICIENTS = table(items(number(high=1e6), max_len=64), max_len=256)
_CURVE = rising(items(row(number(high=2.0**50, positive=True), number(high=1.0)), max_len=256))
CALIBRATION_FILE = record({
    "device": text(), "driver": text(), "clspmv": text(),
    "kind": text("measured", "quick", "quick-default"),
    "cache_bytes": number(high=2.0**44, integer=True), "launch_s": number(high=10.0),
    "stream_bw": number(high=1e15, positive=True), "gather_bw": number(high=1e15, positive=True),
    "kernel": _COEFFICIENTS, "conversion": _COEFFICIENTS,
    "terms": items(text(), max_len=64), "conversion_terms": items(text(), max_len=64),
}, {
    "x_miss": _CURVE, "stream_miss": _CURVE, "seconds": number(high=1e6),
    "fit": table(number(high=1e6), max_len=256),
    "measurements": nullable(_either_measurements),
    "measurement": number(high=1e6, integer=True),
    "ell_row_major_width": number(high=4096, integer=True),
    "ell_scattered_row_major_width": number(high=4096, integer=True),
    "large_ratio": table(number(high=1e6, positive=True), max_len=256),
    "large_miss": number(high=1.0),
    "large_shared": number(high=1e6), "large_scatter": number(high=1e6),
    "large_whole": items(text(), max_len=64),
})
"""The shape of a calibration file (:meth:`clspmv.model.timemodel.Calibration.to_json`, checked
by :mod:`clspmv.cache_schema`): every number finite, coefficients and times not negative, the
bandwidths above 0; the fields added since the first files may be missing."""


def ell_widths(cal: Calibration) -> tuple[int, int]:
    """The ELL order ``cal``'s formats were timed in (:func:`clspmv.ell_order.row_major_widths`;
    zeros where none was measured)."""
    return cal.ell_row_major_width, cal.ell_scattered_row_major_width


def calibration_path(device: Device) -> Path:
    """The file of ``device``'s calibration (:func:`clspmv.cache_files.device_file`)."""
    return device_file(device, "calibration")


def _in_this_form(data: dict[str, object]) -> tuple[Calibration, bool]:
    """The calibration of the file's ``data``, and whether it had to be fitted again: a file of
    an earlier model form (other :data:`~clspmv.model.timemodel.TERMS`) that keeps its timings
    is refitted to them (:func:`clspmv.model.calibrate.refit_stored`: seconds, where measuring again
    takes a minute or more); ValueError when it cannot be read either way."""
    if data.get("terms") == list(TERMS) or data.get("kind") != "measured" or not data.get(
            "measurements"):
        return Calibration.from_json(data, SINGLE_FORMATS), False
    try:
        cal = refit_stored(data)
    except (KeyError, TypeError, RuntimeError) as err:
        raise ValueError(f"its stored timings cannot be fitted again ({err!r})") from None
    # the file's identity, which load checked (the timings name the device as they saw it)
    cal.device, cal.driver, cal.clspmv = str(data["device"]), str(data["driver"]), __version__
    CALIBRATION_FILE(cal.to_json(), "the fit of its stored timings")
    return cal, True


def _checked_for(device: Device) -> Callable[[object], tuple[Calibration, bool]]:
    """The check of ``device``'s calibration file: :data:`CALIBRATION_FILE`, made for this
    device, driver, clspmv and way of measuring, in this model form (or fitted again:
    :func:`_in_this_form`) and timed in the ELL order stored now."""
    def check(data: object) -> tuple[Calibration, bool]:
        CALIBRATION_FILE(data, "")
        assert isinstance(data, dict)
        made_for = (data["device"], data["driver"], data["clspmv"])
        if made_for != (device.name, device.driver_version, __version__):
            raise ValueError(f"it was made for {made_for[0]} (driver {made_for[1]}, clspmv "
                             f"{made_for[2]})")
        now = {"measured": MEASUREMENT, "quick": QUICK_MEASUREMENT}.get(str(data["kind"]))
        if now is not None and data.get("measurement") != now:
            raise ValueError(f"it was measured with other kernels, timing or prior ("
                             f"{data['kind']} measurement {data.get('measurement', 0)}, now "
                             f"{now})")
        cal, refitted = _in_this_form(data)
        if cal.ell_row_major_width and not stored(device):
            raise ValueError("its formats were timed in an ELL order that is no longer stored "
                             "or was measured at fewer row widths than clspmv measures now")
        if cal.ell_row_major_width and ell_widths(cal) != row_major_widths(device):
            raise ValueError(f"its formats were timed with {described(ell_widths(cal))}, the "
                             f"device's stored order now says "
                             f"{described(row_major_widths(device))}")
        return cal, refitted
    return check


def load(device: Device) -> Calibration | None:
    """The stored calibration of ``device``; None when there is none, with one warning per
    version of the file when it exists but is unusable (:func:`clspmv.cache_files.read_checked`:
    it will be rebuilt). A file of an earlier model form is fitted again to the timings it keeps
    and saved, with a warning."""
    path = calibration_path(device)
    instead = ("it will be rebuilt" if measures_on_first_use(device) else
               "the quick default stands in (nothing is measured with CLSPMV_CALIBRATE=0 nor "
               "on a simulator)")
    found = read_checked(path, "calibration file", _checked_for(device), instead)
    if found is None:
        return None
    cal, refitted = found
    if refitted:
        warnings.warn(f"calibration file {path} was fitted in an earlier model form; fitted "
                      "again to the timings it keeps and saved", ClspmvWarning,
                      stacklevel=user_stacklevel())
        save(cal, device)
    return cal


def calibration_findings(devices: list[Device]) -> list[dict[str, object]]:
    """The calibration state of each device for ``clspmv doctor``: ``what``, ``ok``,
    ``detail`` and the ``fix`` where there is none (a missing or unusable file is no failure:
    the first ``format="auto"`` measures one)."""
    out: list[dict[str, object]] = []
    for d in devices:
        if d.is_simulator:
            out.append({"what": str(d), "ok": True, "fix": "",
                        "detail": "none: nothing is measured on a simulator (the quick default)"})
            continue
        path = calibration_path(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClspmvWarning)
            cal = load(d)
        if cal is not None:
            detail = f"{cal.kind}, stored in {path}"
            if cal.kind == "quick":
                detail += ("; clspmv calibrate measures the full one (under a minute on a GPU, "
                           "up to 3 on a 2-core CPU)")
            if noisy(cal):
                detail += "; flagged: it measured noise (measure it again on a quiet machine)"
            if cal.ell_row_major_width:
                detail += f"; {described(ell_widths(cal))} (measured)"
        elif os.path.lexists(path):
            detail = f"{path} is unusable and will be measured again on first use"
        else:
            detail = ("none yet: the first format='auto' measures a quick one (seconds); "
                      "clspmv calibrate the full one (under a minute on a GPU, up to 3 on a "
                      "2-core CPU)")
        out.append({"what": str(d), "ok": True, "detail": detail,
                    "fix": f"clspmv calibrate --device {d.index[0]}:{d.index[1]}"})
    return out


def save(cal: Calibration, device: Device) -> Path | None:
    """Store ``cal`` as ``device``'s calibration, used from now on in this process too; returns
    the path, or None where it could not be written (:func:`clspmv.cache_files.write_json`:
    kept in memory for the process, with a warning)."""
    path = calibration_path(device)
    _memory[path] = cal
    return path if write_json(path, cal.to_json(), CALIBRATION_FILE) else None


def noisy(cal: Calibration) -> list[str]:
    """What ``cal`` measured while the machine's speed varied beyond the probes' tolerance
    (:data:`clspmv.model.probes.NOISE_TOLERANCE`): the full calibration's matrices or the quick
    one's probes that stayed noisy after they were measured again (empty: none)."""
    stored = cal.measurements or {}
    quick = stored.get("quick")
    return list((quick if isinstance(quick, dict) else stored).get("noisy") or [])


KIND_NAMES = {"measured": "full (measured: clspmv calibrate)",
              "quick": "quick (a prior scaled by seconds of probes: the first format='auto')",
              "quick-default": "quick default (device facts only, nothing measured)"}
"""How :func:`describe` names each ``kind`` of calibration."""


def _rate(seconds_per_byte: float) -> str:
    """A model's seconds per byte as GB/s ("-" for a term the fit left at zero)."""
    return f"{1e-9 / seconds_per_byte:.3g}" if seconds_per_byte > 0 else "-"


def describe(cal: Calibration, path: Path) -> str:
    """``cal`` (stored in ``path``) for a reader, as ``clspmv calibrate --show`` prints it:
    its kind, when it was stored, its noise flags, the device's rates it measured, and per
    format the first coefficients of the kernel-time model and the fit's error
    (:meth:`~clspmv.model.timemodel.Calibration.to_json` has them all)."""
    try:
        when = datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime(
            "%Y-%m-%d %H:%M UTC")
    except OSError:  # kept in memory only
        when = "not stored"
    flagged = noisy(cal)
    lines = [
        f"calibration of {cal.device} (driver {cal.driver}, clspmv {cal.clspmv})",
        f"  kind:      {KIND_NAMES.get(cal.kind, cal.kind)}",
        f"  stored:    {when}, {path}",
        f"  took:      {cal.seconds:.1f} s to measure; noise: " + (
            f"flagged ({', '.join(map(str, flagged))}): measure it again on a quiet machine"
            if flagged else "none flagged"),
        f"  device:    copy {cal.stream_bw / 1e9:.3g} GB/s, random gathers "
        f"{cal.gather_bw / 1e9:.3g} GB/s, launch {cal.launch_s * 1e6:.3g} us, cache "
        f"{cal.cache_bytes / 2**20:.3g} MiB",
    ]
    if cal.ell_row_major_width:
        lines.append(f"  ELL order: {described(ell_widths(cal))}")
    if cal.large_ratio and cal.large_scatter > 0:
        lines.append(f"  beyond the cache: x{cal.large_shared:.3g} for every format; the rest of "
                     "each format's x as far as a product gathers x as scattered as the large "
                     f"probes ({cal.large_scatter:.2f} per entry)"
                     + (f"; {', '.join(cal.large_whole)}: its own x whole (timed on a band)"
                        if cal.large_whole else ""))
    at = {name: TERMS.index(name) for name in ("launch", "bytes", "xbytes")}
    rows = [[fmt, f"{coef[at['launch']] * 1e6:.3g}", _rate(coef[at["bytes"]]),
             _rate(coef[at["xbytes"]]),
             f"{cal.fit[fmt] * 100:.0f}" if fmt in cal.fit else "-"]
            + ([f"{cal.large_ratio.get(fmt, 0):.3g}"] if cal.large_ratio else [])
            for fmt, coef in cal.kernel.items()]
    large = ["beyond the cache x"] if cal.large_ratio else []
    table = tabulate(rows, headers=["format", "launch us", "bytes GB/s", "x bytes GB/s",
                                    "fit error %", *large], disable_numparse=True)
    return "\n".join(lines) + "\n\n" + table + (
        "\n\n(the first kernel-time coefficients of each format, as rates; --json prints "
        "them all" + ("; beyond the cache x: the large probes' time over the model's, which "
                      "corrects it beyond the cache" if large else "") + ")")


def wants_full() -> bool:
    """Whether ``CLSPMV_CALIBRATE`` asks for the full calibration (:data:`FULL`)."""
    return os.environ.get("CLSPMV_CALIBRATE", "").strip().lower() in FULL


def _usable(cal: Calibration | None, full: bool) -> bool:
    """Whether ``cal`` serves a caller that asks for the full calibration or not."""
    return cal is not None and (cal.kind == "measured" or not full)


def calibration(device: Device, force: bool = False, progress: bool = True,
                full: bool | None = None) -> Calibration:
    """``device``'s calibration: remembered in this process, else read from the cache, else
    measured and stored: the quick calibration (:func:`clspmv.model.quick.quick_calibrate`,
    seconds) unless ``full`` (None: ``force`` or ``CLSPMV_CALIBRATE=full``) asks for the full
    one (:func:`clspmv.model.calibrate`), which also replaces a stored quick one. A stored full
    calibration is always taken, and a quick one never replaces it (a forced quick one is then
    kept for this process only). The quick default instead of a measurement with
    ``CLSPMV_CALIBRATE=0`` and on the Oclgrind simulator
    (:func:`clspmv.cache_files.measures_on_first_use`). ``force`` measures again (DeviceError
    on the simulator). One thread or process measures at a time; one that waited for another
    takes what that one stored (:func:`clspmv.cache_files.measuring`)."""
    key = calibration_path(device)
    full = (force or wants_full()) if full is None else full
    if not force:
        cal = _memory.get(key) or load(device)
        if _usable(cal, full):
            _memory[key] = cal  # type: ignore[assignment]
            return cal  # type: ignore[return-value]
        if not measures_on_first_use(device):
            return cal or quick_default(device.name, device.driver_version, __version__,
                                        device.type, SINGLE_FORMATS, device.cache_bytes)
    with measuring(key, f"the calibration of {device.name}"):
        stored = load(device) or _memory.get(key)  # one this one waited for
        cal = None if force else stored
        if not _usable(cal, full):
            if full:  # minutes: at WARNING, which reaches a library user without logging set
                logger.warning("no usable full calibration for %s; measuring it once (under a "
                               "minute on a GPU, up to 3 minutes on a 2-core CPU; %s; "
                               "CLSPMV_CALIBRATE=0 skips it)", device.name, where_stored(key))
                cal = calibrate(device, progress=progress)
            else:  # seconds: a note at INFO
                logger.info("measuring a quick calibration of %s (seconds; %s; clspmv "
                            "calibrate or CLSPMV_CALIBRATE=full measure the full one, "
                            "CLSPMV_CALIBRATE=0 nothing)", device.name, where_stored(key))
                cal = quick_calibrate(device, progress=progress)
            if cal.kind == "measured" or stored is None or stored.kind != "measured":
                save(cal, device)
            else:
                logger.info("the full calibration stored in %s stays; the quick one is kept "
                            "for this process", key)
    _memory[key] = cal  # type: ignore[assignment]
    return cal  # type: ignore[return-value]


def forget() -> None:
    """Drop the calibrations remembered in this process (the files stay), and what it
    remembers of the cache folder (:func:`clspmv.cache_files.forget`)."""
    _memory.clear()
    cache_files.forget()
