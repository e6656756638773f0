"""Replay model_eval with a variant of the large correction: the common part (geometric mean of
the timed formats' ratios) by the stream's miss, each format's own part (its ratio over the
common one) also by the product's share of scattered gathers over the large probes' (0.9)."""
import os, runpy, sys
import numpy as np
from clspmv.model import timemodel as tm
V = os.environ.get("VARIANT", "split")
def large_factor(self, fmt, f):
    if not self.large_ratio or self.large_miss <= 0:
        return 1.0
    timed = [self.large_ratio[k] for k in ("csr-blocks", "ellr", "sell", "pjds") if k in self.large_ratio]
    common = float(np.exp(np.mean(np.log(timed))))
    ratio = self.large_ratio.get(fmt) or common
    miss = tm.stream_miss_share(tm.streamed_bytes(fmt, f), self.cache_bytes, self.stream_miss)
    e = min(tm.LARGE_EXTRAPOLATION, miss / self.large_miss)
    s = min(1.0, (f.x_scattered / max(f.entries, 1)) / 0.9)
    if V == "split":
        return float(common ** e * (ratio / common) ** (e * s))
    if V == "csrbase":
        base = self.large_ratio.get("csr-blocks", common)
        return float(base ** e * (ratio / base) ** (e * s))
    return float(ratio ** e)
tm.Calibration.large_factor = large_factor
sys.argv = ["model_eval.py"] + sys.argv[1:]
runpy.run_path("tools/model_eval.py", run_name="__main__")
