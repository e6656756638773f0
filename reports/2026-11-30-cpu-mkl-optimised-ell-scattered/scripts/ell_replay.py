"""Auto's choice replayed offline from stored quick calibrations, with dia's large-probe ratio as
stored (borrowed from ellr) and as the CSR kernels' (csr-blocks'), judged in cpu_vs_mkl runs'
search times (each format alone, results.json "search_ms").

    python dia_large_replay.py SIMD UNITS CALIBRATION.json RESULTS.json [RESULTS.json ...]
"""
import json, sys, pickle
from pathlib import Path
import numpy as np
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration

simd, units = int(sys.argv[1]), int(sys.argv[2])
stored = json.loads(Path(sys.argv[3]).read_text())
cache = Path(f"/tmp/lr/feats-{simd}-{units}.pkl")
feats = pickle.loads(cache.read_bytes()) if cache.exists() else {}

def cal_with(dia_from):
    cal = Calibration.from_json(stored, SINGLE_FORMATS)
    if dia_from and cal.large_ratio:
        cal.large_ratio = {**cal.large_ratio, **{f: cal.large_ratio[dia_from] for f in ("ell", "ellr", "ellr-t", "hyb")}}
    return cal

variants = {"stored": cal_with(None), "ell=csr-blocks": cal_with("csr-blocks")}
print("large_ratio dia/ellr/csr-blocks:", {k: round(v, 2) for k, v in variants["stored"].large_ratio.items() if k in ("dia", "ellr", "csr-blocks")})
scores = {v: [] for v in variants}
for rf in sys.argv[4:]:
    for r in json.loads(Path(rf).read_text())["records"]:
        name, ms = r["matrix"], r["search_ms"]
        if not ms:
            continue
        if name not in feats:
            csr = canonical_csr(resolve(name).load(), np.float64)
            feats[name] = with_exact_diagonals(features(csr, simd, compute_units=units), csr)
        best = min(ms.values())
        line = [f"{name[:48]:48s} auto={r['auto_format']:12s} fastest={min(ms, key=ms.get):12s}"]
        for v, cal in variants.items():
            preds = predict_features(feats[name], cal, 256)
            ok = {k: p.kernel_s for k, p in preds.items() if p.refused is None and k in ms}
            pick = min(ok, key=ok.get)
            scores[v].append(best / ms[pick])
            line.append(f"{v}:{pick}({best / ms[pick]:.2f})")
        print(" ".join(line))
cache.write_bytes(pickle.dumps(feats))
for v, s in scores.items():
    print(f"{v}: auto/fastest (search times) geomean {np.exp(np.mean(np.log(s))):.3f} worst {min(s):.2f} n={len(s)}")
