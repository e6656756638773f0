"""Measured ELL orders for the tests (:class:`clspmv.ell_order.EllOrder`), without the probe."""

from __future__ import annotations

from clspmv.ell_order import MEASURED_WIDTHS, SCATTERED_WIDTHS, EllOrder


def times_from(width: int, widths: tuple[int, ...]) -> dict[int, tuple[float, float]]:
    """Times at ``widths`` that are row-major from ``width`` slots: column-major faster below
    it, row-major twice as fast from it."""
    return {w: (1.0, 1.2) if w < width else (1.0, 0.5) for w in widths}


def order_from(width: int, scattered: int | None = None) -> EllOrder:
    """A complete measured order (every :data:`MEASURED_WIDTHS` and :data:`SCATTERED_WIDTHS`
    width) that is row-major from ``width`` slots, and on rows of scattered columns from
    ``scattered`` (default: ``width``)."""
    return EllOrder(times_from(width, MEASURED_WIDTHS),
                    times_from(width if scattered is None else scattered, SCATTERED_WIDTHS))
