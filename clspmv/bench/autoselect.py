"""``--formats auto``: one format per matrix and device, from row statistics and the device type.

On CPUs (PoCL): ``csr-blocks``, whatever the matrix: CSR in row blocks balanced by entries, one
work-item (and work-group) per block, 16 blocks per compute unit, a sequential entry loop that
takes ``unroll`` entries a step as vectors. Measured on the 2-core CI machine (shared with other
jobs, load 1 to 6) in six runs of
``clspmv bench --suite cpu --device pocl --dtype both --formats csr-scalar,csr-blocks
--mkl-threads 2 --baselines scipy,mkl --quiet --out DIR``: csr-blocks was faster than the
previous default ``csr-scalar`` in the geometric mean over the suite in every run (1.08x to
1.26x in float64, 1.07x to 1.28x in float32); its geometric-mean speedup over MKL (2 threads)
was 0.92x to 1.24x in float64 (csr-scalar 0.77x to 1.08x) and over scipy 1.00x to 1.46x. It
loses to csr-scalar on one matrix of the suite, ``denserows`` (rows of 9 entries with nearby
columns, where the vector steps do not pay). In the earlier reference report
(``reports/2026-11-22-cpu-2core``) csr-scalar had been the fastest of the other formats 7 times
in 16 cases, within 1.25x of the fastest 14 times. PoCL hands work-groups to the cores
dynamically, so several blocks per core even out uneven rows and a busy core.

On GPUs, in order (statistics of :func:`clspmv.stats`: Av = mean row length, %σ/Av = relative
standard deviation of the row lengths, %ELL(HYB) = share of the entries in HYB's ELL part):

1. No entries: ``csr-scalar``.
2. Banded: when the occupied diagonals, padded to whole diagonals, hold at most 1.5 times the
   entries (and there are at most :data:`MAX_DIAGONALS`): ``dia`` (no column indices to read).
3. Very uneven rows (%σ/Av > 100, or the longest row more than 32 times Av): ``csr-adaptive``
   (row blocks of equal entry counts per work-group, long rows split over several work-groups:
   CSR-Adaptive, whose speed does not depend on the row-length distribution). HYB, the papers'
   answer for a few long rows on top of regular ones, lost to it by 8x (R-MAT) and 55x (dense
   rows) on the H200 in float64: its COO part adds with compare-and-swap atomics there.
4. Regular rows (%σ/Av <= 25 and the longest row at most twice Av): ``ellr`` for Av <= 32, else
   ``ellr-t`` (ELLPACK-R paper: coalesced column-major reads; ELLR-T splits long rows over
   threads).
5. Otherwise (moderately uneven): ``sell`` (sorting within windows removes most of the padding;
   pJDS paper).

The GPU rules come from the papers in ``../shared/papers``; they use statistics and device
facts only, never matrix names. Check them against the H200 reference report.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..device import Device
from ..stats import MatrixStats

MAX_DIAGONALS = 256
DIA_FILL = 1.5


def diagonal_count(csr: sp.csr_matrix) -> int:
    """Number of occupied diagonals (O(nnz + rows + cols), no sort)."""
    m, n = csr.shape
    if csr.nnz == 0:
        return 0
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(csr.indptr))
    present = np.zeros(m + n - 1, bool)
    present[csr.indices.astype(np.int64) - rows + (m - 1)] = True
    return int(present.sum())


def choose(csr: sp.csr_matrix, s: MatrixStats, device: Device) -> tuple[str, str]:
    """(format, the reason in words) for ``csr`` with statistics ``s`` on ``device``."""
    if device.type != "gpu":
        return "csr-blocks", f"{device.type} device: csr-blocks"
    if s.entries == 0:
        return "csr-scalar", "no entries"
    diags = diagonal_count(csr)
    if diags <= MAX_DIAGONALS and diags * s.rows <= DIA_FILL * s.entries:
        return "dia", f"{diags} diagonals hold the entries with <= {DIA_FILL}x padding"
    longest = s.av + s.max_minus_av
    if s.pct_sigma_over_av > 100 or longest > 32 * s.av:
        why = f"uneven rows (%σ/Av {s.pct_sigma_over_av:.0f}, longest {longest:.0f})"
        return "csr-adaptive", why
    if s.pct_sigma_over_av <= 25 and longest <= 2 * s.av:
        why = f"regular rows (%σ/Av {s.pct_sigma_over_av:.0f}, Av {s.av:.1f})"
        return ("ellr", why) if s.av <= 32 else ("ellr-t", why + " > 32")
    return "sell", f"moderately uneven rows (%σ/Av {s.pct_sigma_over_av:.0f})"
