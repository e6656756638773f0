"""dia against csr-blocks and ellr on the calibration's band generator (clspmv.model.benchmarks) and on bands of adjacent diagonals, side by side (python dia_probe.py [SPEC...], from the repository root)."""
import sys, numpy as np, scipy.sparse as sp
sys.path.insert(0, "tools")
from strips_eval import build, timed
from clspmv.bench.sources import resolve_all
from clspmv.device import select_device
from clspmv.model import benchmarks as bm
dev = select_device("1:0")
rng = np.random.default_rng(10)
m = 1_000_000 // 8 * 8
mats = {
  "cal-banded (offsets -8..6 step 2), 1M rows": bm._from_lengths(np.full(m, 8, np.int64), m, 16, rng),
  "cal-medium-banded, m/8 rows": bm._from_lengths(np.full(m // 8, 8, np.int64), m // 8, 16, rng),
  "8 adjacent diagonals -4..3, 1M rows": bm._from_offsets(m, np.arange(-4, 4)),
  "8 adjacent diagonals, m/8 rows": bm._from_offsets(m // 8, np.arange(-4, 4)),
  "5 diagonals (0,+-1,+-450), 200k rows": bm._from_offsets(202500, np.array([-450, -1, 0, 1, 450])),
}
for spec in sys.argv[1:]:
    mats[spec] = resolve_all([spec])[0].load()
for name, A in mats.items():
    A = A.tocsr().astype(np.float64)
    ms = {f: build(A, f, dev, np.float64) for f in ("dia", "csr-blocks", "ellr")}
    ms = {k: v for k, v in ms.items() if v is not None}
    t = timed(ms, A.shape, dev, np.float64)
    d = ms["dia"]
    print(f"{name:40s} nnz {A.nnz:8d} diagonals {d.params.get('diagonals', d.params)}  " + " ".join(f"{k} {v:.3f}" for k, v in t.items()), flush=True)
