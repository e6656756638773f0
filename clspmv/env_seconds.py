"""Seconds read from an environment variable, by one rule for every such setting of clspmv
(the bound of a device probe, the wait of a bounded MPI collective)."""

from __future__ import annotations

import math
import os
from typing import overload

from .errors import SettingError


@overload
def env_seconds(variable: str, default: float) -> float: ...
@overload
def env_seconds(variable: str, default: float, *, zero_unbounds: bool) -> float | None: ...


def env_seconds(variable: str, default: float, *, zero_unbounds: bool = False) -> float | None:
    """The seconds in ``$variable``: ``default`` where it is unset or blank; else a finite
    number above 0, or 0 where ``zero_unbounds`` (then None: no bound). Anything else raises
    :class:`~clspmv.errors.SettingError` naming the variable, its value and the fix."""
    raw = os.environ.get(variable, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if zero_unbounds and value == 0:
        return None
    if not (math.isfinite(value) and value > 0):
        allowed = "a number of seconds above 0" + (" (0: no bound)" if zero_unbounds else "")
        raise SettingError(f"${variable}={raw!r} is not {allowed}; set it to one (e.g. "
                           f"{variable}=600), or unset it for the default of {default:g} s")
    return value
