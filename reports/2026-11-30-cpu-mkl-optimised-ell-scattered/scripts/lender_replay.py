"""Auto's choice replayed offline from a stored quick calibration with some formats' correction
beyond the cache taken from another format, judged in cpu_vs_mkl runs' search times (each format
alone: results.json "search_ms"; noisy, the rounds are the figures to quote).

    python lender_replay.py SIMD UNITS FORMATS=LENDER CALIBRATION.json RESULTS.json [...]

FORMATS is a comma-separated list: "ell,ellr,ellr-t,hyb=csr-blocks" (the ELL layouts, run on
ac410cd's calibration) and "bsr=csr-blocks" (run on 2a413c3's).
"""
import json
import pickle
import sys
from pathlib import Path

import numpy as np
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import SINGLE_FORMATS
from clspmv.model.features import features, with_exact_diagonals
from clspmv.model.predict import predict_features
from clspmv.model.timemodel import Calibration


def main(simd: int, units: int, change: str, calibration: str, results: list[str]) -> None:
    borrowers, lender = change.split("=")
    data = json.loads(Path(calibration).read_text())
    stored = Calibration.from_json(data, SINGLE_FORMATS)
    changed = Calibration.from_json(data, SINGLE_FORMATS)
    changed.large_ratio = {**changed.large_ratio,
                           **dict.fromkeys(borrowers.split(","), changed.large_ratio[lender])}
    kept = Path(f"/tmp/lr/feats-{simd}-{units}.pkl")  # features of the matrices, reused
    feats = pickle.loads(kept.read_bytes()) if kept.exists() else {}
    score: dict[str, list[float]] = {"stored": [], change: []}
    for path in results:
        for rec in json.loads(Path(path).read_text())["records"]:
            ms = rec["search_ms"]
            if not ms:
                continue
            if rec["matrix"] not in feats:
                csr = canonical_csr(resolve(rec["matrix"]).load(), np.float64)
                feats[rec["matrix"]] = with_exact_diagonals(
                    features(csr, simd, compute_units=units), csr)
            shown = [f"{rec['matrix'][:48]:48s} auto={rec['auto_format']:12s} "
                     f"fastest={min(ms, key=ms.get):12s}"]
            for label, cal in (("stored", stored), (change, changed)):
                predicted = {k: p.kernel_s for k, p in
                             predict_features(feats[rec["matrix"]], cal, 256).items()
                             if p.refused is None and k in ms}
                pick = min(predicted, key=predicted.get)
                score[label].append(min(ms.values()) / ms[pick])
                shown.append(f"{label}:{pick}({score[label][-1]:.2f})")
            print(" ".join(shown))
    kept.write_bytes(pickle.dumps(feats))
    for label, values in score.items():
        print(f"{label}: auto/fastest (search times) geomean "
              f"{np.exp(np.mean(np.log(values))):.3f} worst {min(values):.2f} n={len(values)}")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:])
