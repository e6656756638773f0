"""ell, ellr and hyb stored column-major against row-major, side by side, on matrices whose rows (or
hyb's ELL part) hold 2-3 slots: python narrow_ab.py DEVICE SPEC... (any clspmv bench spec; run from
tools/, whose strips_eval.timed is the timing: least kernel ms of interleaved rounds)."""
import sys

import numpy as np
from strips_eval import build, timed

from clspmv.bench.sources import resolve_all
from clspmv.device import select_device

dev = select_device(sys.argv[1])
for src in resolve_all(sys.argv[2:]):
    A = src.load() if hasattr(src, "load") else src.matrix()
    mats = {}
    for fmt in ("ell", "ellr", "hyb"):
        for row_major in (False, True):
            M = build(A, fmt, dev, np.float64, row_major=row_major)
            if M is not None:
                mats[f"{fmt} {'row' if row_major else 'col'}"] = M
    ms = timed(mats, A.shape, dev, np.float64)
    pairs = " | ".join(f"{f} col {ms[f + ' col']:.3f} row {ms[f + ' row']:.3f} ms: row/col "
                       f"{ms[f + ' row'] / ms[f + ' col']:.2f}"
                       for f in ("ell", "ellr", "hyb") if f + " col" in ms)
    print(f"{src.name}  nnz {A.nnz}  {pairs}", flush=True)
