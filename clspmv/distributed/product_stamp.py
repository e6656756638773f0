"""What each product tells the peers it sends values to, so that ranks out of step fail loudly.

A product is collective but not compared between ranks by a collective call of its own (that
would add a latency to every product). Instead the values each rank sends carry a *stamp*: the
number of the product on the sending rank (every call of ``matvec`` or ``rmatvec`` counts, one
that raised before any communication too), its kind and its ``alpha`` and ``beta``. Every rank
compares the stamps of the values it receives with its own before it uses them
(:func:`check`), so a rank whose product raised on its own, or that skipped one, or that passes
other scalars or calls the other product, makes every rank that receives its values raise a
:class:`.collective.DistributedError`, instead of computing with values of another product.
Ranks that exchange no values with each other are not compared (their results do not depend on
each other's products).
"""

from __future__ import annotations

import math

import numpy as np

from .collective import DistributedError

VALUES = 4
"""float64 values of a stamp: product number, transposed (0 or 1), alpha, beta."""
SCALAR_RTOL = 1e-12
"""Relative difference up to which two ranks' alpha (or beta) count as the same: values
reduced in different orders on different ranks may differ in their last bits."""


def stamp(number: int, transposed: bool, alpha: float, beta: float) -> np.ndarray:
    """The stamp of product ``number`` of a matrix (the count of products called so far)."""
    return np.array([number, float(transposed), alpha, beta], np.float64)


def check(own: np.ndarray, theirs: np.ndarray, rank: int, me: int) -> None:
    """Raise :class:`DistributedError` where the stamp ``theirs`` received from ``rank``
    differs from this rank's (``me``) ``own``."""
    if own.tobytes() == theirs.tobytes():  # the usual case, in a fraction of a microsecond
        return
    if (own[0] == theirs[0] and own[1] == theirs[1]
            and all(math.isclose(a, b, rel_tol=SCALAR_RTOL, abs_tol=0.0)
                    for a, b in zip(own[2:], theirs[2:], strict=True))):
        return
    raise DistributedError(
        f"rank {rank} sent the values of its {describe(theirs)} to this rank (rank {me}), which "
        f"runs its {describe(own)}: every product is collective, every rank calls the same "
        "method with the same alpha and beta, one product after the other (a rank whose product "
        "raised must not go on alone); this matrix cannot exchange any more: close() it on "
        "every rank and build a new one")


def describe(values: np.ndarray) -> str:
    """A stamp in words: ``product 7 (A x, alpha=2.0, beta=0.0)``."""
    kind = "A.T x" if values[1] else "A x"
    return (f"product {int(values[0])} ({kind}, alpha={float(values[2])!r}, "
            f"beta={float(values[3])!r})")
