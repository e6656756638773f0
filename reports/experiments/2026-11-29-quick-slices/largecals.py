"""Quick calibrations with sell/pjds in the in-cache probes and the large probes forced on."""
import json, sys
import clspmv
from clspmv.model import quick
from clspmv.model.probes import probed_formats
from clspmv.model.quick import quick_calibrate
dev = clspmv.select_device(sys.argv[1])
prefix = sys.argv[2]
quick.large_probe_formats = lambda layout: probed_formats("quick cpu large")
for i in range(2):
    cal = quick_calibrate(dev)
    with open(f"{prefix}-large-{i}.json", "w") as f:
        json.dump(cal.to_json(), f)
    print(i, round(cal.seconds, 2), "s", {k: round(v, 2) for k, v in cal.large_ratio.items()}, round(cal.large_miss, 2), flush=True)
