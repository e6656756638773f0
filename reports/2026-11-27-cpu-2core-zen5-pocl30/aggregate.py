import re, sys, math
def agg(files):
    out = {"current": [], "current+trial": []}
    for f in files:
        for line in open(f):
            m = re.search(r"\| current: (\S+)\s+([\d.]+) err.*\| current\+trial: (\S+)\s+([\d.]+) \(", line)
            if m:
                out["current"].append((float(m.group(2)), line.split()[0], m.group(1)))
                out["current+trial"].append((float(m.group(4)), line.split()[0], m.group(3)))
    for k, v in out.items():
        r = [x[0] for x in v]
        gm = math.exp(sum(math.log(x) for x in r) / len(r))
        w = min(v)
        within = sum(x >= 1 / 1.05 for x in r)
        print(f"  {k:14s} n={len(r)} gm {gm:.3f} worst {w[0]:.3f} ({w[1][:40]} {w[2]}) within5% {within}/{len(r)} ({100*within/len(r):.0f}%)")
print("target set"); agg([f"eval-pocl30-{s}.txt" for s in sys.argv[1].split(",")])
print("heldout"); agg(["eval-pocl30-heldout.txt"])
