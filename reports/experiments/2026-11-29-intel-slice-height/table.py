"""The table of ab.jsonl: per matrix sell / pjds time with slices of one row over the new slice
height, and the fastest of the four."""
import json, sys
import numpy as np
recs = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'matrix':50s} {'nnz':>7s}  sell C=1 / C={recs[0]['C']}        pjds C=1 / C={recs[0]['C']}        csr-blocks csr-merge  fastest")
gs, gp = [], []
for r in recs:
    m = r["ms"]
    s, p = m["sell-c1"] / m["sell"], m["pjds-c1"] / m["pjds"]
    gs.append(s); gp.append(p)
    fastest = min(("csr-blocks", "csr-merge", "sell", "pjds"), key=m.get)
    print(f"{r['matrix'][:50]:50s} {r['nnz']/1e6:6.2f}M  {m['sell-c1']:7.2f} / {m['sell']:6.2f} x{s:4.2f}  {m['pjds-c1']:7.2f} / {m['pjds']:6.2f} x{p:4.2f}  {m['csr-blocks']:7.2f} {m['csr-merge']:7.2f}  {fastest}")
g = lambda v: float(np.exp(np.mean(np.log(v))))
print(f"geometric mean of C=1 time / new: sell {g(gs):.2f} ({min(gs):.2f}-{max(gs):.2f}), pjds {g(gp):.2f} ({min(gp):.2f}-{max(gp):.2f})")
