"""Quick calibrations of the checkout as it stands."""
import json, sys
import clspmv
from clspmv.model.quick import quick_calibrate
dev = clspmv.select_device(sys.argv[1])
for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 2):
    cal = quick_calibrate(dev)
    with open(f"{sys.argv[2]}-{i}.json", "w") as f:
        json.dump(cal.to_json(), f)
    print(i, round(cal.seconds, 2), "s shared", round(cal.large_shared, 2), "scatter", round(cal.large_scatter, 3), {k: round(v, 2) for k, v in cal.large_ratio.items() if k in ("csr-blocks", "ellr", "sell", "pjds")}, flush=True)
