"""A trial of ``format="auto"``'s likeliest formats on the device, when enough products will pay
for it: the model narrows the formats to a few (:func:`candidates`), which are converted,
uploaded and timed side by side (:func:`run`), and the fastest measured is taken (the model's
own choice where none measured :data:`MARGIN` faster).

Why: the model ranks the formats well (rank correlation about 0.9 per matrix) but its error on
one format's time (10-35 % median) is of the size of the gaps between the best few. On the
2-core CPU (PoCL 3.1, stored measurements of 71 matrices of five suites) the predicted fastest
format was on average 0.934 as fast as the fastest measured (worst 0.721, 62 % within 5 %),
while the fastest of the three predicted best plus the best predicted of each format family
within :data:`BAND` was 0.983 (worst 0.867, 87 %): the misses are short-row stencils and
bands where an ELLPACK format beats every CSR kernel by 20-40 % yet is predicted behind them,
hence one candidate per family. A trial converts several formats, so it is run only where the
products a caller expects make its predicted cost small against their time (:func:`worth`),
or on request (``trial=True``); its winner's device matrix is kept, not converted again.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array
import scipy.sparse as sp

from ..device import Device
from ..errors import DeviceError, UnsuitableFormatError
from ..formats import Format, convert, format_class
from ..formats.csr_store import total_nbytes
from ..precision import Precision
from .predict import Prediction
from .probes import kernel_times, planned_rounds

TOP = 3
"""The formats of least predicted time that are tried."""
BAND = 1.0
"""Each format family's best predicted format is tried as well when predicted within this share
above the best prediction (1 + BAND times it): within twice it. The model's time of one format
can be half or twice the measured one on small irregular matrices (a Chung-Lu graph of 0.3 M
entries on the 2-core Zen 5: ``sell`` measured at 0.55 of its prediction, the CSR kernels at
1.7-1.9). Replayed on the stored measurements of the 2-core Zen 4 (797 matrix-calibration pairs,
``reports/2026-11-26-cpu-2core-zen5-ell-order/band-replay.txt``), 0.6 to 1.0 took auto / fastest
from 0.984 to 0.989 (worst 0.646 to 0.772, within 5 % 94 to 96 %) for 3.8 to 4.5 candidates;
wider bands added nothing; on the Zen 5's (150 pairs, looked at after) worst 0.471 to 0.927."""
FAMILY_TRIES = {"csr": 2}
"""How many of a family's best predicted formats within :data:`BAND` are tried (1 for a family
not named here). The CSR family is the largest (``coo``, ``csr-scalar``, ``csr-vector``,
``csr-aligned``, ``csr-adaptive``, ``csr-blocks``, ``csr-merge``), and on CPUs its kernels part
on irregular rows (a mispredicted loop exit per row costs ``csr-scalar``, ``csr-blocks`` and
``csr-merge`` differently): on memplus (2-core Zen 5) ``csr-blocks`` ran 1.2x faster than
``csr-scalar`` but was predicted 1.3x slower, so behind ``csr-scalar``, ``sell`` and ``pjds`` it
was never tried. Replayed on every stored measurement
(``reports/2026-11-27-cpu-2core-zen5-pocl30/trial-replay``, the trial's choice taken in the
stored times), two of the CSR family raised auto / fastest's worst from 0.781 to 0.892 (Zen 5,
PoCL 3.1), 0.857 to 0.952 (Zen 5 with dealt slices), 0.847 to 0.950 (Zen 5, PoCL 3.0) and
0.772 to 0.846 (Zen 4), for 0.05-0.3 more candidates on CPUs and 0.5 on the H200, whose
choices did not change. Measured after the rule was fixed (``reports/2026-11-27-trial-csr-family``:
fresh evaluations over the 44 target matrices): the trial 0.985 (93 % within 5 %) with PoCL 3.1
and 0.985 (91 %) with PoCL 3.0 on the Zen 5, memplus 1.000 with both; 0.998 (all 44) on the
H200.

Each format's family for the trial is its
:attr:`~clspmv.formats.costs.FormatCosts.trial_family`: the formats whose kernels walk padded
slots rather than a CSR row (``ell``, ``ellr``, ``ellr-t``, ``hyb``, ``dia``; the rest are one
family, ``csr``) move together against the CSR kernels' as rows get shorter or more regular.
``sell`` and ``pjds`` are families of their own: on CPUs ``sell``'s windows keep rows near their
neighbours while ``pjds`` sorts them all and deals its slices over the work-groups
(:func:`clspmv.formats.sell.spread_order`), and their times part: on a small R-MAT graph of
the 2-core Zen 5 ``sell`` ran 1.32x faster than ``pjds``, predicted 2 % slower, so a trial of
the better predicted one missed it. Replayed on the stored measurements
(``reports/2026-11-27-cpu-pjds-spread/family_replay.txt``), auto / fastest rose from 0.988 to
0.993 (worst 0.785 to 0.877) on the Zen 5's run with the dealt slices and by 0-0.001 on every
other machine's, for 0.6-0.8 more candidates."""
REPEATS = 5
"""Timed products per candidate at least (the fastest counts; short products get more, up to
:data:`clspmv.model.probes.STEADY_S` of them: :func:`clspmv.model.probes.kernel_times`), after
one warm-up each."""
MARGIN = 0.05
"""The model's choice is kept unless another candidate measured at least this much faster:
nearer than that, two timings of the same formats a minute apart disagree (on the 2-core CPU
the trial swapped near ties for formats 5-28 % slower in the timings that judged it; with the
margin, over 18 matrices of two suites, auto / fastest went from 0.970 to 0.986, worst 0.718 to
0.908)."""
SHARE = 0.05
"""A trial runs when its predicted cost (the candidates' conversions and products) is at most
this share of the expected products' predicted time."""


