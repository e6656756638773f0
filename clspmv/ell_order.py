"""The order of ELL rows on a device, measured: from how many slots a row ``ell``, ``ellr`` and
``hyb``'s ELL part store rows row-major on a device whose work-items run one after another (a CPU;
lockstep devices keep column-major, :meth:`clspmv.formats.Layout.for_device`).

The fastest order depends on the processor, not on the device type or driver: with PoCL 3.1,
column-major ``ellr`` rows of 4-8 slots took 0.85-0.92x the row-major time on a 2-core Zen 4,
2.1-2.4x on a 2-core Zen 5 (4-5 M entries) and 0.75-0.98x on a 16-core Xeon under PoCL 5.0
(``reports/2026-11-26-cpu-2core-zen5-suites/rowmajor-*.txt``). So it is measured
(:func:`clspmv.model.order_probe.measure_ell_order`: by every calibration first, and by the first
conversion to ``ell``, ``ellr`` or ``hyb`` on a device without one,
:func:`clspmv.model.order_probe.ensure_ell_order`) and stored here beside the calibration
(:func:`order_path`, one measurement at a time across threads and processes:
:func:`clspmv.cache_files.measuring`); until it is measured, with ``CLSPMV_CALIBRATE=0`` and on
the Oclgrind simulator (never measured), :data:`ROW_MAJOR_WIDTH`. An unusable file (not
:data:`ORDER_FILE`, made for another device, or a width its times do not give) counts as none,
with one warning.

It is measured twice: on rows whose columns follow those of the rows beside them (a band, a
stencil: :attr:`EllOrder.row_major_width`) and on rows of scattered columns
(:attr:`EllOrder.scattered_row_major_width`; which rows are scattered:
:func:`clspmv.formats.ell.scattered_rows`). The two part: on the 2-core Zen 4 under PoCL 3.1,
column-major ``ellr`` on rows of 3-10 uniformly random columns took 2.6-3.2x the row-major time
(x of 0.4-8 MB), on a band of 5 diagonals 0.74x; under PyPI's PoCL 3.0 1.3-2.9x; under Intel's
CPU runtime 0.5-0.7x; on the 16-core Xeon of the H200 node (PoCL 5.0) the orders tie
(``reports/2026-11-30-cpu-mkl-optimised-ell-scattered/ell-order.md``). Measured on regular
rows alone, the order stored ``ell`` column-major on random rows of 6-10 slots, 2.5x slower
than row-major, or row-major where a noisy measurement put the threshold lower: the quick
calibration's large probe of ``ellr`` took 3.1 ms in one run and 8.3 ms in the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cache_files import device_file, read_checked, write_json
from .cache_schema import integer_text, number, record, table, text
from .device import Device

ROW_MAJOR_WIDTH = 10
"""Rows of at least this many slots are row-major where no order was measured: on the 2-core
Zen 4 under PoCL 3.1 and 3.0 (``reports/2026-11-26-cpu-2core-zen4-ell-order``) column-major
``ellr`` took 1.3-1.5x the row-major time on rows of 11-12 slots, 1.8-2.3x on 16-20, 1.9-5.3x
on 3-D stencils, block matrices and bands of 27-39, and 0.85-0.92x on rows of 5-8 slots."""

ROW_MAJOR_GAIN = 0.9
"""Row-major counts as faster only where it takes less than this share of the column-major
time: a near tie keeps column-major. On the 16-core Xeon under PoCL 5.0 the probe's rows of 4-11
slots tie (0.96-1.05; one run in three put row-major at 8 slots without the margin), while
column-major ``ellr`` and ``hyb`` on matrices of 5-15 M entries with rows of 8-9 slots took
0.79-0.85x the row-major time (``reports/2026-11-26-cpu-2core-zen5-ell-order/xeon-*.txt``)."""

MEASURED_WIDTHS = (2, 3, 4, 6, 8, 11, 16, 24)
"""Row widths (slots) an order is measured at (:func:`clspmv.model.order_probe.measure_ell_order`):
the narrow rows where the order was measured to change between processors, and 11-24 where the
2-core Zen 4 took row-major 1.3-2.3x faster. 2 and 3 slots since the 2-core Zen 5 took
row-major ``hyb`` 1.5-1.9x faster where its ELL part is 3 slots wide (a Chung-Lu graph, a band
of 3 diagonals; ``ellr`` on the band 1.09x slower, and it ties at 2 slots:
``reports/2026-11-26-xeon-auto/narrow-zen5.txt``). An order stored without one of them (by an
older clspmv) is measured again (:func:`stored`)."""

SCATTERED_WIDTHS = (2, 4, 8, 16)
"""Row widths (slots) the order of rows of scattered columns is measured at: fewer than
:data:`MEASURED_WIDTHS` (the probe's time, :func:`clspmv.model.order_probe.measure_ell_order`),
from the narrowest to wide; on the three CPU implementations of the 2-core Zen 4 one order won
at every width of scattered rows."""

_memory: dict[Path, EllOrder] = {}


@dataclass
class EllOrder:
    """A measured ELL order: ``times`` maps a row width (slots) to the kernel seconds of
    column-major and of row-major ``ellr`` on rows of that width whose columns follow the rows
    beside them, ``scattered_times`` the same on rows of scattered columns; the widths from which
    each kind is row-major are :func:`row_major_width_from` them."""

    times: dict[int, tuple[float, float]] = field(default_factory=dict)
    scattered_times: dict[int, tuple[float, float]] = field(default_factory=dict)

    @property
    def row_major_width(self) -> int:
        """From which width rows of regular columns are row-major (:func:`row_major_width_from`
        of :attr:`times`)."""
        return row_major_width_from(self.times)

    @property
    def scattered_row_major_width(self) -> int:
        """From which width rows of scattered columns are row-major
        (:func:`row_major_width_from` of :attr:`scattered_times`; :data:`ROW_MAJOR_WIDTH` where
        they were not measured)."""
        return (row_major_width_from(self.scattered_times) if self.scattered_times
                else ROW_MAJOR_WIDTH)

    def to_json(self) -> dict[str, object]:
        """JSON-ready: the widths and the times per width of each kind of rows."""
        def of(times: dict[int, tuple[float, float]]) -> dict[str, dict[str, float]]:
            return {str(w): {"column_major": c, "row_major": r}
                    for w, (c, r) in sorted(times.items())}
        scattered = ({"scattered_row_major_width": self.scattered_row_major_width,
                      "scattered_times": of(self.scattered_times)}
                     if self.scattered_times else {})
        return {"row_major_width": self.row_major_width, "times": of(self.times), **scattered}


def row_major_width_from(times: dict[int, tuple[float, float]]) -> int:
    """The width from which rows are row-major that makes the measured widths fastest together:
    each measured width stands for the rows up to the next one and counts the logarithm of its
    row-major time over :data:`ROW_MAJOR_GAIN` times its column-major time; the threshold is the
    measured width whose sum over it and every wider one is least (the wider on a tie), or twice
    the widest measured (column-major for every row the measurements reach) where no sum is
    negative. One width timed slow by another process (on the 2-core Zen 5, row-major once 1.25x
    column-major at 6 slots among 0.3-0.7x at every other width) moves the threshold only as far
    as its weight against the others', where a rule of "row-major at every wider width" had
    moved it from 4 to 8 slots."""
    best, width = 0.0, 2 * max(times)
    total = 0.0
    for w in sorted(times, reverse=True):
        column, row = times[w]
        total += float(np.log(row / (ROW_MAJOR_GAIN * column)))
        if total < best:
            best, width = total, w
    return width


def order_path(device: Device) -> Path:
    """The file of ``device``'s measured order (:func:`clspmv.cache_files.device_file`)."""
    return device_file(device, "ell-order")


_TIME = number(high=1e6, positive=True)
_WIDTH = number(1, 4096, integer=True)
_TIMES = table(record({"column_major": _TIME, "row_major": _TIME}), keys=integer_text(1, 2048),
               max_len=64)
ORDER_FILE = record({"device": text(), "row_major_width": _WIDTH, "times": _TIMES},
                    {"scattered_row_major_width": _WIDTH, "scattered_times": _TIMES})
"""The shape of an ELL order file (:mod:`clspmv.cache_schema`; the scattered rows' fields are
absent from the files of clspmv before they were measured: such an order is incomplete,
:func:`stored`)."""


def _from_file(device: Device) -> Callable[[object], EllOrder]:
    """The check of ``device``'s order file: :data:`ORDER_FILE`, made for ``device``, and
    widths that its times give (:func:`row_major_width_from`)."""
    def times(data: dict, key: str) -> dict[int, tuple[float, float]]:
        return {int(w): (t["column_major"], t["row_major"]) for w, t in data.get(key, {}).items()}

    def check(data: object) -> EllOrder:
        ORDER_FILE(data, "")
        assert isinstance(data, dict)
        if data["device"] != device.name:
            raise ValueError(f"it was made for {data['device']!r:.80}")
        order = EllOrder(times(data, "times"), times(data, "scattered_times"))
        if not order.times or order.row_major_width != data["row_major_width"]:
            raise ValueError(f"row_major_width {data['row_major_width']} is not what its times "
                             f"give ({order.row_major_width if order.times else 'none'})")
        given = data.get("scattered_row_major_width", "none")
        gives = order.scattered_row_major_width if order.scattered_times else "none"
        if given != gives:
            raise ValueError(f"scattered_row_major_width {given} is not what its scattered "
                             f"times give ({gives})")
        return order
    return check


def _order(device: Device) -> EllOrder | None:
    """``device``'s order: remembered in this process (measured here, or read complete), else
    read from its file (None where there is none or it is unusable: one warning per version of
    the file, and it is measured again by the next calibration or named conversion)."""
    path = order_path(device)
    if path in _memory:
        return _memory[path]
    order = read_checked(path, "ELL order file", _from_file(device),
                         f"rows of {ROW_MAJOR_WIDTH} slots or more are row-major until it is "
                         "measured again (by the next calibration, or by a named ELL format "
                         "where CLSPMV_CALIBRATE allows)")
    if order is not None and _complete(order):
        _memory[path] = order  # an incomplete one is read again: another may measure it
    return order


def _complete(order: EllOrder) -> bool:
    """Whether ``order`` holds every width of :data:`MEASURED_WIDTHS` and of
    :data:`SCATTERED_WIDTHS` on scattered rows."""
    return (all(w in order.times for w in MEASURED_WIDTHS)
            and all(w in order.scattered_times for w in SCATTERED_WIDTHS))


def stored(device: Device) -> bool:
    """Whether an order is known for ``device`` (measured by a calibration or on first use, in
    its file or in this process where the file could not be written) that holds every width of
    :data:`MEASURED_WIDTHS` of both kinds of rows: one measured at fewer widths or without the
    scattered rows, or an unusable file, counts as none, so that the next calibration or named
    conversion measures it again."""
    order = _order(device)
    return order is not None and _complete(order)


def row_major_widths(device: Device) -> tuple[int, int]:
    """The widths from which ``device`` stores ELL rows row-major where its work-items run one
    after another, of regular and of scattered columns: the measured ones known for it, else
    :data:`ROW_MAJOR_WIDTH` (with one warning where the file is unusable)."""
    order = _order(device)
    if order is None:
        return ROW_MAJOR_WIDTH, ROW_MAJOR_WIDTH
    return order.row_major_width, order.scattered_row_major_width


def described(widths: tuple[int, int]) -> str:
    """The words for a device's ``widths`` (:func:`row_major_widths`) in the CLI and summaries."""
    regular, scattered = widths
    return (f"ELL rows of {regular} slots or more row-major, rows of scattered columns from "
            f"{scattered}")


def save(device: Device, order: EllOrder) -> Path | None:
    """Store ``order`` as ``device``'s, used from now on in this process too; returns the path,
    or None where it could not be written (:func:`clspmv.cache_files.write_json`: kept in
    memory for the process, with a warning)."""
    path = order_path(device)
    data = {"device": device.name, **order.to_json()}
    _memory[path] = order
    return path if write_json(path, data, ORDER_FILE) else None
