"""The 16-core node's measured sell (and pjds) over the fastest CSR kernel per matrix, beside row-length features (from node/second's stored kernel times; no device needed)."""
import json, numpy as np
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.model.features import features
from clspmv.model.timemodel import scattered_share
D = "reports/experiments/2026-11-29-quick-slices/node/second"
rows = []
for s in ("offsuite", "cpu", "heldout"):
    for r in json.load(open(f"{D}/node-{s}.json"))["records"]:
        m = r["measured_ms"]
        if "sell" not in m: continue
        A = canonical_csr(resolve(r["matrix"]).load(), np.float64)
        f = features(A, 8, compute_units=16)
        lens = np.diff(A.indptr)
        best_csr = min(m[k] for k in ("csr-scalar", "csr-blocks", "csr-merge") if k in m)
        rows.append((r["matrix"][:44], m["sell"] / best_csr, m.get("pjds", np.nan) / best_csr, f.entries / 1e6, f.max_row, lens.std() / max(lens.mean(), 1e-9), scattered_share(f), f.empty_rows / f.rows, f.length_changes / f.rows))
for r in sorted(rows, key=lambda r: r[1]):
    print(f"{r[0]:44s} sell/csr {r[1]:5.2f} pjds/csr {r[2]:5.2f} nnz {r[3]:6.2f}M max {r[4]:7d} cv {r[5]:6.2f} scat {r[6]:4.2f} empty {r[7]:4.2f} changes {r[8]:4.2f}")
