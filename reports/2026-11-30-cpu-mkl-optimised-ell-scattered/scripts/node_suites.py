"""Per-suite geometric means from a node run's report.md (its results.json did not come back
from the device tool): the medians table's rows in run order, the first 12 the offsuite, the
next 9 the cpu suite.  python node_suites.py REPORT.md ..."""
import math, sys

for path in sys.argv[1:]:
    rows, on = [], False
    for line in open(path):
        if line.startswith("## From the medians"):
            on = True
        elif line.startswith("## ") and on:
            break
        elif on and line.startswith("| gen:"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((float(cells[4]), float(cells[10])))  # x MKL optimised, auto / fastest
    for name, part in (("offsuite", rows[:12]), ("cpu", rows[12:21])):
        g = [math.exp(sum(math.log(r[i]) for r in part) / len(part)) for i in (0, 1)]
        print(f"{path}: {name} ({len(part)}): x MKL optimised {g[0]:.2f} (worst "
              f"{min(r[0] for r in part):.2f}), auto / fastest {g[1]:.2f} (worst "
              f"{min(r[1] for r in part):.2f})")
