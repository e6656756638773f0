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
(:func:`order_path`); until it is measured, and with ``CLSPMV_CALIBRATE=0``,
:data:`ROW_MAJOR_WIDTH`.
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .cache_files import device_file
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

_memory: dict[Path, int] = {}


@dataclass
class EllOrder:
    """A measured ELL order: ``times`` maps a row width (slots) to the kernel seconds of
    column-major and of row-major ``ellr`` on rows of that width; ``row_major_width`` is
    :func:`row_major_width_from` them."""

    times: dict[int, tuple[float, float]] = field(default_factory=dict)

    @property
    def row_major_width(self) -> int:
        """See :func:`row_major_width_from`."""
        return row_major_width_from(self.times)

    def to_json(self) -> dict[str, object]:
        """JSON-ready: the width and the times per width."""
        return {"row_major_width": self.row_major_width,
                "times": {str(w): {"column_major": c, "row_major": r}
                          for w, (c, r) in sorted(self.times.items())}}


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


def stored(device: Device) -> bool:
    """Whether an order is stored for ``device`` (measured by a calibration or on first use) that
    holds every width of :data:`MEASURED_WIDTHS`: one measured at fewer widths counts as none,
    so that the next calibration or named conversion measures it again. A file that cannot be
    read counts as stored (:func:`row_major_width` warns about it; the next calibration measures
    it again)."""
    path = order_path(device)
    if not path.exists():
        return False
    try:
        times = json.loads(path.read_text())["times"]
        return all(str(w) in times for w in MEASURED_WIDTHS)
    except (OSError, ValueError, TypeError, KeyError):
        return True


def row_major_width(device: Device) -> int:
    """The width from which ``device`` stores ELL rows row-major where its work-items run one after
    another: the measured one stored for it, else :data:`ROW_MAJOR_WIDTH` (with a warning where the
    file is unusable; the next calibration measures it again)."""
    path = order_path(device)
    if path not in _memory:
        width = ROW_MAJOR_WIDTH
        if path.exists():
            try:
                width = int(json.loads(path.read_text())["row_major_width"])
                if width < 1:
                    raise ValueError(f"row_major_width {width} is not a positive width")
            except (OSError, ValueError, TypeError, KeyError) as err:
                warnings.warn(f"ELL order file {path} is unusable ({err!r}); rows of "
                              f"{ROW_MAJOR_WIDTH} slots or more are row-major until the next "
                              "calibration measures it (clspmv calibrate --force)",
                              RuntimeWarning, stacklevel=2)
                width = ROW_MAJOR_WIDTH
        _memory[path] = width
    return _memory[path]


def save(device: Device, order: EllOrder) -> Path:
    """Store ``order`` as ``device``'s (used from now on in this process too); returns the path."""
    path = order_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"device": device.name, **order.to_json()}, indent=1) + "\n")
    tmp.replace(path)
    _memory[path] = order.row_major_width
    return path
