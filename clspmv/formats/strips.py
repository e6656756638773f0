"""strips: the rows cut into contiguous blocks, each block stored in a format of its own.

The composite of ``spmv-model-autoselect.txt`` section 3.3: a matrix whose rows change structure
(a stencil on top of a power-law part, a band above a few very long rows) is cut at strip
boundaries into blocks, and each block takes the format that suits its rows. The plan, a list of
``(row_start, row_stop, format)`` or ``(row_start, row_stop, format, params)`` covering the rows
in order, is the ``blocks`` parameter of :meth:`Strips.from_csr` (the dynamic programme of
:func:`clspmv.model.strips.plan_strips` chooses one from the time models); without a plan the
matrix is one block in ``csr-vector``. A block's ``params`` are its format's own, plus
``work_group_size`` for a block launched with another work-group size than the matrix's layout.

Every block is an ordinary format converted from ``csr[row_start:row_stop]`` and launched as a
block of the larger matrix (``row0``, see :mod:`clspmv.formats.base`), all on one queue:

* ``launch``: each block writes its own rows of y, alpha and beta applied there;
* ``launch_t``: every block adds its ``A_b^T x_b`` into all of y; the first block applies beta,
  the others run with beta = 1 (which scales nothing: :meth:`Format.scale_y_t` skips it);
* ``launch_matmat``: each block's several-right-hand-sides kernel where every block has one
  (else :class:`clspmv.DeviceMatrix` runs one product per column);
* a column map is given to every block.

The traits are the blocks': explicit zeros are absent (``zeros_absent``) in the rows of a DIA
block, the transpose needs atomics where a block's does, and so on (set per matrix, on the
instance; the class attributes are those of the default plan).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import ClassVar

import numpy as np
import pyopencl as cl
import scipy.sparse as sp

from ..device import Device
from .base import Format, Layout, Triplets, check_column_map
from .checks import check_int
from .csr_store import total_nbytes
from .layout import check_work_group_size

DEFAULT_PLAN_FORMAT = "csr-vector"
"""The format of the one block of a ``strips`` matrix converted without a plan."""

Block = tuple[int, int, str, dict[str, object]]
"""``(row_start, row_stop, format, params)`` of one block of a plan."""


def check_plan(blocks: Sequence[Sequence[object]] | None, rows: int,
               formats: Sequence[str]) -> list[Block]:
    """``blocks`` as a list of :data:`Block`, or ValueError unless they cover rows ``0 ..
    rows - 1`` in order without gaps, each non-empty (one empty block for a matrix without
    rows) and in one of ``formats``. None is the default plan."""
    if blocks is None:
        return [(0, rows, DEFAULT_PLAN_FORMAT, {})]
    plan: list[Block] = []
    expect = 0
    for block in blocks:
        if not isinstance(block, (tuple, list)) or len(block) not in (3, 4):
            raise ValueError("each block of a strips plan is (row_start, row_stop, format) or "
                             f"(row_start, row_stop, format, params), got {block!r}")
        r0, r1, fmt = block[0], block[1], block[2]
        params = dict(block[3]) if len(block) == 4 else {}  # type: ignore[call-overload]
        if fmt not in formats:
            raise ValueError(f"block {block!r} of a strips plan: format must be one of "
                             f"{', '.join(formats)}, got {fmt!r}")
        if not isinstance(r0, (int, np.integer)) or not isinstance(r1, (int, np.integer)) \
                or r0 != expect or not (r0 < r1 or rows == 0 == r1):
            raise ValueError(f"the blocks of a strips plan must cover rows 0 to {rows} in order, "
                             f"each non-empty: block {block!r} should start at row {expect}")
        plan.append((int(r0), int(r1), str(fmt), params))
        expect = int(r1)
    if expect != rows or not plan:
        raise ValueError(f"the blocks of a strips plan must cover rows 0 to {rows}; they end at "
                         f"row {expect}")
    return plan


def row_slice(csr: sp.csr_matrix, start: int, stop: int) -> sp.csr_matrix:
    """Rows ``start .. stop-1`` of a canonical CSR matrix, canonical too (marked sorted without
    sorting again: a row slice of a sorted matrix stays sorted)."""
    part = csr[start:stop]
    part.has_sorted_indices = True
    return part


class Strips(Format):
    """Contiguous row blocks, each in its own format (see the module docstring)."""

    name = "strips"
    kernel_file = ""  # none of its own: the blocks launch their formats' kernels
    has_matmat = True  # the default plan's csr-vector; per matrix: every block has one
    block_formats: ClassVar[dict[str, type[Format]]] = {}
    """The formats a block may take, by name: every single format (set by
    :mod:`clspmv.formats` where it registers them, so that this module imports no registry)."""

    def __init__(self, shape: tuple[int, int], dtype: np.dtype, layout: Layout,
                 blocks: list[tuple[int, int, Format]], plan: list[Block],
                 strip_rows: int = 0) -> None:
        self.blocks = blocks
        """``(row_start, row_stop, format)`` of every block, the formats converted."""
        # params hold the plan as given (conversion parameters: from_csr(**params) rebuilds it)
        super().__init__(shape, dtype, layout, {}, blocks=[list(b) for b in plan],
                         strip_rows=strip_rows)
        self.requested = dict(self.params)  # the plan: all a conversion again needs
        self.own_nbytes = total_nbytes(f for _, _, f in blocks)
        self.zeros_absent = any(f.zeros_absent for _, _, f in blocks)
        self.forward_atomics = any(f.forward_atomics for _, _, f in blocks)
        self.forward_roundings = max((f.forward_roundings for _, _, f in blocks), default=1)
        self.transpose_atomics = any(f.transpose_atomics for _, _, f in blocks)
        self.has_matmat = all(f.has_matmat for _, _, f in blocks)

    @property
    def accumulate(self) -> np.dtype:  # type: ignore[override]
        """The type the blocks' kernels sum in (set on every block)."""
        return self._accumulate

    @accumulate.setter
    def accumulate(self, value: np.dtype) -> None:
        self._accumulate = np.dtype(value)
        for _, _, fmt in getattr(self, "blocks", ()):
            fmt.accumulate = self._accumulate

    @property
    def plan(self) -> list[Block]:
        """``(row_start, row_stop, format, params)`` of every block, as given to
        :meth:`from_csr` (also ``params["blocks"]``); the converted blocks' own parameters are
        in :attr:`blocks`."""
        return [(r0, r1, fmt, dict(params)) for r0, r1, fmt, params in self.params["blocks"]]

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout,
                 blocks: Sequence[Sequence[object]] | None = None, strip_rows: int = 0
                 ) -> Strips:
        converted = []
        plan = check_plan(blocks, csr.shape[0], list(cls.block_formats))
        for r0, r1, fmt, given in plan:
            params = dict(given)
            wg = params.pop("work_group_size", None)
            block_layout = layout if wg is None else replace(
                layout, work_group_size=check_work_group_size(wg))
            part = row_slice(csr, r0, r1)
            converted.append((r0, r1, cls.block_formats[fmt].from_csr(part, block_layout,
                                                                  **params)))
        return cls(csr.shape, csr.dtype, layout, converted, plan,
                   check_int("strip_rows", strip_rows))

    @classmethod
    def of_uploaded(cls, shape: tuple[int, int], layout: Layout,
                    blocks: Sequence[tuple[int, int, Format]], strip_rows: int = 0) -> Strips:
        """A strips matrix of blocks converted (with their formats' default parameters) and
        uploaded already, all to one device, of one value type and sum type (the winners of a
        trial of every block: :mod:`clspmv.model.strips_trial`): ``blocks`` are
        ``(row_start, row_stop, format)`` covering the rows in order. Its plan is read off the
        blocks (a block launched with another work-group size than ``layout``'s records it),
        so that :meth:`from_csr` with :attr:`params` builds the same matrix again. ValueError
        for blocks that are not uploaded, or not alike."""
        formats = [f for _, _, f in blocks]
        if not formats or any(f.host is not None for f in formats):
            raise ValueError("the blocks of a strips matrix made of uploaded ones must all be "
                             "uploaded")
        first = formats[0]
        if any(f.device is not first.device or f.dtype != first.dtype
               or f.accumulate != first.accumulate for f in formats):
            raise ValueError("the uploaded blocks of a strips matrix must share one device, "
                             "value type and sum type")
        plan = check_plan([(r0, r1, f.name, {} if f.layout.work_group_size
                            == layout.work_group_size else {"work_group_size":
                                                            f.layout.work_group_size})
                           for r0, r1, f in blocks], shape[0], list(cls.block_formats))
        accumulate = first.accumulate  # the constructor sets the value type on every block
        out = cls(shape, first.dtype, layout, list(blocks), plan, int(strip_rows))
        out.accumulate = accumulate
        out.device, out.host = first.device, None
        return out

    def set_column_map(self, column_map: np.ndarray) -> None:
        self.column_map = check_column_map(column_map, self.shape[1])
        for _, _, fmt in self.blocks:
            fmt.set_column_map(self.column_map)
        self.own_nbytes = total_nbytes(f for _, _, f in self.blocks)

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        parts = [fmt.to_coo({key.split("/", 1)[1]: a for key, a in arrays.items()
                             if key.split("/", 1)[0] == str(i)})
                 for i, (_, _, fmt) in enumerate(self.blocks)]
        return (np.concatenate([rows.astype(np.int64) + r0
                                for (rows, _, _), (r0, _, _) in zip(parts, self.blocks,
                                                                   strict=True)]),
                np.concatenate([cols for _, cols, _ in parts]),
                np.concatenate([vals for _, _, vals in parts]))

    # -- device ---------------------------------------------------------------------------
    def prepare_kernels(self) -> None:
        assert self.device is not None
        for _, _, fmt in self.blocks:
            fmt.compile(self.device)

    def upload(self, device: Device) -> None:
        if self.host is None:
            raise RuntimeError("format already uploaded")
        for _, _, fmt in self.blocks:
            fmt.owned_arrays = self.owned_arrays  # the blocks' arrays come from the same csr
            fmt.upload(device)
        self.device = device
        self.host = None
        self.own_nbytes = total_nbytes(f for _, _, f in self.blocks)

    def download(self) -> dict[str, np.ndarray]:
        """Every block's arrays, keyed ``"<block index>/<array>"``."""
        return {f"{i}/{key}": a for i, (_, _, fmt) in enumerate(self.blocks)
                for key, a in fmt.download().items()}

    def launch(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        return [e for r0, _, fmt in self.blocks
                for e in fmt.launch(queue, x, y, alpha, beta, row0 + r0)]

    def launch_t(self, queue, x, y, alpha, beta, row0=0) -> list[cl.Event]:
        one = beta.dtype.type(1)
        return [e for i, (r0, _, fmt) in enumerate(self.blocks)
                for e in fmt.launch_t(queue, x, y, alpha, beta if i == 0 else one, row0 + r0)]

    def launch_matmat(self, queue, X, Y, strides, alpha, beta, row0=0) -> list[cl.Event]:
        if not self.has_matmat:
            lacking = sorted({f.name for _, _, f in self.blocks if not f.has_matmat})
            raise NotImplementedError(f"blocks in {', '.join(lacking)} have no "
                                      "several-right-hand-sides kernel")
        return [e for r0, _, fmt in self.blocks
                for e in fmt.launch_matmat(queue, X, Y, strides, alpha, beta, row0 + r0)]
