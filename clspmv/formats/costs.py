"""What a format tells the time model (:mod:`clspmv.model`): the hooks of :class:`FormatCosts`,
the base of :class:`~clspmv.formats.base.Format`. The model holds no format's name: it iterates
:data:`clspmv.formats.FORMAT_CLASSES` and asks each class for the slots it stores, the bytes its
product reads, the kernels it launches, its work-items and work-items per row, whether it
refuses a matrix, its family for the trial, and a few yes/no facts.

A hook a format must answer (:attr:`FormatCosts.trial_family`,
:attr:`FormatCosts.conversion_kind`, :meth:`FormatCosts.matrix_bytes`, and
:meth:`FormatCosts.slots` of a :attr:`FormatCosts.padded` format) fails with
:class:`MissingCostHook` naming the format and the hook until the class declares it: a new
format is never silently costed like another. The others have the default the docstring says.

Besides the costs, what the calibration's probes ask (:attr:`FormatCosts.probed_in`: the few
formats a probe times, :data:`PROBES`) and whether a format's default layout follows the
device's measured ELL order (:meth:`FormatCosts.follows_ell_order`).

The hooks read the features of :mod:`clspmv.model.features` (``f``: a
:class:`~clspmv.model.features.Features`) and, for the slots, a :class:`RowShape` that the model
makes of a whole matrix's row lengths or of a block of row strips'; the formats import nothing
of the model (its types only, for the annotations).
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import TYPE_CHECKING, ClassVar, Protocol

import numpy as np

from ..errors import ClspmvError, UnsuitableFormatError
from .conversion import check_padding, round_up
from .kernels import INDEX_DTYPE
from .layout import Layout

if TYPE_CHECKING:
    from ..model.features import Features
    from .base import Format

CONVERSION_KINDS = ("copy", "layout")
"""Values of :attr:`FormatCosts.conversion_kind`: ``"copy"`` for a conversion that is little
more than a copy of the CSR arrays, ``"layout"`` for one that lays the entries out anew."""


PROBES = ("reference", "ell order", "quick cpu", "quick gpu", "quick cpu large",
          "quick cpu large band", "quick cpu large shared", "quick cpu blocks")
"""The calibration's probes that time a few chosen formats rather than every one
(:attr:`FormatCosts.probed_in`): ``"reference"`` the reference product timed between the
calibration's matrices and the x-cache probe (:mod:`clspmv.model.probes`; exactly one format),
``"ell order"`` the probe of the device's ELL order (:mod:`clspmv.model.order_probe`; exactly
one format, taking ``row_major``), ``"quick cpu"`` and ``"quick gpu"`` the quick calibration's
probes per device class (:mod:`clspmv.model.quick`), ``"quick cpu large"`` its probes of large
matrices of irregular rows on CPUs (the formats whose products there the probes in the cache
misjudge most), ``"quick cpu large band"`` its large band on CPUs (the formats of diagonals),
``"quick cpu large shared"`` the formats also timed on that band where a format's own part of
the correction beyond the cache follows the gathers (the part every format shares:
:func:`clspmv.model.quick_large.large_probe_plan`), ``"quick cpu blocks"`` its probe of a matrix
of dense blocks on CPUs (the formats that take only such matrices, each fitted alone to it)."""

NEEDED = {"matrix_bytes": "the bytes of the matrix its product reads",
          "slots": "the slots it stores, padding included",
          "padded_bytes": "the bytes its padding check weighs"}
"""What each cost method a format may have to define answers (for the error naming it)."""


class MissingCostHook(ClspmvError, AttributeError):
    """A format class does not declare a cost hook the time model needs (an AttributeError, so
    that ``hasattr`` and ``getattr`` with a default see the hook as absent)."""


class RowShape(Protocol):
    """What the slot formulas (:meth:`FormatCosts.slots`) read of the row lengths of a matrix
    or of a block of its rows, on a device of SIMD width :attr:`simd_width` (the formats' C)."""

    rows: int
    entries: int
    simd_width: int
    longest: int
    """The longest row (0 without rows)."""
    constant: bool
    """Whether every row has the same length."""
    hyb_width: int
    """HYB's ELL width for these rows (:attr:`clspmv.model.features.Features.hyb_width`)."""
    hyb_beyond: int
    """Entries beyond :attr:`hyb_width` in their rows (HYB's COO part)."""
    diagonals: int
    """Occupied diagonals (of the whole matrix for the main part of a split format)."""

    def sorted_slots(self) -> int:
        """Slots of the rows sorted by length, in slices of C rows padded to their longest."""

    def aligned_slots(self, alignment: int) -> int:
        """Slots of every row padded to a multiple of ``alignment``."""


class _Required:
    """A class attribute a format must set: reading it where unset raises
    :class:`MissingCostHook` naming the format and the attribute."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, obj: object, owner: type) -> object:
        raise missing(owner, self.name, self.what)


def missing(cls: type, hook: str, what: str) -> MissingCostHook:
    """The error of a format class without the cost hook ``hook``."""
    return MissingCostHook(
        f"format {getattr(cls, 'name', cls.__name__)!r} ({cls.__name__}) declares no {hook}: "
        f"{what}; define it on the class for the time model (clspmv.formats.costs)")


class FormatCosts:
    """The cost hooks of a format (see the module docstring)."""

    name: ClassVar[str]

    trial_family: ClassVar[str] = _Required(  # type: ignore[assignment]
        "its family for the trial (clspmv.model.trial tries each family's best: 'csr' for "
        "kernels walking CSR rows, or the name of a family of padded layouts)")
    """Formats whose times move together (:mod:`clspmv.model.trial` tries each family's best
    predicted ones): ``"csr"`` for the kernels that walk CSR rows or entries, else a family of
    padded layouts (``"ell"``, ``"sell"``, ``"pjds"``)."""

    conversion_kind: ClassVar[str] = _Required(  # type: ignore[assignment]
        f"how its conversion costs, one of {CONVERSION_KINDS}")
    """One of :data:`CONVERSION_KINDS`: the quick default calibration costs a ``"copy"`` of the
    CSR arrays at half the rate of a new ``"layout"``."""

    pads: ClassVar[bool] = False
    """True for a format that pads to the longest row or to whole diagonals (ELLPACK family,
    DIA): it refuses a matrix (:class:`~clspmv.errors.UnsuitableFormatError`,
    :func:`~clspmv.formats.conversion.check_padding`) whose padded layout would exceed
    :data:`~clspmv.formats.conversion.MAX_PADDING_RATIO` times CSR's bytes (and
    :data:`~clspmv.formats.conversion.PADDING_FLOOR`); :meth:`refusal` then weighs
    :meth:`padded_bytes`."""
    padded: ClassVar[bool] = False
    """Whether the format stores padding slots besides the entries (then :meth:`slots` must be
    defined and the features count them)."""
    counts_diagonals: ClassVar[bool] = False
    """Whether the slots grow with the occupied diagonals, which the features count on a sample
    of rows (a lower bound: the model counts them all before taking the format)."""
    x_streamed: ClassVar[bool] = False
    """Whether the kernel reads x in streams (along diagonals) rather than gathering it entry by
    entry: the model's ``xbytes`` term (:mod:`clspmv.model.timemodel`) is then 0."""
    even_loops: ClassVar[bool] = False
    """Whether the kernel's loops do not end with each row's length in row order (rows run to
    one width, or sorted by length): the model's ``length changes`` term is then 0."""
    walks_longest: ClassVar[bool] = False
    """Whether every work-item walks as many steps as the longest row (``ell``: every row padded
    to it; ``dia``: every occupied diagonal): the model's ``longest`` is then work every
    work-item does and the device shares, priced against the whole device's streaming bandwidth
    like the rest, not one compute unit's critical path
    (:func:`clspmv.model.prior.format_scales`)."""
    splits_long_rows: ClassVar[bool] = False
    """Whether the format moves rows beyond a limit to a COO tail
    (:mod:`clspmv.formats.long_rows`): the model costs the tail with :attr:`tail_format`."""
    tail_format: ClassVar[type[Format] | None] = None
    """The format the tail of long rows is costed as, where :attr:`splits_long_rows`."""
    lockstep_rows: ClassVar[bool] = True
    """Whether neighbouring rows share SIMD lanes (``lockstep`` of
    :func:`~clspmv.formats.long_rows.long_row_limit`; where the device vectorises across
    work-items, whether the model's ``idle lanes`` term, :mod:`clspmv.model.timemodel`, counts)."""

    beyond_cache_like: ClassVar[str | None] = None
    """The format whose large probes' correction beyond the cache
    (:func:`clspmv.model.quick_large.large_correction`) this one takes where no large probe
    times it itself; None: its :attr:`trial_family`'s."""

    probed_in: ClassVar[tuple[str, ...]] = ()
    """The calibration probes of :data:`PROBES` that time this format. Not inherited: a class
    declares its own or has none (:meth:`__init_subclass__`), so that a format derived from a
    probed one under another name is no probe's format unless it says so."""

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "probed_in" not in vars(cls):
            cls.probed_in = ()

    borrows_prior: ClassVar[bool] = False
    """Whether the shipped prior of the quick calibration holds for this library format the
    shape a format it does not name would borrow (:data:`clspmv.model.prior.PRIOR_FILE`: a
    format added after the prior's full calibrations were measured, which none of them timed)."""

    kernel_variants: ClassVar[tuple[str, ...]] = ()
    """Kernel variants of the format (each named by the parameter that selects it) whose times
    differ from those the quick calibration's prior was derived from: the prior keeps a speed-up
    per variant and format (:data:`clspmv.model.prior.KERNEL_CHANGES`)."""

    @classmethod
    def kernel_variant(cls, layout: Layout) -> str | None:
        """The one of :attr:`kernel_variants` the format runs by default on ``layout``; None for
        the kernel the prior's sources timed."""
        return None

    @classmethod
    def follows_ell_order(cls) -> bool:
        """Whether the format's default layout follows the device's measured ELL order
        (:mod:`clspmv.ell_order`): where its ``from_csr`` takes ``row_major`` with the default
        None, the rule of :func:`~clspmv.formats.ell.row_major_layout` (read from the signature,
        so that the rule and the model cannot disagree)."""
        from_csr = getattr(cls, "from_csr", None)
        if from_csr is None:
            return False
        row_major = inspect.signature(from_csr).parameters.get("row_major")
        return row_major is not None and row_major.default is None

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """Slots (entries plus padding) the format stores for rows of ``shape``: the entries
        unless :attr:`padded`."""
        if cls.padded:
            raise missing(cls, "slots()", NEEDED["slots"])
        return shape.entries

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        """Device bytes of the matrix that the product reads for features ``f`` (values and
        indices of the slots plus the per-row arrays)."""
        raise missing(cls, "matrix_bytes()", NEEDED["matrix_bytes"])

    @classmethod
    def threads_per_row(cls, f: Features) -> int:
        """Work-items sharing a row in the default layout: 1 (one row per work-item)."""
        return 1

    @classmethod
    def launches(cls, f: Features, layout: Layout) -> int:
        """Kernels the forward product enqueues for features ``f`` with ``layout``: 1."""
        return 1

    @classmethod
    def work_items(cls, f: Features, layout: Layout) -> float:
        """Work-items of the main kernel: the rows times :meth:`threads_per_row`."""
        return float(f.rows) * cls.threads_per_row(f)

    @classmethod
    def idle_lanes(cls, f: Features) -> float:
        """Slots the lanes shared by neighbouring rows spend on no entry (the model's ``idle
        lanes`` term, :mod:`clspmv.model.timemodel`): the rows taken in order in groups, each
        group run to its longest row (:attr:`~clspmv.model.features.Features.lane_padding`)."""
        return float(f.lane_padding)

    @classmethod
    def padded_bytes(cls, f: Features) -> int:
        """Bytes :func:`~clspmv.formats.conversion.check_padding` weighs in ``from_csr`` (read
        by :meth:`refusal` where the format :attr:`pads`)."""
        raise missing(cls, "padded_bytes()", NEEDED["padded_bytes"])

    @classmethod
    def refusal(cls, f: Features, work_group_size: int) -> str | None:
        """Why the format refuses a matrix of features ``f`` (the message ``from_csr`` raises),
        or None: the padding bound where it :attr:`pads`."""
        return padding_refusal(cls.name, cls.padded_bytes(f), f) if cls.pads else None

    @classmethod
    def chosen_params(cls, f: Features) -> dict[str, object]:
        """The parameters ``format="auto"`` passes to ``from_csr`` when it takes the format for
        a matrix of features ``f``: what the features already measured of the matrix and the
        conversion would otherwise measure again (none by default)."""
        return {}


