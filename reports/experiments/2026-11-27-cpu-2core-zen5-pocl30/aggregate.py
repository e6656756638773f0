"""auto / fastest over several tools/model_eval.py --trial outputs (the files PREFIX<suite>.txt):
geometric mean, worst and share within 5 % (ratio >= 1 / 1.05), model alone and with the trial.

    python aggregate.py eval-pocl30- demo,cpu,offsuite,real,anchors heldout
"""
import math
import re
import sys

LINE = re.compile(r"\| current: (\S+)\s+([\d.]+) err.*\| current\+trial: (\S+)\s+([\d.]+) \(")


def aggregate(files: list[str]) -> None:
    out: dict[str, list[tuple[float, str, str]]] = {"current": [], "current+trial": []}
    for name in files:
        for line in open(name):
            m = LINE.search(line)
            if m:
                out["current"].append((float(m.group(2)), line.split()[0], m.group(1)))
                out["current+trial"].append((float(m.group(4)), line.split()[0], m.group(3)))
    for key, rows in out.items():
        ratios = [r[0] for r in rows]
        gm = math.exp(sum(map(math.log, ratios)) / len(ratios))
        worst = min(rows)
        within = sum(r >= 1 / 1.05 for r in ratios)
        print(f"  {key:14s} n={len(ratios)} gm {gm:.3f} worst {worst[0]:.3f} ({worst[1][:40]} "
              f"{worst[2]}) within5% {within}/{len(ratios)} ({100 * within / len(ratios):.0f}%)")


if __name__ == "__main__":
    prefix = sys.argv[1]
    for group in sys.argv[2:]:
        print(group)
        aggregate([f"{prefix}{suite}.txt" for suite in group.split(",")])
