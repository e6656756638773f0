import sys, re, math, collections
def load(p):
    out = {}
    for line in open(p):
        parts = line.split()
        if len(parts) < 4 or "geometric" in line or "current:" not in line: continue
        suite, mfile, name = parts[0], parts[1], parts[2]
        m = re.search(r"current: (\S+)\s+([\d.]+)", line)
        fast = re.search(r"fastest=(\S+)", line).group(1)
        out[(suite, mfile, name)] = (m.group(1), float(m.group(2)), fast)
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
def machine(mfile):
    if "zen4-pocl" in mfile: return mfile[:11]
    return "zen5-" + re.search(r"run\d", mfile).group(0) if "zen5" in mfile else ("xeon" if "xeon" in mfile else "h200")
groups = collections.defaultdict(lambda: ([], []))
for k in a:
    if k not in b: continue
    g = (machine(k[1]), "heldout" if k[0] == "heldout" else "target")
    groups[g][0].append(a[k][1]); groups[g][1].append(b[k][1])
    if abs(a[k][1] - b[k][1]) > 0.02:
        print(f"{k[0]:8s} {machine(k[1]):9s} {k[2][:45]:45s} fastest {a[k][2]:12s} base {a[k][0]:12s} {a[k][1]:.3f} -> new {b[k][0]:12s} {b[k][1]:.3f}")
def s(r): return f"gm {math.exp(sum(map(math.log, r))/len(r)):.3f} worst {min(r):.3f} within5 {sum(x>=0.95 for x in r)}/{len(r)}"
for g in sorted(groups):
    print(g, "base", s(groups[g][0]), "| new", s(groups[g][1]))
