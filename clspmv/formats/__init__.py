"""Storage formats: one module per family, each class converting CSR and launching its kernel."""

from __future__ import annotations

import inspect

import numpy as np
import scipy.sparse as sp

from ..precision import Precision
from .base import Format, Layout
from .coo import Coo
from .csr import CsrAligned, CsrScalar, CsrVector
from .csr_adaptive import CsrAdaptive
from .csr_blocks import CsrBlocks
from .csr_merge import CsrMerge
from .dia import Dia
from .ell import Ell, EllR, EllRT
from .hyb import Hyb
from .sell import Pjds, Sell
from .strips import Strips

FORMAT_CLASSES: dict[str, type[Format]] = {
    cls.name: cls
    for cls in (Coo, CsrScalar, CsrVector, CsrAligned, CsrAdaptive, CsrBlocks, Ell, EllR, EllRT,
                Pjds, Sell, Hyb, Dia, CsrMerge, Strips)
}

SINGLE_FORMATS: tuple[str, ...] = tuple(
    name for name, cls in FORMAT_CLASSES.items() if not issubclass(cls, Strips))
"""The formats that store a whole matrix one way (all but the composite ``strips``, whose blocks
are in these): the ones a time model describes and a strips plan chooses from."""
Strips.block_formats = {name: FORMAT_CLASSES[name] for name in SINGLE_FORMATS}


def parameter_names(format: str) -> tuple[str, ...]:
    """The parameters of a format (those its ``from_csr`` takes after the matrix and layout)."""
    return tuple(inspect.signature(FORMAT_CLASSES[format].from_csr).parameters)[2:]


def convert(csr: sp.csr_matrix, format: str, layout: Layout, precision: Precision,
            column_map: object = None, owned: bool = False, **params: object) -> Format:
    """Lay out a canonical CSR matrix (:func:`clspmv.matrix.canonical_csr`, values of
    ``precision.value``) in ``format`` for a device of ``layout``, its kernels to sum in
    ``precision.accumulate``: numpy only, nothing touches a device. :meth:`Format.upload` (or
    :meth:`clspmv.DeviceMatrix.upload`) then copies it to the device. This pair is the one path
    from a CSR matrix to a device matrix: ``DeviceMatrix.from_scipy`` and the benchmarks both
    take it. ``column_map`` (one distinct global column per column of ``csr``) makes the format a
    block with compact columns (:meth:`Format.set_column_map`). ``owned``: ``csr`` is the
    caller's private copy (as ``canonical_csr`` makes), which nothing reads or writes after this
    call: the format may keep its arrays, and on a CPU device :meth:`Format.upload` then makes the
    buffers on the format's arrays instead of copying them
    (:func:`clspmv.host_buffers.matrix_buffer`). By default the upload copies, so that a
    matrix whose arrays the caller changes later keeps the values it was uploaded with.

    The format records ``params`` (:attr:`Format.requested`): converting again with them makes
    the same layout.

    Raises ValueError for an unknown format or parameter values the format refuses, TypeError
    for a parameter the format does not have or a value of the wrong type,
    :class:`~clspmv.errors.UnsuitableFormatError` when the format would pad absurdly,
    :class:`~clspmv.errors.IndexOverflowError` beyond 32-bit indices.
    """
    cls = FORMAT_CLASSES.get(format) if isinstance(format, str) else None
    if cls is None:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMAT_CLASSES)}")
    names = parameter_names(format)
    unknown = sorted(set(params) - set(names))
    if unknown:
        raise TypeError(f"format {format!r} got an unexpected keyword argument "
                        f"{', '.join(map(repr, unknown))}; its parameters: "
                        f"{', '.join(names) or 'none'}")
    fmt = cls.from_csr(csr, layout, **params)
    fmt.requested = dict(params)
    fmt.accumulate = precision.accumulate
    fmt.owned_arrays = owned
    if column_map is not None:
        fmt.set_column_map(np.asarray(column_map))
    return fmt


__all__ = ["FORMAT_CLASSES", "SINGLE_FORMATS", "Format", "Layout", "convert", "parameter_names"]