def padding_refusal(name: str, padded_bytes: int, f: Features) -> str | None:
    """The message :func:`~clspmv.formats.conversion.check_padding` raises for format ``name``
    storing ``padded_bytes`` for a matrix of features ``f``, or None where it accepts them."""
    stand_in = SimpleNamespace(nnz=f.entries, shape=(f.rows, f.cols),
                               data=np.empty(0, np.dtype(f"f{f.itemsize}")))
    try:
        check_padding(name, padded_bytes, stand_in)  # type: ignore[arg-type]
    except UnsuitableFormatError as err:
        return str(err)
    return None


def padded_row_count(f: Features) -> int:
    """The rows rounded up to whole SIMD-width groups: the padded layouts' row count."""
    return round_up(f.rows, f.simd_width)


def check_cost_hooks(cls: type[FormatCosts]) -> None:
    """Raise :class:`MissingCostHook` unless ``cls`` declares every hook a format must answer
    (:attr:`~FormatCosts.trial_family`, :attr:`~FormatCosts.conversion_kind`,
    :meth:`~FormatCosts.matrix_bytes`, and :meth:`~FormatCosts.slots` where
    :attr:`~FormatCosts.padded`, :meth:`~FormatCosts.padded_bytes` where
    :attr:`~FormatCosts.pads`): before the model would ask it."""
    _ = cls.trial_family, cls.conversion_kind
    if cls.conversion_kind not in CONVERSION_KINDS:
        raise ValueError(f"format {cls.name!r} declares conversion_kind "
                         f"{cls.conversion_kind!r}; choose one of {', '.join(CONVERSION_KINDS)}")
    for name, due in (("matrix_bytes", True), ("slots", cls.padded), ("padded_bytes", cls.pads)):
        if due and getattr(cls, name).__func__ is getattr(FormatCosts, name).__func__:
            raise missing(cls, f"{name}()", NEEDED[name])


def slot_bytes(f: Features) -> int:
    """Bytes of one slot: a value and a column index."""
    return f.itemsize + INDEX_DTYPE.itemsize


def csr_bytes_read(f: Features, slots: int) -> int:
    """Bytes of ``slots`` slots and the row pointers: what a CSR kernel reads of the matrix."""
    return slots * slot_bytes(f) + (f.rows + 1) * 4


__all__ = ["CONVERSION_KINDS", "PROBES", "FormatCosts", "MissingCostHook", "RowShape",
           "check_cost_hooks", "csr_bytes_read", "missing", "padded_row_count", "padding_refusal",
           "slot_bytes"]
