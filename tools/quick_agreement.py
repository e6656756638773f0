"""How far the quick calibration's choice of format is from the full calibration's, per suite.

    python tools/quick_agreement.py --full FULL.json --quick QUICK.json [QUICK2.json ...]
        [--suites demo cpu ...] [--device 1:0 | --device facts] [--dtype float64]
        [--measure demo real] [--out records.json]

For every matrix of the suites (``clspmv.bench.suites``; ``real`` is the SuiteSparse files of
the shared matrix folder, never used to tune the model) each calibration chooses as
``format="auto"`` does with neither a trial nor a strips plan (``clspmv.model.select``): the
quick choice is judged by the full model's predicted kernel time, ``full(quick's choice) /
full(full's choice)`` (1.0 where they agree). For the suites of ``--measure`` the two choices
are also timed on the device (``clspmv.model.probes.kernel_times``, in rounds, the fastest),
``measured(quick's choice) / measured(full's choice)``. Per suite: the share of matrices whose
ratio is at most 1.05 (target: 90 % or more) and the worst ratio (target: at most 1.25).

``--device facts`` needs no device: the device facts stored in the full calibration stand in
(a GPU's calibrations judged on any machine; nothing can be measured then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import SUITES, suite
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, convert
from clspmv.matrix import canonical_csr
from clspmv.model.probes import REPEATS, kernel_times
from clspmv.model.select import select
from clspmv.model.timemodel import Calibration
from clspmv.precision import resolve

WITHIN = 1.05
WORST = 1.25


def load(path: str) -> Calibration:
    """The calibration in the file ``path``."""
    return Calibration.from_json(json.loads(Path(path).read_text()), SINGLE_FORMATS)


def facts_device(cal: Calibration) -> SimpleNamespace:
    """A stand-in of the device a full calibration measured, from its stored facts."""
    facts = (cal.measurements or {}).get("facts")
    if not facts:
        raise SystemExit(f"the calibration of {cal.device} stores no device facts")
    return SimpleNamespace(name=cal.device, max_work_group_size=1024, is_simulator=False,
                           **facts)


def measured_ms(csr, device, precision, names: set[str]) -> dict[str, float]:
    """Kernel milliseconds of each format of ``names`` on the device, timed in rounds."""
    uploaded = {}
    for name in names:
        fmt = convert(csr, name, FORMAT_CLASSES[name].layout_for(device), precision)
        fmt.upload(device)
        uploaded[name] = fmt
    x = cl_array.to_device(device.queue, np.ones(csr.shape[1], precision.value))
    y = cl_array.zeros(device.queue, csr.shape[0], precision.value)
    return {k: v * 1e3 for k, v in kernel_times(uploaded, x, y, REPEATS).items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", required=True, help="a full calibration's file")
    parser.add_argument("--quick", nargs="+", required=True, help="quick calibrations' files")
    parser.add_argument("--suites", nargs="+", default=list(SUITES))
    parser.add_argument("--device", default="1:0")
    parser.add_argument("--dtype", default="float64")
    parser.add_argument("--measure", nargs="*", default=[], help="suites timed on the device")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    full = load(args.full)
    stems = [Path(p).stem for p in args.quick]
    # calibration files are named by device: files of one device differ by their folder
    labels = stems if len(set(stems)) == len(stems) else [Path(p).parent.name for p in args.quick]
    if len(set(labels)) != len(labels):
        raise SystemExit("give the quick calibrations distinct file or folder names")
    quicks = {label: load(p) for label, p in zip(labels, args.quick, strict=True)}
    device = (facts_device(full) if args.device == "facts"
              else clspmv.select_device(args.device))
    precision = resolve(args.dtype, np.float64)
    records = []
    for name in args.suites:
        per_quick: dict[str, list[float]] = {k: [] for k in quicks}
        measured_ratios: dict[str, list[float]] = {k: [] for k in quicks}
        for source in resolve_all(list(suite(name)), progress=False):
            csr = canonical_csr(source.load(), precision.value)
            chosen = select(csr, device, precision, calibration_=full, trial=False,
                            strips=False)
            rec = {"suite": name, "matrix": source.name, "entries": int(csr.nnz),
                   "full": chosen.format}
            line = f"{name:15s} {source.name[:44]:44s} full={chosen.format:12s}"
            picks = {}
            for label, cal in quicks.items():
                pick = select(csr, device, precision, calibration_=cal, trial=False,
                              strips=False).format
                ratio = (chosen.predictions[pick].kernel_s
                         / chosen.predictions[chosen.format].kernel_s)
                per_quick[label].append(ratio)
                picks[label] = pick
                rec[label] = {"choice": pick, "predicted_ratio": ratio}
                line += f" | {label}: {pick:12s} {ratio:.3f}"
            if name in args.measure and args.device != "facts":
                ms = measured_ms(csr, device, precision, {chosen.format, *picks.values()})
                rec["measured_ms"] = ms
                for label, pick in picks.items():
                    r = ms[pick] / ms[chosen.format]
                    measured_ratios[label].append(r)
                    rec[label]["measured_ratio"] = r
                    line += f" m {r:.3f}"
            records.append(rec)
            print(line, flush=True)
        for label in quicks:
            for what, ratios in (("predicted", per_quick[label]),
                                 ("measured", measured_ratios[label])):
                if ratios:
                    r = np.array(ratios)
                    within = int(np.count_nonzero(r <= WITHIN))
                    print(f"SUMMARY {name:15s} {label:24s} {what:9s} within 5 %: "
                          f"{within}/{r.size} ({100 * within / r.size:.0f} %), worst "
                          f"{r.max():.3f}", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
