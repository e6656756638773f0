"""The longest coefficient of the CPU full calibrations behind the prior (clspmv.model.prior.SOURCES at
976aa3b and KERNEL_CHANGES), per device and per compute unit. Usage: python longest_per_unit.py"""
import json, gzip, subprocess, sys
from clspmv.model.prior import SOURCES, KERNEL_CHANGES
from clspmv.model.timemodel import TERMS
i = TERMS.index("longest")
def load(commit, path):
    raw = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True, check=True).stdout
    if path.endswith(".gz"): raw = gzip.decompress(raw)
    return json.loads(raw)
items = [("976aa3b", p) for p in SOURCES["cpu"]]
for pair in KERNEL_CHANGES["cpu"][1]:
    items += list(pair)
seen=set()
for c, p in items:
    if (c,p) in seen: continue
    seen.add((c,p))
    d = load(c, p)
    facts = (d.get("measurements") or {}).get("facts", {})
    units = facts.get("compute_units")
    bw = d["stream_bw"]
    row = [f"{c} {p.split('/')[-2][:22]:22s} units {units:2d} bw {bw/1e9:5.1f} GB/s"]
    for f in ("sell", "pjds", "ellr", "dia"):
        k = d["kernel"].get(f)
        if k: row.append(f"{f}: {k[i]*1e9:7.3f} ns, per device {k[i]*bw:6.0f}, per unit "
                         f"{k[i]*bw/units:5.0f}")
    print(" | ".join(row))
