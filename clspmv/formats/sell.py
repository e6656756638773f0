"""SELL-C-sigma and pJDS (``pjds-multigpu.txt`` section 2): rows sorted by length, cut into
slices of C rows (C = the device's SIMD width), each slice column-major and padded only to its own
longest row. SELL sorts within windows of sigma rows; pJDS sorts all rows (sigma = n). The row
permutation is applied by the kernel, so results come back in the caller's row order. Rows
longer than ``long_rows`` go to a COO tail (:mod:`~clspmv.formats.long_rows`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .base import (
    INDEX_DTYPE,
    Layout,
    Triplets,
    entry_index,
    round_up,
    row_lengths,
    scalar,
)
from .checks import check_int
from .conversion import check_flag
from .costs import RowShape, padded_row_count, slot_bytes
from .layout import LOCKSTEP_SIMD, vector_lanes
from .long_rows import AUTO, LongRowSplit, split_long_rows
from .row_kernels import RowKernels

if TYPE_CHECKING:
    from ..model.features import Features

SIGMA_PADDING_SLACK = 0.05
"""``sell`` picks the smallest sorting window whose padding is within this share of the entries of
the least padding any window gives (that of pJDS, sigma = n)."""
SPREAD_EXCESS = 1.2
"""By default, on CPUs, the slices are dealt when the first run of work-groups a thread takes
(:func:`first_claim`) holds more than this many times a thread's share of the slots."""
SPREAD_MIN_GROUPS = 4
"""Work-groups per thread a product needs for the deal by default: fewer leave no run of
work-groups to balance."""
SLICE_VECTORS = (2, 4, 8, 16)
"""Slice heights C the work-item-per-slice kernel takes (the vector widths its loop over lanes
asks the compiler for)."""
SLICES_PER_GROUP = 1
"""Slices per work-group of the work-item-per-slice kernel (``slice_items``): one. PoCL runs a
work-group on one thread, so a work-group is the smallest share of the product its threads
balance; with a work-group of rows (the layout's size / C = 16 slices) the slices of a
window's longest rows, sorted next to each other, made one thread's work. Side by side, kernel
time over ``csr-blocks``' with 16 slices a group and with one, the deal decided as here
(``reports/experiments/2026-11-30-slice-groups``): on the 16-core Xeon of the GPU node (PoCL 5.0,
every matrix in its cache) ``pjds`` on R-MAT graphs 1.28-1.53 -> 0.71-0.87, on power-law rows
with hubs of 16 k entries 1.69 -> 0.70, ``sell`` 1.81-2.18 -> 0.74-0.83 on R-MAT (scale 19) and
those rows (R-MAT scale 18 stays at 1.8); on the 2-core Zen 4, 12 matrices, ``sell`` within 5 %
either way, ``pjds`` 0-8 % slower on power-law and Chung-Lu rows under PoCL 3.1 and 0-6 %
faster under PyPI's 3.0. Whether the slices are dealt still weighs the runs of work-groups of
rows a thread takes (:func:`spread_order`)."""


def slices_by_default(layout: Layout) -> bool:
    """Whether the forward product runs a work-item per slice (``slice_items``) by default: where
    work-items run one after another (not :attr:`~Layout.lockstep`), the implementation does
    not vectorise across them itself and compiles the slices well
    (:attr:`~Layout.gathers_slices`: PoCL from 3.0 on), and C is a vector length
    (:data:`SLICE_VECTORS`).

    Why: there a work-item per row walks its row in scalar loads, while a work-item per slice
    loads a column of the slice's C rows as one vector of values and one of indices and gathers
    x for all C at once. Against the row kernel, geometric means of sell / pjds (float64, C = 16,
    the default deal; ``reports/experiments/2026-11-29-sell-slice-items``): on the 2-core Xeon
    (PoCL 3.1) 1.40 / 1.45x as fast over the 21 matrices of the offsuite and cpu suites (four of
    them the kernel was written on), 1.22 / 1.18x over the 20 of heldout and real (worst 0.96 /
    0.81: pjds on a matrix of 30 % empty rows); on the 16-core Xeon of the GPU node (PoCL 5.0)
    1.24 / 1.28x over the 33 generated ones (worst 0.98 / 0.97); under PyPI's PoCL 3.0-rc2 (LLVM
    14) 0.82 / 0.83x over the offsuite while the slice kernel used OpenCL vectors, which LLVM 14
    compiled without gathers, 1.35 / 1.32x (1.07-2.01 / 0.89-2.22x) on six irregular matrices of
    no suite with the loop over lanes it has now
    (``reports/experiments/2026-11-30-slice-lane-loop``). Intel's CPU runtime already runs 8 or
    16 rows' work-items in vector lanes, and GPUs run them in lockstep: the row kernel there."""
    return (not layout.lockstep and not layout.vectorises_work_items and layout.gathers_slices
            and layout.simd_width in SLICE_VECTORS)