@dataclass(frozen=True)
class Trial:
    """What a trial measured."""

    kernel_ms: dict[str, float]
    """Candidate -> its fastest measured kernel ms (candidates that refused the matrix or did
    not fit the device left out)."""
    winner: str
    converted: Format
    """The winner, converted and uploaded to the device (the caller's matrix)."""
    seconds: float
    """Wall seconds of the trial (conversions, uploads, products)."""
    device_bytes: int
    """Device bytes of the candidates uploaded side by side, the CSR arrays that the CSR
    kernels share counted once (:func:`clspmv.formats.csr_store.total_nbytes`)."""


def candidates(predictions: dict[str, Prediction], expected_products: int | None) -> list[str]:
    """The formats to try: the :data:`TOP` of least predicted time (conversion included with
    ``expected_products``; the first is the model's choice), then each family's best (its
    :data:`FAMILY_TRIES` best) within :data:`BAND` of the best."""
    def cost(p: Prediction) -> float:
        return p.kernel_s if expected_products is None else p.total_s(expected_products)  # type: ignore[return-value]

    ranked = sorted((p for p in predictions.values() if p.refused is None),
                    key=lambda p: (cost(p), p.format))
    if not ranked:
        return []
    out = [p.format for p in ranked[:TOP]]
    limit = cost(ranked[0]) * (1 + BAND)
    taken: Counter[str] = Counter()
    for p in ranked:  # each family's best, in the order of their predictions
        family = format_class(p.format).trial_family
        if taken[family] < FAMILY_TRIES.get(family, 1):
            taken[family] += 1
            if cost(p) <= limit and p.format not in out:
                out.append(p.format)
    return out


def predicted_seconds(predictions: dict[str, Prediction], names: list[str],
                      device_type: str) -> float:
    """Predicted seconds of a trial of ``names`` on a device of ``device_type``: their
    conversions and products (a warm-up and the rounds of
    :func:`clspmv.model.probes.kernel_times`, two products each:
    :func:`clspmv.model.probes.planned_rounds`)."""
    kernel = {n: predictions[n].kernel_s or 0.0 for n in names}
    rounds = planned_rounds(kernel, REPEATS, device_type)
    return sum(predictions[n].total_s(0) + kernel[n] * (1 + 2 * rounds[n]) for n in names)


