"""Quick calibrations with sell/pjds in the in-cache probes (new) and without (old), alternating."""
import json, sys
import clspmv
from clspmv.formats.sell import Sell, Pjds
from clspmv.model.quick import quick_calibrate
dev = clspmv.select_device(sys.argv[1])
prefix = sys.argv[2]
new = Sell.probed_in
for i in range(int(sys.argv[3]) if len(sys.argv) > 3 else 2):
    for variant, probed in (("old", ("quick cpu large",)), ("new", new)):
        Sell.probed_in = Pjds.probed_in = probed
        cal = quick_calibrate(dev)
        with open(f"{prefix}-{variant}-{i}.json", "w") as f:
            json.dump(cal.to_json(), f)
        print(variant, i, round(cal.seconds, 2), "s", {k: round(v, 3) for k, v in cal.fit.items()}, flush=True)
