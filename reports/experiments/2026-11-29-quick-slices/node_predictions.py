"""Per matrix: measured kernel ms and the calibrations' predictions (node facts), selected formats."""
import json, sys
import numpy as np
from clspmv.model.timemodel import Calibration
from clspmv.formats import SINGLE_FORMATS
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.model.features import features, with_exact_diagonals
meas = json.load(open(sys.argv[1]))
cals = {p.split("/")[-1]: Calibration.from_json(json.load(open(p)), SINGLE_FORMATS) for p in sys.argv[3:]}
simd, cus = [int(v) for v in sys.argv[2].split(",")]
show = ["csr-scalar", "csr-blocks", "csr-merge", "sell", "pjds", "hyb", "bsr"]
for r in meas["records"]:
    A = canonical_csr(resolve(r["matrix"]).load(), np.float64)
    f = with_exact_diagonals(features(A, simd, compute_units=cus), A)
    print(r["matrix"])
    print("   measured " + " ".join(f"{k}={r['measured_ms'].get(k, float('nan')):.2f}" for k in show))
    for n, c in cals.items():
        print(f"   {n:10s} " + " ".join(f"{k}={c.kernel_time(k, f)*1e3:.2f}(x{c.large_factor(k, f):.2f})" for k in show if k in c.kernel))
