"""Measure a device's ELL order (:mod:`clspmv.ell_order`): ``ellr`` column-major against
row-major on rows of a few widths, through the library's own conversion and the calibration's
timing (:func:`clspmv.model.probes.kernel_times`, the two orders in rounds).

The probe matrices have :data:`PROBE_ROWS` rows of one width each, their entries spread over a
band of :data:`PROBE_SPREAD` columns (the rows' x stays in the cache, the order's streams do not:
1-5 M entries, 14-60 MB in float64, as the matrices whose order was measured to matter on the
2-core Zen 4 and Zen 5). About 2-3 s on a 2-core CPU.
"""

from __future__ import annotations

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from ..canonical import canonical_csr
from ..device import Device
from ..ell_order import EllOrder
from ..formats import FORMAT_CLASSES, Format, Layout, convert
from ..precision import Precision
from .probes import REPEATS, kernel_times

PROBE_WIDTHS = (4, 6, 8, 11, 16, 24)
"""Row widths probed: the narrow rows where the order was measured to change between processors,
and 11-24 where the 2-core Zen 4 took row-major 1.3-2.3x faster."""
PROBE_ROWS = 200_000
"""Rows of each probe matrix."""
PROBE_SPREAD = 2000
"""Columns of the band a probe row's entries spread over."""


def probe_matrix(width: int, rows: int = PROBE_ROWS, spread: int = PROBE_SPREAD) -> sp.csr_matrix:
    """``rows`` rows of ``width`` entries, at columns spread evenly over a band of ``spread``
    around the diagonal (wrapping around at the edges), values 1."""
    offsets = np.linspace(-spread // 2, spread // 2, width).astype(np.int64)
    cols = (np.arange(rows)[:, None] + offsets[None, :]) % rows
    indptr = np.arange(0, rows * width + 1, width)
    return sp.csr_matrix((np.ones(rows * width), cols.ravel(), indptr), shape=(rows, rows))


def measure_ell_order(device: Device, precision: Precision, rows: int = PROBE_ROWS) -> EllOrder:
    """``ellr``'s kernel seconds column-major and row-major on :func:`probe_matrix` of ``rows``
    rows and every :data:`PROBE_WIDTHS` width on ``device``."""
    layout: Layout = FORMAT_CLASSES["ellr"].layout_for(device)
    order = EllOrder()
    for width in PROBE_WIDTHS:
        csr = canonical_csr(probe_matrix(width, rows), precision.value)
        pair: dict[str, Format] = {}
        for name, row_major in (("column", False), ("row", True)):
            pair[name] = convert(csr, "ellr", layout, precision, row_major=row_major)
            pair[name].upload(device)
        x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
        y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
        seconds = kernel_times(pair, x, y, REPEATS)
        order.times[width] = (seconds["column"], seconds["row"])
        del pair
    return order
