"""Variants of the trial's candidate rule (clspmv.model.trial.candidates) replayed on every stored model_eval
measurement of reports/ (measured-*.json, any depth), the trial's choice taken in the stored measured times (the model's
choice unless a candidate measured 5 % faster: optimistic against a trial that times the candidates again).

    python reports/experiments/2026-11-27-cpu-2core-zen5-pocl30/trial-replay/candidates_replay.py   (from the project root)
"""
import math
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[2] / "2026-11-27-cpu-pjds-spread"))
from family_replay import machine as family_machine  # noqa: E402
from family_replay import stored_records  # noqa: E402  (the stored measurements, read once there)

FAMILIES = {"ell": ("ell", "ellr", "ellr-t", "hyb", "dia"), "sell": ("sell",), "pjds": ("pjds",)}


def family(fmt):
    return next((name for name, members in FAMILIES.items() if fmt in members), "csr")


def candidates(pred, top=3, band=1.0, per_family=1, csr_extra=0):
    ranked = sorted(pred, key=lambda f: (pred[f], f))
    out, limit = ranked[:top], pred[ranked[0]] * (1 + band)
    taken = defaultdict(int)
    for f in ranked:
        fam = family(f)
        allowed = per_family + (csr_extra if fam == "csr" else 0)
        if taken[fam] < allowed:
            taken[fam] += 1
            if pred[f] <= limit and f not in out:
                out.append(f)
    return out


VARIANTS = {"now (TOP 3, each family's best)": {},
            "TOP 4": {"top": 4},
            "CSR family's best two": {"csr_extra": 1},
            "each family's best two": {"per_family": 2}}


def machine(path):
    """family_replay's machines, with the Zen 5's PoCL 3.0 runs and run7 apart."""
    p = path.lower()
    if "pocl30" in p and "zen5" in p:
        return "zen5 PoCL 3.0"
    if "run7" in p or family_machine(path).startswith("zen5-run6"):
        return "zen5 run6-7 (dealt slices)"
    return family_machine(path)


for name, recs in sorted(stored_records(machine, lambda m, f: m[f]).items()):
    print(f"== {name}: {len(recs)} (matrix, calibration) records")
    for variant, kw in VARIANTS.items():
        ratios, counts = [], []
        for pred, m in recs:
            c = candidates(pred, **kw)
            choice = c[0]
            best = min(c, key=lambda f: m[f])
            if m[best] < m[choice] * (1 - 0.05):
                choice = best
            ratios.append(min(m[f] for f in pred) / m[choice])
            counts.append(len(c))
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        within = sum(r >= 1 / 1.05 for r in ratios) / len(ratios)
        print(f"  {variant:32s} gm {gm:.4f} worst {min(ratios):.3f} within 5 % {within:.1%} "
              f"candidates {sum(counts) / len(counts):.2f}")
