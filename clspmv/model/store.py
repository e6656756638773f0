"""Where calibrations live: one readable JSON file per device in the user cache directory.

The file is ``<cache>/calibration-<device>-<driver><host>-<clspmv version>.json``
(:func:`clspmv.cache_files.device_file`: a new driver, clspmv version or, for a CPU device, host
processor calibrates again). A file that cannot be read, is malformed,
or was made for another device, driver, clspmv version or way of measuring
(:data:`clspmv.model.calibrate.MEASUREMENT`), or on a CPU in another ELL order than the one
stored now (:mod:`clspmv.ell_order`), is rebuilt with a warning; one of an earlier model form
that keeps its timings is fitted again to them (seconds) and saved, with a warning.

``CLSPMV_CALIBRATE=0`` measures nothing: a calibration stored for the device is still used, else
the quick default of :data:`clspmv.model.timemodel.QUICK_DEFAULT` (device facts only).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

from ..cache_files import device_file, measures_on_first_use
from ..device import Device
from ..ell_order import row_major_width, stored
from ..formats import SINGLE_FORMATS
from ..version import __version__
from .calibrate import MEASUREMENT, calibrate, refit_stored
from .timemodel import TERMS, Calibration, quick_default

_memory: dict[Path, Calibration] = {}


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
    except (KeyError, TypeError) as err:
        raise ValueError(f"its stored timings cannot be fitted again ({err!r})") from None
    # the file's identity, which load checked (the timings name the device as they saw it)
    cal.device, cal.driver, cal.clspmv = str(data["device"]), str(data["driver"]), __version__
    return cal, True


def load(device: Device) -> Calibration | None:
    """The stored calibration of ``device``; None when there is none, with a warning when a file
    exists but is corrupt or stale (it will be rebuilt). A file of an earlier model form is
    fitted again to the timings it keeps and saved, with a warning."""
    path = calibration_path(device)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a calibration")
        made_for = (data.get("device"), data.get("driver"), data.get("clspmv"))
        if made_for != (device.name, device.driver_version, __version__):
            raise ValueError(f"it was made for {made_for[0]} (driver {made_for[1]}, clspmv "
                             f"{made_for[2]})")
        if data.get("kind") == "measured" and data.get("measurement") != MEASUREMENT:
            raise ValueError(f"it was measured with other kernels or timing (measurement "
                             f"{data.get('measurement', 0)}, now {MEASUREMENT})")
        cal, refitted = _in_this_form(data)
        if cal.ell_row_major_width and not stored(device):
            raise ValueError("its formats were timed in an ELL order that is no longer stored "
                             "or was measured at fewer row widths than clspmv measures now")
        if cal.ell_row_major_width not in (0, row_major_width(device)):
            raise ValueError(f"its formats were timed with ELL rows of "
                             f"{cal.ell_row_major_width} slots or more row-major, the device's "
                             f"stored order now says {row_major_width(device)}")
    except (OSError, ValueError, TypeError, AttributeError) as err:
        warnings.warn(f"calibration file {path} is unusable ({err}); it will be rebuilt",
                      RuntimeWarning, stacklevel=3)
        return None
    if refitted:
        warnings.warn(f"calibration file {path} was fitted in an earlier model form; fitted "
                      "again to the timings it keeps and saved", RuntimeWarning, stacklevel=3)
        save(cal, device)
    return cal


def calibration_findings(devices: list[Device]) -> list[dict[str, object]]:
    """The calibration state of each device for ``clspmv doctor``: ``what``, ``ok``,
    ``detail`` and the ``fix`` where there is none (a missing or unusable file is no failure:
    the first ``format="auto"`` measures one)."""
    out: list[dict[str, object]] = []
    for d in devices:
        path = calibration_path(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            cal = load(d)
        if cal is not None:
            detail = f"{cal.kind}, stored in {path}"
            if cal.ell_row_major_width:
                detail += f"; ELL rows row-major from {cal.ell_row_major_width} slots (measured)"
        elif path.exists():
            detail = f"{path} is unusable and will be measured again on first use"
        else:
            detail = ("none yet: the first format='auto' measures it (under a minute on a GPU, "
                      "up to 3 on a 2-core CPU)")
        out.append({"what": str(d), "ok": True, "detail": detail,
                    "fix": f"clspmv calibrate --device {d.index[0]}:{d.index[1]}"})
    return out


def save(cal: Calibration, device: Device) -> Path:
    """Write ``cal`` as ``device``'s calibration; returns the path."""
    path = calibration_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(cal.to_json(), indent=1, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def calibration(device: Device, force: bool = False, progress: bool = True) -> Calibration:
    """``device``'s calibration: remembered in this process, else read from the cache, else
    measured (:func:`clspmv.model.calibrate`, saying so on stderr) and stored; the quick default
    instead of a measurement when ``CLSPMV_CALIBRATE=0``. ``force`` measures again."""
    key = calibration_path(device)
    if not force:
        cal = _memory.get(key) or load(device)
        if cal is not None:
            _memory[key] = cal
            return cal
        if not measures_on_first_use():
            return quick_default(device.name, device.driver_version, __version__, device.type,
                                 SINGLE_FORMATS, device.cache_bytes)
        print(f"clspmv: no usable calibration for {device.name}; measuring it once (under a "
              f"minute on a GPU, up to 3 minutes on a 2-core CPU; stored in "
              f"{calibration_path(device)}; CLSPMV_CALIBRATE=0 skips it)", file=sys.stderr)
    cal = calibrate(device, progress=progress)
    save(cal, device)
    _memory[key] = cal
    return cal


def forget() -> None:
    """Drop the calibrations remembered in this process (the files stay)."""
    _memory.clear()
