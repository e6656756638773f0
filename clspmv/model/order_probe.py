"""Measure a device's ELL order (:mod:`clspmv.ell_order`): the format of :func:`probe_format`
(``ellr``) column-major against row-major on rows of a few widths, through the library's own
conversion and the calibration's timing (:func:`clspmv.model.probes.kernel_times`, the two
orders in rounds).

The probe matrices have :data:`PROBE_ROWS` rows of one width each, their entries spread over a
band of :data:`PROBE_SPREAD` columns (the rows' x stays in the cache, the order's streams do not:
0.4-4.8 M entries, 5-58 MB in float64, as the matrices whose order was measured to matter on
the 2-core Zen 4 and Zen 5), and the same rows at uniformly random columns (the scattered rows'
order, :attr:`clspmv.ell_order.EllOrder.scattered_times`). The regular rows alone took 1.1-1.2 s
on the 2-core Zen 5 (the widths 4-24 alone 1.4-2.7 s on a 16-core Xeon), both kinds 2.3-2.8 s
on the 2-core Zen 4.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

from .. import ell_order
from ..cache_files import measures_on_first_use, measuring, where_stored
from ..canonical import canonical_csr
from ..device import Device
from ..ell_order import MEASURED_WIDTHS, SCATTERED_WIDTHS, EllOrder
from ..formats import FORMAT_CLASSES, Format, Layout, convert
from ..precision import Precision, resolve
from ..probing import refuse_simulator
from .probes import REPEATS, kernel_times, probed_format

logger = logging.getLogger(__name__)

PROBE_ROWS = 200_000
"""Rows of each probe matrix."""
PROBE_SPREAD = 2000
"""Columns of the band a probe row's entries spread over."""


def probe_matrix(width: int, rows: int = PROBE_ROWS, spread: int = PROBE_SPREAD,
                 scattered: bool = False) -> sp.csr_matrix:
    """``rows`` rows of ``width`` entries, values 1: at columns spread evenly over a band of
    ``spread`` around the diagonal (wrapping around at the edges), or with ``scattered`` at
    distinct uniformly random columns (a fixed seed)."""
    if scattered:  # sorted draws from [0, rows - width] plus 0..width-1: distinct, sorted
        cols = np.random.default_rng(width).integers(0, rows - width + 1, (rows, width))
        cols.sort(axis=1)
        cols += np.arange(width)
    else:
        offsets = np.linspace(-spread // 2, spread // 2, width).astype(np.int64)
        cols = (np.arange(rows)[:, None] + offsets[None, :]) % rows
    indptr = np.arange(0, rows * width + 1, width)
    return sp.csr_matrix((np.ones(rows * width), cols.ravel(), indptr), shape=(rows, rows))


def probe_format() -> str:
    """The format whose two orders the probe times (:func:`clspmv.model.probes.probed_format`
    of ``"ell order"``: ``ellr``, one work-item per padded row that stops at the row's end)."""
    return probed_format("ell order")


def measure_ell_order(device: Device, precision: Precision, rows: int = PROBE_ROWS) -> EllOrder:
    """:func:`probe_format`'s kernel seconds column-major and row-major on :func:`probe_matrix`
    of ``rows`` rows on ``device``: rows of regular columns at every
    :data:`clspmv.ell_order.MEASURED_WIDTHS` width, of scattered columns at every
    :data:`clspmv.ell_order.SCATTERED_WIDTHS` width (their x of 1.6 MB in float64 stays in the
    cache: on the 2-core Zen 4, PoCL 3.1, row-major took 0.3-0.5x the column-major time on random
    rows of 0.4 and 3.2 MB of x alike; four widths, not eight, keep the probe at 2.3-2.8 s there,
    where eight had taken it from 1.3-2.0 s on regular rows alone to 3.3-3.6 s);
    DeviceError on a simulator, where nothing is measured
    (:func:`clspmv.probing.refuse_simulator`)."""
    refuse_simulator(device, "the ELL order probe")
    probed = probe_format()
    layout: Layout = FORMAT_CLASSES[probed].layout_for(device)
    order = EllOrder()
    for scattered, times in ((False, order.times), (True, order.scattered_times)):
        for width in SCATTERED_WIDTHS if scattered else MEASURED_WIDTHS:
            csr = canonical_csr(probe_matrix(width, rows, scattered=scattered), precision.value)
            pair: dict[str, Format] = {}
            for name, row_major in (("column", False), ("row", True)):
                pair[name] = convert(csr, probed, layout, precision, row_major=row_major)
                pair[name].upload(device)
            x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
            y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
            seconds = kernel_times(pair, x, y, REPEATS)
            times[width] = (seconds["column"], seconds["row"])
            del pair
    return order


def _measuring_order(device: Device) -> AbstractContextManager[None]:
    """The right to measure ``device``'s order (:func:`clspmv.cache_files.measuring`)."""
    return measuring(ell_order.order_path(device), f"the ELL order of {device.name}")


def store_ell_order(device: Device, precision: Precision) -> EllOrder:
    """``device``'s order measured (:func:`measure_ell_order`) and stored, one measurement of it
    at a time across threads and processes (:func:`clspmv.cache_files.measuring`): what a
    calibration does first."""
    with _measuring_order(device):
        order = measure_ell_order(device, precision, PROBE_ROWS)
        ell_order.save(device, order)
    return order


def ensure_ell_order(device: Device, fmt: str, params: dict[str, object]) -> None:
    """Before ``fmt`` is converted for ``device`` with ``params``: where its layout follows the
    ELL order (:meth:`~clspmv.formats.costs.FormatCosts.follows_ell_order`: ``ell``, ``ellr``,
    ``hyb``; no explicit ``row_major``), the device's work-items do not run in lockstep and no
    order is stored for it (or one measured at fewer widths, or an unusable file:
    :func:`clspmv.ell_order.stored`), measure the order once and store it, saying so in the log
    (what a calibration does first; :meth:`clspmv.DeviceMatrix.from_scipy` with a named format
    calls this, so ``format="ellr"`` takes the measured order without a calibration). Threads
    and processes converting at once measure it once (:func:`clspmv.cache_files.measuring`: the
    others wait and take it). ``CLSPMV_CALIBRATE=0`` and the Oclgrind simulator measure nothing
    (:func:`clspmv.cache_files.measures_on_first_use`: the layouts keep
    :data:`clspmv.ell_order.ROW_MAJOR_WIDTH`)."""
    cls = FORMAT_CLASSES.get(fmt)
    if cls is not None and cls.follows_ell_order() and params.get("row_major") is None:
        ensure_stored(device)


def ensure_stored(device: Device) -> None:
    """Measure ``device``'s ELL order once and store it where none is stored, its work-items do
    not run in lockstep and it may be measured (:func:`ensure_ell_order`'s measurement; the quick
    calibration's first step)."""
    if (not measures_on_first_use(device) or FORMAT_CLASSES[probe_format()].layout_for(
            device).lockstep or ell_order.stored(device)):
        return
    with _measuring_order(device):
        if ell_order.stored(device):  # stored by the thread or process this one waited for
            return
        logger.info("measuring the ELL order of %s once (a few seconds; %s; "
                    "CLSPMV_CALIBRATE=0 skips it)", device.name,
                    where_stored(ell_order.order_path(device)))
        precision = resolve(np.float64 if device.fp64 else np.float32, np.float64)
        ell_order.save(device, measure_ell_order(device, precision, PROBE_ROWS))
