"""Predicted kernel and conversion times of every format for one matrix on one device."""

from __future__ import annotations

from dataclasses import dataclass

from ..canonical import canonical_csr
from ..device import Device, select_device
from ..formats import SINGLE_FORMATS, format_class
from ..precision import resolve
from .features import Features, features, main_part, refusal, tail_part, with_exact_diagonals
from .store import calibration
from .timemodel import Calibration


@dataclass(frozen=True)
class Prediction:
    """What the model says of one format for one matrix: its kernel seconds per product and its
    conversion seconds (host layout plus upload), or why the format refuses the matrix (then both
    times are None)."""

    format: str
    kernel_s: float | None
    conversion_s: float | None
    refused: str | None = None

    def total_s(self, products: int) -> float:
        """Conversion plus ``products`` products (inf for a refused format)."""
        if self.kernel_s is None or self.conversion_s is None:
            return float("inf")
        return self.conversion_s + products * self.kernel_s


def kernel_time(cal: Calibration, fmt: str, f: Features) -> float:
    """Predicted kernel seconds of ``fmt`` for features ``f``: its model on what its own kernel
    walks (:func:`~clspmv.model.features.main_part`) plus, for a format with a tail of long rows,
    its tail format's model (:attr:`~clspmv.formats.costs.FormatCosts.tail_format`, COO) on the
    tail (:func:`~clspmv.model.features.tail_part`)."""
    seconds = cal.kernel_time(fmt, main_part(fmt, f))
    tail = tail_part(fmt, f)
    tail_format = format_class(fmt).tail_format
    if tail is not None and tail_format is not None and tail_format.name in cal.kernel:
        seconds += cal.kernel_time(tail_format.name, tail)
    return seconds


def predict_features(f: Features, cal: Calibration, work_group_size: int = 256,
                     formats: tuple[str, ...] | None = None) -> dict[str, Prediction]:
    """:func:`predict` for matrix features already computed and a calibration at hand."""
    out = {}
    for name in formats or SINGLE_FORMATS:
        why = refusal(name, f, work_group_size)
        if why is not None or name not in cal.kernel:
            out[name] = Prediction(name, None, None,
                                   why or f"the calibration has no model of {name!r}")
        else:
            out[name] = Prediction(name, kernel_time(cal, name, f),
                                   cal.conversion_time(name, f))
    return out


def predict(A: object, device: Device | str | None = None, dtype: object = None,
            calibration_: Calibration | None = None) -> dict[str, Prediction]:
    """Predicted kernel time (and conversion time) of every format for ``A`` on ``device`` in
    ``dtype`` (as :meth:`clspmv.DeviceMatrix.from_scipy` takes them), and the reason of every
    format that refuses ``A``. Uses the device's calibration (:func:`clspmv.model.store
    .calibration`: measured on first use unless ``CLSPMV_CALIBRATE=0``) unless one is given."""
    dev = select_device(device)
    csr = canonical_csr(A, dtype)
    resolve(dtype, csr.dtype)
    cal = calibration_ or calibration(dev)
    f = with_exact_diagonals(features(csr, dev.simd_width, compute_units=dev.compute_units), csr)
    return predict_features(f, cal, min(256, dev.max_work_group_size))