def slice_height(layout: Layout, itemsize: int) -> int:
    """C, the rows of a slice, for values of ``itemsize`` bytes: the layout's SIMD width, except
    where the implementation vectorises across work-items (:attr:`~Layout.vectorises_work_items`:
    Intel's CPU runtime, whose SIMD width reads 1), there the work-items whose values fill one
    vector (:func:`~clspmv.formats.layout.vector_lanes`: 8 in float64, 16 in float32), so that the
    row kernel's work-items of one vector load C consecutive slots of each column, where with
    C = 1 each read a slot of a slice of its own. Kernel times on the 2-core Xeon (Intel's
    runtime, float64, the offsuite and cpu suites:
    ``reports/experiments/2026-11-29-intel-slice-height``), C = 1 over C = 8: ``sell`` 1.30 in
    geometric mean, 2.0-3.6 on R-MAT, power-law and Chung-Lu rows (R-MAT scale 18: 20.7 ms to
    5.8), 0.80-0.88 on stencils, blocks and rows of constant length (where ``csr-merge`` and
    ``csr-blocks`` run 1.2-2x faster than either); ``pjds`` 1.10 (0.82-2.13). (The time model
    still counts such a slice's padding at the SIMD width, none: with rows sorted by length,
    slices of 8 pad 0-5 % of the entries of the offsuite's irregular matrices.)"""
    return vector_lanes(itemsize) if layout.vectorises_work_items else layout.simd_width


def slice_padding(lengths: np.ndarray, c: int, sigma: int) -> int:
    """Padding slots of SELL-C-sigma for these row lengths (sorting only, no permutation kept)."""
    n = lengths.size
    if n == 0:
        return 0
    window = min(sigma, n)
    windows = np.zeros(round_up(n, window), np.int64)
    windows[:n] = lengths
    ordered = -np.sort(-windows.reshape(-1, window), axis=1).ravel()[:n]
    slices = np.zeros(round_up(n, c), np.int64)
    slices[:n] = ordered
    return int((slices.reshape(-1, c).max(axis=1) * c).sum() - lengths.sum())


def choose_sigma(lengths: np.ndarray, c: int) -> int:
    """The sorting window for SELL-C-sigma, from the spread of the row lengths.

    Sorting removes padding but scatters neighbouring rows over the slices (y is written, and x
    often read, with less locality), so the window should be as small as the row lengths allow.
    Rows of equal length need none (sigma = 1). Otherwise the candidates are 1, C, 2C, 4C, ...,
    and the first whose padding is within :data:`SIGMA_PADDING_SLACK` of the entries of pJDS's
    padding (sigma = n, the least possible) is taken. Only row statistics decide; the sorts cost
    O(n log sigma) each and stop at the first window that is good enough.
    """
    n = lengths.size
    if n <= 1 or lengths.min() == lengths.max():
        return 1
    least = slice_padding(lengths, c, n)
    allowed = least + SIGMA_PADDING_SLACK * max(int(lengths.sum()), 1)
    sigma = 1
    while sigma < n and slice_padding(lengths, c, sigma) > allowed:
        sigma = c if sigma == 1 else 2 * sigma
    return min(sigma, round_up(n, c))


