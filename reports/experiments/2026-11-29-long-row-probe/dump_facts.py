"""A quick calibration measured on DEVICE and the device facts a device-free replay needs
(replay_offline.py). Usage: dump_facts.py DEVICE OUT_DIR"""
import json
import sys
from dataclasses import asdict
from pathlib import Path

import clspmv
from clspmv.formats.layout import Layout
from clspmv.model.quick import quick_calibrate

dev = clspmv.select_device(sys.argv[1])
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
(out / "quick-calibration.json").write_text(json.dumps(quick_calibrate(dev).to_json(), indent=1))
facts = {k: getattr(dev, k) for k in ("name", "driver_version", "type", "simd_width",
                                      "compute_units", "cache_bytes", "max_work_group_size",
                                      "local_memory")}
facts["layout"] = asdict(Layout.for_device(dev))
(out / "facts.json").write_text(json.dumps(facts, indent=1))
