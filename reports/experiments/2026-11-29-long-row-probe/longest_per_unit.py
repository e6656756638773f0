"""The ``longest`` coefficient of the CPU full calibrations behind the prior
(clspmv.model.prior.SOURCES at 976aa3b and KERNEL_CHANGES), per device and per compute unit.
Usage: python longest_per_unit.py"""
import gzip
import json
import subprocess

from clspmv.model.prior import KERNEL_CHANGES, SOURCES
from clspmv.model.timemodel import TERMS

LONGEST = TERMS.index("longest")


def load(commit: str, path: str) -> dict:
    """The calibration at ``path`` of ``commit``."""
    raw = subprocess.run(["git", "show", f"{commit}:{path}"], capture_output=True,
                         check=True).stdout
    return json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)


items = [("976aa3b", p) for p in SOURCES["cpu"]]
for pair in KERNEL_CHANGES["cpu"][1]:
    items += list(pair)
for c, p in dict.fromkeys(items):
    d = load(c, p)
    units = d["measurements"]["facts"]["compute_units"]
    bw = d["stream_bw"]
    row = [f"{c} {p.split('/')[-2][:22]:22s} units {units:2d} bw {bw / 1e9:5.1f} GB/s"]
    for f in ("sell", "pjds", "ellr", "dia"):
        k = d["kernel"].get(f)
        if k:
            row.append(f"{f}: {k[LONGEST] * 1e9:7.3f} ns, per device {k[LONGEST] * bw:6.0f}, "
                       f"per unit {k[LONGEST] * bw / units:5.0f}")
    print(" | ".join(row))
