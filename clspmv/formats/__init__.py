"""Storage formats: one module per family, each class converting CSR and launching its kernel."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import scipy.sparse as sp

from ..precision import Precision
from .base import Format, Layout
from .bsr import Bsr
from .coo import Coo
from .costs import MissingCostHook, check_cost_hooks
from .csr import CsrAligned, CsrScalar, CsrVector, on_shared_store
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
                Pjds, Sell, Hyb, Dia, CsrMerge, Strips, Bsr)
}
"""Every format by name: the registry that conversion, the model, the trial, the bench and the
stored matrices look formats up in. Add or remove a format with :func:`register` and
:func:`unregister` (which keep :data:`SINGLE_FORMATS` and the blocks of ``strips`` in step)."""


class FormatNames(Sequence[str]):
    """The names of the registered formats whose class passes ``keep``, read from
    :data:`FORMAT_CLASSES` at each use (so that a format registered later is among them)."""

    def __init__(self, keep: Callable[[type[Format]], bool]) -> None:
        self._keep = keep

    def _names(self) -> tuple[str, ...]:
        return tuple(name for name, cls in FORMAT_CLASSES.items() if self._keep(cls))

    def __getitem__(self, index):  # type: ignore[no-untyped-def, override]
        return self._names()[index]

    def __len__(self) -> int:
        return len(self._names())

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return repr(self._names())

    def __eq__(self, other: object) -> bool:
        """Equal to a tuple (or another view) of the same names in the same order."""
        if isinstance(other, (FormatNames, tuple)):
            return self._names() == tuple(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a live view: its names change


FORMATS: Sequence[str] = FormatNames(lambda cls: True)
"""Every registered format's name (``clspmv.FORMATS``): a live view of :data:`FORMAT_CLASSES`."""

SINGLE_FORMATS: Sequence[str] = FormatNames(lambda cls: not issubclass(cls, Strips))
"""The formats that store a whole matrix one way (all but the composite ``strips``, whose blocks
are in these): the ones a time model describes and a strips plan chooses from. A live view of
:data:`FORMAT_CLASSES` (``tuple(SINGLE_FORMATS)`` takes a snapshot)."""


def _sync_strip_blocks() -> None:
    Strips.block_formats = {name: FORMAT_CLASSES[name] for name in SINGLE_FORMATS}


_sync_strip_blocks()


RESERVED_NAMES = frozenset({"auto", "csr"})
"""The ``format=`` values that ask the selection to choose (:data:`clspmv.format_choice.CHOSEN`):
no format may be registered under them."""


def register(cls: type[Format]) -> type[Format]:
    """Add the format class ``cls`` under its :attr:`~Format.name` (usable as a class
    decorator): conversion, products, the model, the trial and the bench then take it.
    TypeError for anything but a :class:`Format` subclass, ValueError for a class without a
    name, a name of :data:`RESERVED_NAMES` or one already registered to another class,
    :class:`~clspmv.formats.costs.MissingCostHook` for a cost hook the time model needs that
    the class does not declare (:func:`~clspmv.formats.costs.check_cost_hooks`)."""
    if not (isinstance(cls, type) and issubclass(cls, Format)):
        raise TypeError(f"register takes a subclass of clspmv.formats.Format, got {cls!r}")
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise ValueError(f"format class {cls.__name__} has no name")
    if name in RESERVED_NAMES:
        raise ValueError(f"format name {name!r} is reserved: format={name!r} asks the selection "
                         "to choose; name the format class otherwise")
    if not issubclass(cls, Strips):  # a composite's blocks answer for it
        check_cost_hooks(cls)
    if FORMAT_CLASSES.get(name, cls) is not cls:
        raise ValueError(f"format {name!r} is already registered ({FORMAT_CLASSES[name].__name__})")
    FORMAT_CLASSES[name] = cls
    _sync_strip_blocks()
    return cls


def unregister(name: str) -> None:
    """Remove the format ``name`` added by :func:`register` (KeyError if none is)."""
    if name not in FORMAT_CLASSES:
        raise KeyError(f"no format {name!r} is registered; registered: "
                       f"{', '.join(FORMAT_CLASSES)}")
    del FORMAT_CLASSES[name]
    _sync_strip_blocks()


def format_class(name: str) -> type[Format]:
    """The class of the registered format ``name``; ValueError for an unknown one."""
    cls = FORMAT_CLASSES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown format {name!r}; choose one of {', '.join(FORMAT_CLASSES)}")
    return cls


def parameter_names(format: str) -> tuple[str, ...]:
    """The parameters of a format (those its ``from_csr`` takes after the matrix and layout)."""
    return FORMAT_CLASSES[format].parameter_names()


def convert(csr: sp.csr_matrix, format: str, layout: Layout, precision: Precision,
            column_map: object = None, owned: bool = False, shared: Format | None = None,
            **params: object) -> Format:
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

    ``shared``: a CSR kernel of ``csr`` made with the same ``precision`` and ``owned`` (and no
    column map), uploaded or not: a CSR-family ``format`` then reads its CSR arrays (only its own
    metadata is built, and uploaded by :meth:`Format.upload`); ValueError where it cannot
    (:func:`~clspmv.formats.csr.on_shared_store`).

    The format records ``params`` (:attr:`Format.requested`): converting again with them makes
    the same layout.

    Raises ValueError for an unknown format or parameter values the format refuses, TypeError
    for a parameter the format does not have or a value of the wrong type,
    :class:`~clspmv.errors.UnsuitableFormatError` when the format would pad absurdly,
    :class:`~clspmv.errors.IndexOverflowError` beyond 32-bit indices.
    """
    cls = format_class(format)
    if shared is not None:
        if shared.store is None:
            raise ValueError(f"format {shared.name!r} stores no CSR arrays for format "
                             f"{format!r} to share: convert without shared")
        if column_map is not None:
            raise ValueError("convert with shared takes no column_map: the shared CSR arrays "
                             "keep the one they were made with")
        fmt: Format = on_shared_store(cls, shared.store, layout, shared.name, **params)
        fmt.requested = dict(params)
        fmt.accumulate = precision.accumulate
        fmt.owned_arrays = owned
        return fmt
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


__all__ = ["FORMATS", "FORMAT_CLASSES", "RESERVED_NAMES", "SINGLE_FORMATS", "Format",
           "FormatNames", "Layout", "MissingCostHook", "convert", "format_class",
           "parameter_names", "register", "unregister"]