def worth(predictions: dict[str, Prediction], names: list[str], expected_products: int,
          device_type: str) -> bool:
    """Whether a trial of ``names`` on a device of ``device_type`` is predicted to cost at most
    :data:`SHARE` of ``expected_products`` products of the best predicted of them."""
    best = min(predictions[n].kernel_s or np.inf for n in names)
    return affordable(predicted_seconds(predictions, names, device_type), expected_products,
                      best)


def affordable(trial_s: float, expected_products: int, product_s: float) -> bool:
    """Whether a trial predicted to take ``trial_s`` is at most :data:`SHARE` of
    ``expected_products`` products of ``product_s`` seconds."""
    return trial_s <= SHARE * expected_products * product_s


def run(csr: sp.csr_matrix, device: Device, precision: Precision, names: list[str],
        owned: bool = False) -> Trial:
    """Convert ``csr`` (canonical, values of ``precision.value``; ``owned``: as
    :func:`clspmv.formats.convert`'s) to each of ``names`` in its device's default layout,
    upload them all (the CSR kernels on one upload of the CSR arrays, :func:`on_device`; a
    format refusing the matrix or not fitting the device beside the others is left out), time
    y = A x in rounds and keep the fastest, or ``names[0]`` (the model's
    choice) unless the fastest measured :data:`MARGIN` faster; ValueError when none is left.
    The others' device buffers are released on return."""
    start = time.perf_counter()
    uploaded: dict[str, Format] = {}
    for name in names:
        try:
            fmt = on_device(csr, device, precision, name, owned, list(uploaded.values()))
        except (UnsuitableFormatError, DeviceError, cl.MemoryError):
            continue  # it refuses the matrix (the sampled features let it pass) or has no room
        uploaded[name] = fmt
    if not uploaded:
        raise ValueError(f"no format of the trial ({', '.join(names)}) accepts the matrix "
                         "or fits the device")
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
    y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
    seconds = kernel_times(uploaded, x, y, REPEATS)
    winner = min(seconds, key=lambda n: (seconds[n], n))
    if names[0] in seconds and seconds[winner] * (1 + MARGIN) > seconds[names[0]]:
        winner = names[0]  # a near tie: the model's choice stands
    return Trial({n: s * 1e3 for n, s in seconds.items()}, winner, uploaded[winner],
                 time.perf_counter() - start, total_nbytes(uploaded.values()))


def on_device(csr: sp.csr_matrix, device: Device, precision: Precision, name: str,
              owned: bool, uploaded: list[Format]) -> Format:
    """``name`` converted from ``csr`` in its default layout and uploaded to ``device``: on the
    CSR arrays of one of ``uploaded`` where it can share them (the CSR kernels: only its own
    metadata is built and uploaded, ``convert(..., shared=...)``), else on its own."""
    layout = format_class(name).layout_for(device)
    fmt = None
    for other in uploaded:
        if other.store is None:
            continue
        try:
            fmt = convert(csr, name, layout, precision, owned=owned, shared=other)
            break
        except ValueError:  # arrays it cannot share (a padded csr-aligned's, or not CSR)
            continue
    if fmt is None:
        fmt = convert(csr, name, layout, precision, owned=owned)
    fmt.upload(device)
    return fmt


def attempt(csr: sp.csr_matrix, device: Device, precision: Precision, names: list[str],
            owned: bool = False) -> tuple[Trial | None, str]:
    """:func:`run` of ``names``, or None and why not: fewer than two candidates ("", nothing
    to compare), or none left to time (the reason, for the selection's ``why``)."""
    if len(names) < 2:
        return None, ""
    try:
        return run(csr, device, precision, names, owned), ""
    except ValueError as err:  # nothing fit the device: the model's choice stands
        return None, f"; the trial failed ({err})"
