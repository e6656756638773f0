"""Checks of parameter values that the layout (:mod:`.layout`) and the conversions
(:mod:`.conversion`) share: here, where both can import them (the conversions import the
layout)."""

from __future__ import annotations

import numpy as np


def check_int(name: str, value: object) -> int:
    """``value`` as an int: a Python or numpy integer, not a bool; TypeError for anything else (a
    float would be truncated, a bool taken for 0 or 1)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


__all__ = ["check_int"]
