"""``--formats auto``: one format per matrix and device, from row statistics and the device type.

On CPUs (PoCL): ``csr-scalar``, whatever the matrix. In the 2-core CPU reference report
(``reports/2026-11-22-cpu-2core``, suite ``cpu``, both value types: 16 cases) it was the
fastest format 7 times and within 1.25x of the fastest 14 times (geometric mean 1.15x the
fastest, worst 2.4x); the runners-up were pJDS and SELL (1.40x and 1.45x, worst 2.8x and 2.9x),
and DIA, ELL and HYB were 2x to 2.5x slower on average. A work-item walks its row sequentially,
which suits a CPU's caches and prefetchers, and PoCL hands work-groups to the cores
dynamically, so uneven rows cost little.

On GPUs, in order (statistics of :func:`clspmv.stats`: Av = mean row length, %σ/Av = relative
standard deviation of the row lengths, %ELL(HYB) = share of the entries in HYB's ELL part):

1. No entries: ``csr-scalar``.
2. Banded: when the occupied diagonals, padded to whole diagonals, hold at most 1.5 times the
   entries (and there are at most :data:`MAX_DIAGONALS`): ``dia`` (no column indices to read).
3. Very uneven rows (%σ/Av > 100, or the longest row more than 32 times Av): ``hyb`` when
   %ELL(HYB) >= 50 (a few long rows on top of regular ones), else ``csr-vector`` (several
   work-items share each row, so long rows do not stall a warp).
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
        if s.pct_ell_hyb >= 50:
            return "hyb", why + f", %ELL(HYB) {s.pct_ell_hyb:.0f} >= 50"
        return "csr-vector", why + f", %ELL(HYB) {s.pct_ell_hyb:.0f} < 50"
    if s.pct_sigma_over_av <= 25 and longest <= 2 * s.av:
        why = f"regular rows (%σ/Av {s.pct_sigma_over_av:.0f}, Av {s.av:.1f})"
        return ("ellr", why) if s.av <= 32 else ("ellr-t", why + " > 32")
    return "sell", f"moderately uneven rows (%σ/Av {s.pct_sigma_over_av:.0f})"
