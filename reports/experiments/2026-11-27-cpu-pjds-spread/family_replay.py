"""The trial's candidate rule (clspmv.model.trial.candidates: the TOP 3 of least predicted time plus each family's best
within BAND 1.0 above the best) replayed on every stored model_eval measurement of reports/ (measured-*.json, any depth),
with sell and pjds one family ("together", before) or two ("apart", clspmv.model.trial.FAMILIES after). The trial's
choice is taken in the stored measured times (the model's choice unless a candidate measured 5 % faster): optimistic
against a trial that times the candidates again.

    python reports/experiments/2026-11-27-cpu-pjds-spread/family_replay.py   (from the project root)
"""
import glob
import json
import math
from collections import defaultdict

ELL = ("ell", "ellr", "ellr-t", "hyb", "dia")
VARIANTS = {"together": {"ell": ELL, "sliced": ("sell", "pjds")},
            "apart": {"ell": ELL, "sell": ("sell",), "pjds": ("pjds",)}}


def family(families, fmt):
    return next((name for name, members in families.items() if fmt in members), "csr")


def candidates(pred, families, top=3, band=1.0):
    ranked = sorted(pred, key=lambda f: (pred[f], f))
    out, limit, seen = ranked[:top], pred[ranked[0]] * (1 + band), set()
    for f in ranked:
        if family(families, f) not in seen:
            seen.add(family(families, f))
            if pred[f] <= limit and f not in out:
                out.append(f)
    return out


def machine(path):
    p = path.lower()
    if "h200" in p or "2026-11-26-dia/" in p:
        return "h200"
    if "xeon" in p:
        return "xeon"
    if "run6" in p:
        return "zen5-run6 (dealt slices)"
    return "zen5" if "zen5" in p else "zen4"


def stored_records(machine_of, usable=lambda m, f: True):
    """machine -> [(predicted ms, measured ms)] of every model (not trial) column of every stored
    measured-*.json under reports/, the predictions of formats measured there (``usable``)."""
    groups = defaultdict(list)
    for path in sorted(glob.glob("reports/**/measured-*.json", recursive=True)):
        for r in json.load(open(path)).get("records", []):
            m = r["measured_ms"]
            for label, v in r.items():
                if not isinstance(v, dict) or "predicted_ms" not in v or "trial" in label:
                    continue
                pred = {f: q for f, q in v["predicted_ms"].items()
                        if f in m and q and usable(m, f)}
                if len(pred) >= 2:
                    groups[machine_of(path)].append((pred, m))
    return groups


if __name__ == "__main__":
    for name, recs in sorted(stored_records(machine).items()):
        print(f"== {name}: {len(recs)} (matrix, calibration) records")
        for variant, families in VARIANTS.items():
            ratios, counts = [], []
            for pred, m in recs:
                c = candidates(pred, families)
                choice = c[0]
                best = min(c, key=lambda f: m[f])
                if m[best] < m[choice] * (1 - 0.05):
                    choice = best
                ratios.append(min(m.values()) / m[choice])
                counts.append(len(c))
            gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
            within = sum(r >= 1 / 1.05 for r in ratios) / len(ratios)
            print(f"  {variant:9s} gm {gm:.4f} worst {min(ratios):.3f} within 5 % {within:.1%} "
                  f"candidates {sum(counts) / len(counts):.2f}")
