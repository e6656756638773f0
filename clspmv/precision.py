"""Precisions of a product: the value type on the device and the type its sums are kept in.

``"float32"`` and ``"float64"`` accumulate in their own type. ``"mixed"`` stores the matrix, x
and y in float32 (the bytes of float32) and accumulates every sum in float64: each product of
two float32 values is exact in float64, so a row's result carries the float64 rounding errors
of its sum plus one final rounding to float32, instead of float32's error growing with the row
length. It needs a device with fp64 (``cl_khr_fp64``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

MIXED = "mixed"
"""The name of float32 values with float64 accumulation."""

VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
"""Value types of the device arrays."""

NAMES = ("float32", "float64", MIXED)
"""Every precision by name."""


@dataclass(frozen=True)
class Precision:
    """How a matrix is stored and summed: ``value`` is the type of A, x and y on the device,
    ``accumulate`` the type of the kernels' sums (``ACC_T`` in ``kernels_cl/common.h``)."""

    value: np.dtype
    accumulate: np.dtype

    @property
    def name(self) -> str:
        """``"float32"``, ``"float64"`` or ``"mixed"``."""
        return self.value.name if self.value == self.accumulate else MIXED

    @property
    def mixed(self) -> bool:
        """True when the sums are wider than the values."""
        return self.value != self.accumulate

    @property
    def needs_fp64(self) -> bool:
        """True when the kernels use float64 anywhere."""
        return np.dtype(np.float64) in (self.value, self.accumulate)

    @classmethod
    def of(cls, dtype: object) -> Precision:
        """The precision of a value type (accumulating in it) or of the name ``"mixed"``."""
        if isinstance(dtype, Precision):
            return dtype
        if isinstance(dtype, str) and dtype == MIXED:
            return cls(np.dtype(np.float32), np.dtype(np.float64))
        try:
            value = np.dtype(dtype)  # type: ignore[call-overload]
        except TypeError:
            value = None
        if value is None or value not in VALUE_DTYPES:
            shown = repr(dtype) if value is None else str(value)
            raise TypeError(f"dtype must be float32, float64 or 'mixed', got {shown}")
        return cls(value, value)


def check_real(dtype: np.dtype, what: str, ndim: int = 2) -> None:
    """TypeError unless ``dtype`` holds real numbers (bool, integers, floats): complex values
    would lose their imaginary parts, objects (None among them) and strings would be guessed.
    ``what`` names the array, ``ndim`` its dimensions (a vector or a matrix)."""
    if dtype.kind == "c":
        kind = "vectors" if ndim == 1 else "matrices"
        raise TypeError(f"complex {kind} are not supported ({what} has dtype {dtype}): clspmv "
                        f"has no complex kernels; take {what}.real explicitly if the imaginary "
                        "parts are zero, or multiply the real and imaginary parts separately")
    if dtype.kind not in "biuf":
        hidden = " (None would become NaN)" if dtype.kind == "O" else ""
        raise TypeError(f"{what} has dtype {dtype}; expected real numbers (bool, integers or "
                        f"floats): convert it explicitly{hidden}, e.g. {what}.astype(np.float64), "
                        "once its values are numbers")


def resolve(requested: object, source: np.dtype) -> Precision:
    """The precision for ``dtype=requested`` of a matrix whose values are of type ``source``:
    None keeps a float32/float64 source and turns any other real type into float64. TypeError
    for a ``source`` that is not real (:func:`check_real`), whatever is requested."""
    check_real(np.dtype(source), "A")
    if requested is None:
        return Precision.of(source if source in VALUE_DTYPES else np.float64)
    return Precision.of(requested)
