"""Storage formats: one module per family, each class converting CSR and launching its kernel."""

from __future__ import annotations

from .base import Format, Layout
from .coo import Coo
from .csr import CsrAligned, CsrScalar, CsrVector
from .csr_adaptive import CsrAdaptive
from .csr_blocks import CsrBlocks
from .dia import Dia
from .ell import Ell, EllR, EllRT
from .hyb import Hyb
from .sell import Pjds, Sell

FORMAT_CLASSES: dict[str, type[Format]] = {
    cls.name: cls
    for cls in (Coo, CsrScalar, CsrVector, CsrAligned, CsrAdaptive, CsrBlocks, Ell, EllR, EllRT,
                Pjds, Sell, Hyb, Dia)
}

__all__ = ["FORMAT_CLASSES", "Format", "Layout"]
