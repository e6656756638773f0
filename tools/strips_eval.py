"""Experiment (issue 10, row strips): ``strips`` against every single format on matrices that join
differently structured row blocks.

For each ``gen:`` spec: the product time of every single format, of the strips plan the dynamic
programme finds from the device's calibration (:func:`clspmv.model.strips.plan_strips`), and,
for a ``gen:stacked`` spec, of the two-block plan cut where the structure changes with each part
in its own measured fastest format (what a perfect model would find). Times are the minimum over
interleaved rounds of a product's kernel time as the benchmarks take it (OpenCL profiling events,
first kernel's start to last kernel's end, behind :mod:`clspmv.cover`'s spin), in ms, robust to
other jobs on a shared machine. ``auto (trial)`` is ``format="auto"`` with
``expected_products=10**6`` and ``trial=True`` (the device's stored calibration): the plan, its
blocks tried on the device (:mod:`clspmv.model.strips_trial`). Prints one JSON line per matrix.

Usage: ``python tools/strips_eval.py DEVICE_SPEC [--calibration FILE] [--float32] SPEC ...``,
e.g. ``python tools/strips_eval.py nvidia gen:stacked:k=120,scale=21 gen:stacked:k=60,scale=20,
count=16,long=100000``. Without ``--calibration`` the device's stored calibration is used (measured
on first use unless ``CLSPMV_CALIBRATE=0``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.generators import generate, parse_spec
from clspmv.cover import matrix_ns
from clspmv.errors import UnsuitableFormatError
from clspmv.formats import SINGLE_FORMATS
from clspmv.model import calibration
from clspmv.model.strips import plan_strips
from clspmv.model.timemodel import Calibration

AUTO_PRODUCTS = 10**6
"""``expected_products`` of the ``format="auto"`` matrix: enough for a strips search."""


def build(A, fmt: str, dev, dtype, **params):
    try:
        return clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=dev, dtype=dtype, **params)
    except UnsuitableFormatError:
        return None


def timed(mats: dict, shape: tuple[int, int], dev, dtype, rounds: int = 6, reps: int = 10
          ) -> dict[str, float]:
    """Least kernel ms (the benchmarks' kernel time, :mod:`clspmv.cover`) of one product of
    every matrix of ``mats``, interleaved rounds."""
    q = dev.queue
    x = cl_array.to_device(q, np.random.default_rng(0).standard_normal(shape[1]).astype(dtype))
    y = cl_array.zeros(q, shape[0], dtype)
    best = dict.fromkeys(mats, np.inf)
    for M in mats.values():
        M.matvec(x, y)
    for _ in range(rounds):
        for key, M in mats.items():
            for _ in range(reps):
                ns, _ = matrix_ns(M, lambda M=M: M.matvec(x, y))
                best[key] = min(best[key], ns / 1e6)
    return {k: round(v, 4) for k, v in best.items()}


def fastest(times: dict[str, float]) -> str:
    return min(times, key=times.__getitem__)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--calibration", type=Path)
    parser.add_argument("--float32", action="store_true")
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    dtype = np.float32 if args.float32 else np.float64
    cal = (Calibration.from_json(json.loads(args.calibration.read_text()), SINGLE_FORMATS)
           if args.calibration else calibration(dev))
    wg = min(256, dev.max_work_group_size)
    for spec in args.specs:
        A = generate(spec)
        plan = plan_strips(A, cal, dev.simd_width, wg)
        mats = {f: M for f in SINGLE_FORMATS if (M := build(A, f, dev, dtype)) is not None}
        mats["strips (model plan)"] = build(A, "strips", dev, dtype, **plan.params())
        out: dict[str, object] = {"spec": spec, "nnz": A.nnz, "device": dev.name,
                                  "plan": plan.blocks, "predicted_gain": round(plan.gain, 3),
                                  "plan_ms": round(plan.cost_ms, 1)}
        name, p = parse_spec(spec)
        if name == "stacked":
            cut = A.shape[0] - 2 ** int(p.get("scale", 15))
            best_part = []
            for part in (A[:cut], A[cut:]):
                part_mats = {f: M for f in SINGLE_FORMATS
                             if (M := build(part, f, dev, dtype)) is not None}
                best_part.append(fastest(timed(part_mats, part.shape, dev, dtype, rounds=3)))
            measured_plan = [(0, cut, best_part[0]), (cut, A.shape[0], best_part[1])]
            mats["strips (measured plan)"] = build(A, "strips", dev, dtype, blocks=measured_plan)
            out["measured_plan"] = measured_plan
        # format="auto" as a user with many products gets it: the plan, then its trial
        auto = clspmv.DeviceMatrix.from_scipy(A, device=dev, dtype=dtype,
                                              expected_products=AUTO_PRODUCTS, trial=True)
        mats["auto (trial)"] = auto
        sel = auto.selection
        out.update(auto=auto.format, auto_blocks=sel.strips.blocks if auto.format == "strips"
                   else None, auto_trial_ms=sel.trial_ms, auto_trial_s=round(sel.trial_s, 2))
        times = timed(mats, A.shape, dev, dtype)
        singles = {f: t for f, t in times.items() if f in SINGLE_FORMATS}
        best = fastest(singles)
        out.update(times_ms=times, best_single=best, speedups={
            k: round(singles[best] / t, 3) for k, t in times.items()
            if k.startswith(("strips", "auto"))})
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
