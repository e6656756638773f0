"""Values of the ``clspmv`` command's options: each a parser that argparse calls, raising
``argparse.ArgumentTypeError`` with a message naming the choices (:mod:`clspmv.cli` builds the
parser from them)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .formats import FORMAT_CLASSES


def formats(text: str) -> list[str] | str:
    """``all``, ``auto`` or a comma-separated list of format names, in any case: the formats
    registered when the command line is read (:func:`clspmv.formats.register`)."""
    if text.strip().lower() in ("all", "auto"):
        return text.strip().lower()
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in FORMAT_CLASSES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown format{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(map(repr, unknown)) or repr(text)}; "
            f"choose 'all', 'auto' or from {', '.join(FORMAT_CLASSES)}"
        )
    return names


def _positive(convert: type, what: str):
    """A parser of positive values of type ``convert`` (int or float), naming ``what``."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = convert(0)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive {what}, got {text!r}")
        return value
    return parse


positive_int = _positive(int, "integer")
"""A positive integer option value."""
positive_float = _positive(float, "number")
"""A positive number option value."""


def column_counts(text: str) -> list[int]:
    """``K[,K...]``: numbers of right-hand sides, positive, in the order given, no repeats."""
    counts = []
    for part in text.split(","):
        try:
            k = int(part.strip())
        except ValueError:
            k = 0
        if k < 1:
            raise argparse.ArgumentTypeError(
                f"expected positive integers separated by commas (e.g. 1,2,4,8), got {text!r}")
        counts.append(k)
    return list(dict.fromkeys(counts))


def _names(text: str, choices: Sequence[str], what: str, alternative: str = "") -> list[str]:
    """A comma-separated list of ``what`` names, each one of ``choices``, without repeats;
    ``alternative`` is the other value the option takes (named in the error)."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in choices]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(map(repr, unknown)) or repr(text)}; choose "
            f"{alternative}from {', '.join(choices)}")
    return list(dict.fromkeys(names))


def solvers(text: str) -> list[str]:
    """``cg`` (a comma-separated list of solver names)."""
    from .bench.operations import SOLVERS

    return _names(text, tuple(SOLVERS), "solver")


def baselines(text: str) -> list[str]:
    """``none`` or a comma-separated list of baseline names."""
    from .bench.registry import BASELINES

    if text.strip() == "none":
        return []
    return _names(text, tuple(BASELINES), "baseline", "'none' or ")