def first_claim(groups: int, threads: int) -> int:
    """The work-groups of a kernel of ``groups`` that the first of ``threads`` PoCL threads takes
    at once (PoCL 3's pthread device, ``get_wg_index_range``: up to ``ceil(groups / threads)``,
    at most 32 per thread where there are at most 256 per thread squared, else 256 per
    thread)."""
    limit = 32 * threads if groups <= 256 * threads * threads else 256 * threads
    return min(limit, -(-groups // threads))


def spread_order(widths: np.ndarray, layout: Layout, force: bool = False,
                 c: int | None = None) -> np.ndarray | None:
    """An order of the slices of ``widths`` (each slice's longest row, in sorted order) that deals
    them over the work-group range: slice ``k + 1`` sits ``stride`` positions after slice ``k``
    (``stride = ceil(sqrt(slices))``), so every run of positions holds long and short slices
    alike. None (the sorted order kept) unless ``force`` or the product has at least
    :data:`SPREAD_MIN_GROUPS` work-groups per thread (``layout.compute_units``) and the first
    claim of work-groups (:func:`first_claim`) holds more than :data:`SPREAD_EXCESS` times a
    thread's share of the slots. ``c``: rows per slice (default: the layout's SIMD width).

    Why: PoCL's CPU device hands its threads runs of consecutive work-groups, the first up to
    ``1 / threads`` of them, and sorting by length puts the longest rows in the first
    work-groups: one thread then does most of the product while the others wait. pJDS dealt
    against sorted, float64 (``reports/2026-11-27-cpu-pjds-spread``): on the 2-core Zen 5
    (PoCL 3.1) R-MAT graphs of 6-12 M entries ran 1.45-1.96x as fast, power-law and stacked
    matrices of 2.6-6 M 1.37-1.50x, a Chung-Lu graph of 4.6 M 1.21x, each near the first
    claim's excess (1.23-1.93); on the 16-core Xeon of the H200 node (PoCL 5.0) the same
    matrices 1.9-3.9x, a Chung-Lu graph of 0.3 M entries 1.5x (on the Zen 5 products of
    0.1-0.5 ms went 0.89-1.44 in two runs). Dealing scatters rows that sorting left in order: where
    the order spreads the work already (rows of equal length: Poisson, bands, stencils, the
    arrow) the deal took pJDS 0.6-0.96x as fast on the Xeon, so only orders that concentrate
    the work are dealt. The work-groups weighed are of the layout's size in rows (the row
    kernel's); the slice kernel runs single slices (:data:`SLICES_PER_GROUP`), and weighing
    those left undealt power-law rows that the deal ran 7-11 % faster on the 2-core Zen 4
    (PoCL 3.1, ``reports/experiments/2026-11-30-slice-groups``)."""
    slices = widths.size
    threads = layout.compute_units
    per_group = max(layout.work_group_size // (c or layout.simd_width), 1)
    groups = -(-slices // per_group)
    if slices < 2 or not force and (threads < 2 or groups < SPREAD_MIN_GROUPS * threads):
        return None
    claimed = widths[:first_claim(groups, threads) * per_group].sum()
    if not force and claimed * threads <= SPREAD_EXCESS * widths.sum():
        return None
    stride = int(np.ceil(np.sqrt(slices)))
    return np.argsort(np.arange(slices) % stride, kind="stable")


def sort_rows(lengths: np.ndarray, sigma: int) -> np.ndarray:
    """Slot-to-row permutation: rows by decreasing length within windows of ``sigma`` rows."""
    n = lengths.size
    if sigma <= 1:
        return np.arange(n, dtype=np.int64)
    longest = int(lengths.max()) if n else 0
    # one stable sort on (window, decreasing length): what np.lexsort((-lengths, window)) gives
    key = np.arange(n, dtype=np.int64) // sigma * (longest + 1) + (longest - lengths)
    return np.argsort(key, kind="stable").astype(np.int64)


class Sell(LongRowSplit, RowKernels):
    """SELL-C-sigma with C = SIMD width and a sorting window sigma (a multiple of C, or 1;
    by default chosen from the row lengths by :func:`choose_sigma`)."""

    name = "sell"
    kernel_file = "sell.cl"
    family = "sell"
    trial_family = "sell"
    conversion_kind = "layout"
    padded = True
    even_loops = True  # rows sorted by length within sigma, each slice run to its longest
    kernel_variants = ("slice_items",)
    # in the cache and beyond it on CPUs it parts from the CSR kernels, each way on some machines
    probed_in = ("quick cpu", "quick cpu large")

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        """pJDS's slots plus, unless every row has one length, half the padding
        :func:`choose_sigma`'s window may add beyond them (:data:`SIGMA_PADDING_SLACK` times
        the entries), instead of the sorts it makes."""
        if shape.constant:
            return shape.sorted_slots()
        return shape.sorted_slots() + int(SIGMA_PADDING_SLACK * shape.entries / 2)

    @classmethod
    def idle_lanes(cls, f: Features) -> float:
        """On CPUs its own padding: a slice's lanes hold rows sorted by length and run to the
        longest of them, so they idle on the padding of the slots (which the sorting keeps
        small), not on that of the rows in their order. On R-MAT and power-law graphs of 6 M
        entries the rows in order pad 9.7-10.2 slots per entry in groups of 16, ``sell``'s
        slices 0.06-0.07 and ``pjds``' 0.03-0.05: counted in the rows' order, the idle lanes
        priced ``sell`` and ``pjds`` 1.2-1.6 times ``csr-blocks`` on graphs where they ran 1.3
        times faster (the 2-core Zen 4, Debian's PoCL 3.1). Kept once each slice ran as a
        work-group of its own (:data:`SLICES_PER_GROUP`; before, on the 16-core Xeon, the
        rows-in-order padding had stood in for the hub rows' work-groups, which took ``sell``
        2.2x ``csr-blocks``' time on R-MAT): replayed on every format's times in rounds on the
        16- and 32-core Xeons, auto / fastest 0.951 -> 0.963 and 0.955 -> 0.963
        (``reports/experiments/2026-11-30-idle-lanes``). On lockstep devices (GPUs) the
        rows in order, as for the other formats: fitted to its own padding instead, the H200's
        and H100's calibrations weighed ``pjds``' at 2e4 times the inverse bandwidth per slot,
        a stand-in for what sorting every row costs there rather than idle lanes."""
        if f.simd_width >= LOCKSTEP_SIMD:
            return super().idle_lanes(f)
        return float(max(f.slots_of(cls.name) - f.entries, 0))

    @classmethod
    def matrix_bytes(cls, f: Features) -> int:
        """The slots, the row permutation and lengths, and the slice pointers."""
        n_pad = padded_row_count(f)
        return f.slots_of(cls.name) * slot_bytes(f) + n_pad * 8 + (n_pad // f.simd_width + 1) * 4

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout, sigma: int | None = None,
                 long_rows: int | str | None = AUTO, spread: bool | None = None,
                 slice_items: bool | None = None) -> Sell:
        """``spread``: the slices dealt over the work-group range (:func:`spread_order`); True
        or False, or None for where the layout's work-items do not run in lockstep and the
        sorted order concentrates the work. ``slice_items``: the forward product runs a
        work-item per slice instead of one per row; True or False, or None for
        :func:`slices_by_default`."""
        csr, tail = split_long_rows(csr, layout, long_rows)
        c = slice_height(layout, csr.dtype.itemsize)
        if sigma is None:
            sigma = choose_sigma(row_lengths(csr), c)
        sigma = check_int("sigma", sigma)
        if sigma < 1 or (sigma != 1 and sigma % c):
            raise ValueError(f"sigma must be 1 or a positive multiple of C={c}, got {sigma}")
        return cls._build(csr, layout, sigma, spread, slice_items).attach_tail(tail)

    @classmethod
    def _build(cls, csr: sp.csr_matrix, layout: Layout, sigma: int, spread: bool | None,
               slice_items: bool | None) -> Sell:
        c = slice_height(layout, csr.dtype.itemsize)
        slices = check_flag("slice_items", slice_items, slices_by_default(layout))
        if slices and c not in SLICE_VECTORS:
            raise ValueError(f"slice_items=True needs a slice height C of "
                             f"{', '.join(map(str, SLICE_VECTORS))} (the device's SIMD width), "
                             f"got C={c}; use slice_items=False")
        n = csr.shape[0]
        lengths = row_lengths(csr)
        perm = sort_rows(lengths, sigma)
        force = check_flag("spread", spread, False)
        full = n // c  # whole slices; a last, partial one stays last
        order = None
        if force or (spread is None and sigma > 1 and not layout.lockstep):
            widths = lengths[perm[:full * c]].reshape(full, c).max(axis=1)
            order = spread_order(widths, layout, force, c)
        if order is not None:
            perm = np.concatenate([perm[:full * c].reshape(full, c)[order].ravel(),
                                   perm[full * c:]])
        n_pad = round_up(n, c)
        sorted_len = np.zeros(n_pad, np.int64)
        sorted_len[:n] = lengths[perm]
        widths = sorted_len.reshape(-1, c).max(axis=1) if n_pad else np.zeros(0, np.int64)
        slice_ptr = np.zeros(widths.size + 1, np.int64)
        np.cumsum(widths * c, out=slice_ptr[1:])
        slot_of_row = np.empty(n, np.int64)
        slot_of_row[perm] = np.arange(n)
        # entry p of a row in slot s: slice_ptr[s // c] + p * c + s % c
        where = entry_index(csr, slice_ptr[slot_of_row // c] + slot_of_row % c, c)
        total = int(slice_ptr[-1])
        col = np.zeros(total, INDEX_DTYPE)  # padding slots are never read: rows stop at row_len
        val = np.zeros(total, csr.dtype)
        col[where] = csr.indices
        val[where] = csr.data
        arrays = {
            "slice_ptr": slice_ptr.astype(INDEX_DTYPE),
            "row_len": sorted_len.astype(INDEX_DTYPE),
            "perm": perm.astype(INDEX_DTYPE),
            "col": col,
            "val": val,
        }
        return cls(csr.shape, csr.dtype, layout, arrays, sigma=sigma, slice_height=c,
                   spread=int(order is not None), slice_items=int(slices))

    @classmethod
    def kernel_variant(cls, layout: Layout) -> str | None:
        """``"slice_items"`` where the product runs a work-item per slice by default."""
        return "slice_items" if slices_by_default(layout) else None

    def defines(self) -> dict[str, object]:
        return {"C": self.params["slice_height"]}

    def forward_defines(self) -> dict[str, object]:
        return {**super().forward_defines(),
                **({"SLICE_ITEMS": 1} if self.params.get("slice_items") else {})}

    def forward_kernel(self, items: int) -> tuple[str, int, int | None]:
        """With ``slice_items``: ``sell_spmv_slices``, a work-item per slice of C rows, each
        slice a work-group of its own (:data:`SLICES_PER_GROUP`)."""
        if not self.params.get("slice_items"):
            return super().forward_kernel(items)
        c = self.params["slice_height"]
        return "sell_spmv_slices", -(-items // c), SLICES_PER_GROUP

    def matrix_args(self) -> tuple[int, tuple[object, ...]]:
        b = self.buffers
        n = self.shape[0]
        return n, (scalar(n), b["slice_ptr"], b["row_len"], b["perm"], b["col"], b["val"])

    def to_coo(self, arrays: dict[str, np.ndarray]) -> Triplets:
        c = self.params["slice_height"]
        n = self.shape[0]
        lengths = arrays["row_len"][:n].astype(np.int64)
        slots = np.repeat(np.arange(n), lengths)
        starts = np.cumsum(lengths) - lengths
        pos = np.arange(slots.size) - np.repeat(starts, lengths)
        where = arrays["slice_ptr"][slots // c].astype(np.int64) + pos * c + slots % c
        return self.with_tail_triplets(arrays, arrays["perm"][slots], arrays["col"][where],
                                       arrays["val"][where])


class Pjds(Sell):
    """pJDS: all rows sorted by length (SELL with sigma = n), slices padded to their longest row."""

    name = "pjds"
    trial_family = "pjds"
    probed_in = ("quick cpu", "quick cpu large")

    @classmethod
    def slots(cls, shape: RowShape) -> int:
        return shape.sorted_slots()

    @classmethod
    def from_csr(cls, csr: sp.csr_matrix, layout: Layout,
                 long_rows: int | str | None = AUTO, spread: bool | None = None,
                 slice_items: bool | None = None) -> Pjds:
        """``spread`` and ``slice_items``: as :meth:`Sell.from_csr`'s."""
        csr, tail = split_long_rows(csr, layout, long_rows)
        return cls._build(csr, layout, max(csr.shape[0], 1), spread,
                          slice_items).attach_tail(tail)
