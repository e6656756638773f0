"""The table of the in-a-row A/B: python inarow_table.py xeon-2core"""
import json, sys, numpy as np
def load(p): return {r["matrix"]: r for r in map(json.loads, open(p))}
runs = {k: load(f"{sys.argv[1]}/inarow-{k}.jsonl") for k in ["0-1", "1-1", "0-2", "1-2"]}
names = list(runs["0-1"])
print(f"{'matrix':44s} {'fmt':5s} | x MKL in a row: free-1 pinned-1 free-2 pinned-2 | clspmv ms free / pinned (medians over 2 runs x 2 reps)")
g = {k: [] for k in runs}
speed = []
for n in names:
    row = []
    for k, rs in runs.items():
        r = rs[n]
        c = min(r["clspmv0"], r["clspmv1"]); m = min(r["mkl0"], r["mkl1"])
        row.append(m / c); g[k].append(m / c)
    cf = np.median([runs[k][n][f"clspmv{i}"] for k in ("0-1", "0-2") for i in (0, 1)])
    cp = np.median([runs[k][n][f"clspmv{i}"] for k in ("1-1", "1-2") for i in (0, 1)])
    speed.append(cf / cp)
    print(f"{n[:44]:44s} {runs['0-1'][n]['format'][:5]:5s} | " + " ".join(f"{v:6.2f}" for v in row) + f" | {cf:7.3f} / {cp:7.3f}  x{cf/cp:.2f}")
print("geomean x MKL in a row:", " ".join(f"{k}={np.exp(np.mean(np.log(v))):.3f} (worst {min(v):.2f})" for k, v in g.items()))
print(f"pinned speed-up of clspmv's products in a row: geomean {np.exp(np.mean(np.log(speed))):.3f}, range {min(speed):.2f}-{max(speed):.2f}")
