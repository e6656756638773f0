"""Shapes of the JSON clspmv reads back from its cache files (:mod:`clspmv.cache_files`): a check
per field, so that a damaged or hand-edited file is rejected with the place and the reason
instead of being trusted.

Written here rather than taken from ``jsonschema``: that library would be a new dependency, and
what matters most here is what JSON Schema does not say, numbers that are finite (a ``1e400``
read as infinity) and within the ranges the model can use. A check is a callable of the value
and its place in the file (``kernel.coo[3]``) that raises :class:`Invalid`; every container
check bounds its length and names the check of its items, so the nesting a file may have is the
schema's own (a deeper one fails as a wrong type at the first level too many).
"""

from __future__ import annotations

import math
from collections.abc import Callable

Check = Callable[[object, str], None]
"""Raises :class:`Invalid` where the value at the place (second argument) has the wrong shape."""

MAX_ITEMS = 4096
"""Default bound on the items of a list or table."""


class Invalid(ValueError):
    """A value of a cache file has the wrong type, range or length; the message names where."""


def number(low: float = 0.0, high: float = 1e300, *, integer: bool = False,
           positive: bool = False) -> Check:
    """A finite number in ``[low, high]`` (above ``low`` where ``positive``), an integer where
    ``integer``; a boolean is no number here."""
    def check(value: object, where: str) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise Invalid(f"{where}: {value!r:.40} is not a number")
        if integer and not isinstance(value, int):
            raise Invalid(f"{where}: {value!r} is not an integer")
        # an int is compared as it is (JSON's integers have no bound; math.isfinite would
        # overflow on one beyond the floats)
        if ((isinstance(value, float) and not math.isfinite(value))
                or not low <= value <= high or (positive and value <= low)):
            bound = f"above {low:g}" if positive else f"at least {low:g}"
            raise Invalid(f"{where}: {value!r:.40} is out of range ({bound}, at most {high:g})")
    return check


def text(*choices: str, max_len: int = 200) -> Check:
    """A string of at most ``max_len`` characters, one of ``choices`` where any are given."""
    def check(value: object, where: str) -> None:
        if not isinstance(value, str) or len(value) > max_len:
            raise Invalid(f"{where}: {value!r:.40} is not a string of at most {max_len} "
                          "characters")
        if choices and value not in choices:
            raise Invalid(f"{where}: {value!r} is none of {', '.join(choices)}")
    return check


def items(of: Check, max_len: int = MAX_ITEMS) -> Check:
    """A list of at most ``max_len`` values, each ``of``."""
    def check(value: object, where: str) -> None:
        if not isinstance(value, list):
            raise Invalid(f"{_named(where)}: {type(value).__name__} where a list belongs")
        if len(value) > max_len:
            raise Invalid(f"{where}: {len(value)} items, at most {max_len} expected")
        for i, v in enumerate(value):
            of(v, f"{where}[{i}]")
    return check


def row(*checks: Check) -> Check:
    """A list of exactly one value per check, each checked by its own (a pair of a size and a
    share, say)."""
    def check(value: object, where: str) -> None:
        if not isinstance(value, list) or len(value) != len(checks):
            raise Invalid(f"{where}: {value!r:.40} is not a list of {len(checks)} values")
        for i, (v, c) in enumerate(zip(value, checks, strict=True)):
            c(v, f"{where}[{i}]")
    return check


def integer_text(low: int, high: int) -> Check:
    """A string of a decimal integer in ``[low, high]`` (a JSON object's key that stands for a
    number)."""
    def check(value: object, where: str) -> None:
        if not (isinstance(value, str) and value.isdigit() and len(value) <= 12
                and low <= int(value) <= high):
            raise Invalid(f"{where}: {value!r:.40} is not an integer from {low} to {high}")
    return check


def table(of: Check, keys: Check | None = None, max_len: int = MAX_ITEMS) -> Check:
    """An object of at most ``max_len`` entries, each value ``of`` and each key a string (that
    ``keys`` accepts, where given)."""
    key_check = keys or text()

    def check(value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{_named(where)}: {type(value).__name__} where an object "
                          "belongs")
        if len(value) > max_len:
            raise Invalid(f"{where}: {len(value)} entries, at most {max_len} expected")
        for k, v in value.items():
            key_check(k, f"{where} key")
            of(v, _at(where, k))
    return check


def record(required: dict[str, Check], optional: dict[str, Check] | None = None) -> Check:
    """An object with every field of ``required``, any of ``optional``, and no other."""
    known = {**required, **(optional or {})}

    def check(value: object, where: str) -> None:
        if not isinstance(value, dict):
            raise Invalid(f"{_named(where)}: {type(value).__name__} where an object "
                          "belongs")
        missing = [k for k in required if k not in value]
        if missing:
            raise Invalid(f"{_named(where)}: no field {missing[0]!r}")
        for k, v in value.items():
            if k not in known:
                raise Invalid(f"{_named(where)}: unknown field {k!r:.40}")
            known[k](v, _at(where, k))
    return check


def _named(where: str) -> str:
    """``where`` for a message: the file itself where it is its top level (``""``)."""
    return where or "the file"


def _at(where: str, key: object) -> str:
    """The place of ``key`` in the object at ``where`` (the file's top level: ``""``)."""
    return f"{where}.{key}" if where else str(key)


def nullable(of: Check) -> Check:
    """None (JSON null) or ``of``."""
    def check(value: object, where: str) -> None:
        if value is not None:
            of(value, where)
    return check


def rising(of: Check) -> Check:
    """``of``, a list whose items are pairs (or numbers) with strictly rising first values
    (the sizes of a curve that is interpolated on them)."""
    def check(value: object, where: str) -> None:
        of(value, where)
        firsts = [v[0] if isinstance(v, list) else v for v in value]  # type: ignore[union-attr]
        if any(b <= a for a, b in zip(firsts, firsts[1:], strict=False)):
            raise Invalid(f"{where}: sizes do not rise")
    return check
