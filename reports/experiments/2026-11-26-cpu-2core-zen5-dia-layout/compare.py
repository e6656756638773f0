"""Two model_eval runs of the same suites side by side (measured-S-A.json, measured-S-B.json in
this folder, from ``tools/model_eval.py --suite S --device 1:0 --trial --out ...``).

Per run: format="auto" against the fastest format of that run (the model alone, and with the
trial), over the target set (demo, cpu, offsuite, real) and the held-out suite. Per matrix: the
fastest format's time and auto's in run A against run B (two runs, not side by side: a ratio
between them carries the machine's drift, 0.9-1.1 on matrices neither change touched), and DIA
against the best other format inside each run (side by side there).

Usage: python compare.py A B   (e.g. 73f0df0 4c40772; a tag FOLDER/TAG reads another report
folder's measured-S-TAG.json, e.g. ../../2026-11-26-cpu-2core-zen5-ell-order/281133b)"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).parent
SUITES = ("cpu", "heldout", "demo", "offsuite", "real")
SETS = {"target set (demo, cpu, offsuite, real)": ("demo", "cpu", "offsuite", "real"),
        "heldout": ("heldout",), "all five": SUITES}


def records(tag: str, suite: str) -> dict[str, dict]:
    folder, _, name = tag.rpartition("/")
    data = json.loads((HERE / folder / f"measured-{suite}-{name}.json").read_text())
    return {r["matrix"]: r for r in data["records"]}


def geomean(values: list[float]) -> float:
    return math.exp(sum(map(math.log, values)) / len(values))


def summary(ratios: list[float]) -> str:
    near = sum(r >= 0.95 for r in ratios)
    return (f"{len(ratios):2d} matrices gm {geomean(ratios):.3f} worst {min(ratios):.3f} "
            f"within 5 %: {near} ({100 * near / len(ratios):.0f} %)")


def dia_lead(times: dict[str, float]) -> str:
    if "dia" not in times:
        return "refused"
    return f"{min(v for k, v in times.items() if k != 'dia') / times['dia']:.2f}"


def main() -> None:
    a, b = sys.argv[1:3]
    for name, suites in SETS.items():
        for tag in (a, b):
            recs = [r for s in suites for r in records(tag, s).values()]
            print(f"{name:40s} {tag}: model {summary([r['current']['ratio'] for r in recs])}"
                  f" | trial {summary([r['current+trial']['ratio'] for r in recs])}")
    speed = {"fastest": [], "auto": [], "trial": []}
    for suite in SUITES:
        old, new = records(a, suite), records(b, suite)
        print(f"== {suite}: {a} -> {b}: fastest ms, time ratios of the fastest, of auto (model"
              " alone) and with the trial; the best other format / dia in each run")
        for m, rn in new.items():
            ro = old[m]
            to, tn = ro["measured_ms"], rn["measured_ms"]
            pick = {k: (to[ro[key]["auto"]] / tn[rn[key]["auto"]])
                    for k, key in (("auto", "current"), ("trial", "current+trial"))}
            speed["fastest"].append(min(to.values()) / min(tn.values()))
            speed["auto"].append(pick["auto"])
            speed["trial"].append(pick["trial"])
            print(f"  {m[:48]:48s} {min(to.values()):8.3f} -> {min(tn.values()):8.3f} ms "
                  f"({speed['fastest'][-1]:4.2f}x)  auto {pick['auto']:4.2f}x  trial "
                  f"{pick['trial']:4.2f}x  other/dia {dia_lead(to):>7s} -> {dia_lead(tn):>7s}")
    print(f"geometric means over {len(speed['fastest'])} matrices, {a} time / {b} time: fastest "
          f"{geomean(speed['fastest']):.3f}, auto {geomean(speed['auto']):.3f}, auto with the "
          f"trial {geomean(speed['trial']):.3f}")


if __name__ == "__main__":
    main()
