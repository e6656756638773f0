"""Quick calibrations on DEVICE with the probes in the cache of ``PROBE_ROWS`` rows (the default)
and of ``PROBE_ROWS`` x compute units / 2 ("scaled": the same rows per compute unit as on a
2-core CPU), ``--repeat`` of each; auto's choice under each judged in the formats' search times
of RESULTS.json (tools/cpu_vs_mkl.py's, measured on the same machine just before).

    python probe_size.py DEVICE RESULTS.json [--repeat 3] [--out DIR]
"""
import argparse
import json
import runpy
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "2026-11-29-long-row-probe"))
from replay_common import judge  # noqa: E402

import clspmv  # noqa: E402
from clspmv.model import quick  # noqa: E402
from clspmv.precision import resolve as resolve_precision  # noqa: E402

ev = runpy.run_path(str(Path(__file__).parents[3] / "tools" / "model_eval.py"))
parser = argparse.ArgumentParser()
parser.add_argument("device")
parser.add_argument("results", nargs="+")
parser.add_argument("--repeat", type=int, default=3)
parser.add_argument("--out", default=".")
args = parser.parse_args()
dev = clspmv.select_device(args.device)
prec = resolve_precision(np.float64, np.float64)
default = quick.PROBE_ROWS
scaled = default * max(1, dev.compute_units // 2)
cals = {}
for label, rows in (("default", default), ("scaled", scaled)):
    quick.PROBE_ROWS = rows
    for i in range(args.repeat):
        cal = quick.quick_calibrate(dev)
        cals[f"{label}{i}"] = cal
        probes = [t for k, t in cal.measurements["quick"]["kernel_s"].items()
                  if not k.startswith("launch/")]
        print(f"{label} {i}: {rows} rows, {cal.seconds:.1f} s, probe products "
              f"{min(probes) * 1e6:.0f}-{max(probes) * 1e6:.0f} us", flush=True)
        Path(args.out, f"calibration-{label}{i}.json").write_text(json.dumps(cal.to_json()))
quick.PROBE_ROWS = default
judge(args.results, cals,
      lambda name, csr, c, measured: ev["evaluate"](csr, dev, prec, c, measured)["auto"])
