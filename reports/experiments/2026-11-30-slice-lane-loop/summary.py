"""Geometric means (range) of the side-by-side files, per value type: python3 summary.py FILE...

For the slice files (SLICE_LANE_LOOP), sell and pjds pooled: the loop over lanes' time over the
vectors', the row kernel's (the control) over each. For the csr-blocks files (CSR_LANE_LOOP),
per unroll: the loop over lanes' time over the steps', unroll 1's (the control) over each."""
import math
import re
import sys


def geo(values: list[float]) -> str:
    mean = math.exp(sum(map(math.log, values)) / len(values))
    return f"{mean:.2f} ({min(values):.2f}-{max(values):.2f})"


def lines(path: str):
    for line in open(path):
        if line.startswith("gen:"):
            times = {k: float(v) for k, v in re.findall(r"(\S+?)=([0-9.]+)(?= )", line) if "-" in k}
            yield line.split()[1], times, (times["control-a"] + times["control-b"]) / 2


for path in sys.argv[1:]:
    groups: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    for dtype, t, control in lines(path):
        variants = sorted({k.rsplit("-", 1)[0] for k in t if k.endswith("-with")})
        slices = all(v.endswith("slice_items=1") for v in variants)
        for v in variants:
            key = (dtype, "sell+pjds" if slices else v)
            w, wo = t[f"{v}-with"], t[f"{v}-without"]
            groups.setdefault(key, []).append((w / wo, control / w, control / wo))
    print(path)
    for (dtype, what), r in groups.items():
        print(f"  {dtype} {what} (n={len(r)}): lanes/old time {geo([a for a, _, _ in r])}; "
              f"control/lanes {geo([b for _, b, _ in r])}; control/old {geo([c for _, _, c in r])}")
