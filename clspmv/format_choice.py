"""What :meth:`clspmv.DeviceMatrix.from_scipy`'s ``format`` names: one storage format, ``"csr"``
(the CSR kernel of least predicted time) or ``"auto"`` (the format of least predicted time); the
check of the format parameters given with it, made before any conversion or measurement; and
the choice of the two chosen kinds through the library's one selection path,
:func:`clspmv.model.select`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping

import scipy.sparse as sp

from .device import Device
from .formats import FORMAT_CLASSES, parameter_names
from .model import Selection, calibration, select
from .precision import Precision


def csr_kernels() -> tuple[str, ...]:
    """The formats that store CSR's own arrays, each with its own kernel (those named
    ``csr-*`` among the formats registered now): ``format="csr"`` takes the one of least
    predicted time."""
    return tuple(name for name in FORMAT_CLASSES if name.startswith("csr-"))


CHOSEN: dict[str, Callable[[], tuple[str, ...]] | None] = {"auto": None, "csr": csr_kernels}
"""The ``format`` values that ask the selection to choose, and what gives the formats each
chooses among (None: every format, row strips included)."""


def check_format(format: object) -> None:
    """ValueError unless ``format`` is a storage format's name, ``"csr"`` or ``"auto"``."""
    if not isinstance(format, str) or (format not in FORMAT_CLASSES and format not in CHOSEN):
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMAT_CLASSES)}, "
                         "'csr' (the fastest predicted CSR kernel) or 'auto'")


def check_parameters(format: str, params: Mapping[str, object], own: Iterable[str]) -> None:
    """Refuse format parameters that ``format`` does not take, naming them and the valid ones
    (``own``: the keyword arguments of the caller itself, listed for a chosen format).

    A named format: TypeError for a parameter it lacks (as Python says of an unexpected keyword
    argument), listing its parameters. ``"auto"`` or ``"csr"``: ValueError for any format
    parameter, naming the formats that have it, since the format is not known until chosen."""
    own_list = ", ".join(own)
    if format not in CHOSEN:
        names = parameter_names(format)
        unknown = [name for name in params if name not in names]
        if unknown:
            raise TypeError(f"format {format!r} got an unexpected keyword argument "
                            f"{', '.join(map(repr, unknown))}; its parameters: "
                            f"{', '.join(names) or 'none'} (and from_scipy's own: {own_list})")
        return
    if not params:
        return
    owners = ["'{}' is a parameter of {}".format(
        name, ", ".join(f for f in FORMAT_CLASSES if name in parameter_names(f)) or "no format")
        for name in params]
    raise ValueError(f"format parameters ({', '.join(params)}) belong to a named format; "
                     f"format={format!r} takes none ({'; '.join(owners)}): name the format "
                     f"(format=...) or leave them out (from_scipy's own: {own_list})")


def choose(format: str, csr: sp.csr_matrix, device: Device, precision: Precision,
           expected_products: int | None, trial: bool | None, owned: bool) -> Selection:
    """The selection of ``format`` (``"auto"`` or ``"csr"``, see :data:`CHOSEN`) for the
    canonical CSR matrix ``csr`` (``owned``: a trial may keep its arrays, which are clspmv's
    own copy), as :func:`clspmv.model.select` makes it."""
    candidates = CHOSEN[format]
    if candidates is None:
        return select(csr, device, precision, expected_products, trial=trial, owned=owned)
    among = candidates()
    # select() takes no list of candidates. It refuses a format its calibration has no model
    # of, so the device's calibration cut down to the candidates' models makes it choose among
    # them only (trial included), without a strips plan (blocks of any format); the refusals
    # this makes are dropped from the predictions it returns.
    full = calibration(device)
    only = dataclasses.replace(full, kernel={k: v for k, v in full.kernel.items() if k in among})
    chosen = select(csr, device, precision, expected_products, calibration_=only, strips=False,
                    trial=trial, owned=owned)
    return dataclasses.replace(
        chosen, predictions={k: p for k, p in chosen.predictions.items() if k in among},
        why=f"format={format!r}, among {', '.join(among)}: {chosen.why}")
