"""The prior of the quick calibration (:mod:`.quick`): per device class (CPU, GPU) every format's
kernel coefficients relative to the device's launch cost and streaming bandwidth, its
conversion coefficients, and the x cache's miss curves, derived from full calibrations.

A full calibration's coefficient of a term is a device's cost per unit of that term; divided by
the device's own scale (the launch cost for the ``launch`` term, the inverse streaming bandwidth
for every other term: bytes, lines of x and the per-item terms alike) it becomes a shape that
devices of one class share more closely than the coefficients themselves. :func:`derive` takes
the median of those shapes per device (its calibrations), then across devices, so that a device
with many stored calibrations counts once. The quick calibration multiplies the shapes by its
own measured scales and fits three group multipliers to a handful of probes.

The shipped prior (:data:`clspmv.model.prior_data.PRIORS`) is :func:`derive` of the full
calibrations of the current model form (:data:`clspmv.model.timemodel.TERMS`, measurement 10 or
later) committed under ``reports/`` at commit 976aa3b (:data:`SOURCES`): CPUs a 2-core Zen 5
under PoCL 3.1 and 3.0 and a 16-core Xeon under PoCL 5.0, GPUs an H200 and an H100 (NVIDIA
OpenCL). Made again by ``python -m clspmv.model.prior COMMIT`` from a checkout holding them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from .timemodel import CONVERSION_TERMS, TERMS

SOURCES = {
    "cpu": (
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/xeon-77c487f/calibration-xeon.json",
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run4/calibration-zen5-run4.json",
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/zen5-run5/calibration-zen5-run5.json",
        "reports/2026-11-27-cpu-2core-zen5-pocl30/calibration-pthread-AMD_EPYC-3.0-rc2-"
        "AuthenticAMD-26-2-0.1.0.json",
        "reports/2026-11-27-cpu-2core-zen5-pocl30/calibration-pthread-skylake-avx512-AMD_EPYC-"
        "3.1_debian-AuthenticAMD-26-2-0.1.0.json",
        "reports/2026-11-27-cpu-pjds-spread/zen5-run6/calibration-zen5-run6.json",
    ),
    "gpu": (
        "reports/2026-11-26-cpu-2core-zen5-row-lengths/h200-77c487f/calibration-h200.json",
        "reports/2026-11-27-cpu-pjds-spread/h200-c0f5f87/calibration-h200.json",
        "reports/2026-11-27-h100-auto/calibration-NVIDIA_H100_80GB_HBM3-580.159.04-0.1.0.json",
        "reports/2026-11-27-trial-csr-family/h200/calibration-NVIDIA_H200-580.159.04-0.1.0.json",
    ),
}
"""The full calibrations each class's prior is derived from (paths at commit 976aa3b)."""


def scales(launch_s: float, stream_bw: float) -> np.ndarray:
    """Per term of :data:`~clspmv.model.timemodel.TERMS` the device scale a coefficient is
    relative to in the prior: the launch cost for ``launch``, the inverse streaming bandwidth for
    the others."""
    out = np.full(len(TERMS), 1.0 / stream_bw)
    out[TERMS.index("launch")] = launch_s
    return out


def _median_curve(curves: list[list[list[float]]]) -> list[list[float]]:
    """The per-size median of miss curves measured at the same sizes (empty when none)."""
    curves = [c for c in curves if c]
    if not curves:
        return []
    sizes = [b for b, _ in curves[0]]
    same = [c for c in curves if [b for b, _ in c] == sizes]
    shares = np.median(np.array([[m for _, m in c] for c in same]), axis=0)
    return [[float(b), float(m)] for b, m in zip(sizes, np.maximum.accumulate(shares),
                                                 strict=True)]


def _median_by_device(per_device: dict[str, list[np.ndarray]]) -> np.ndarray:
    """The median over devices of each device's median."""
    return np.median(np.array([np.median(np.array(v), axis=0) for v in per_device.values()]),
                     axis=0)


def derive(calibrations: Iterable[dict[str, object]]) -> dict[str, object]:
    """The prior of one device class from full calibrations' JSON (current model form): per
    format the median kernel shape (coefficients over :func:`scales`) and conversion
    coefficients, per device then across devices, and the median miss curves."""
    shapes: dict[str, dict[str, list[np.ndarray]]] = {}
    conversions: dict[str, dict[str, list[np.ndarray]]] = {}
    x_miss, stream_miss = [], []
    for data in calibrations:
        if data.get("terms") != list(TERMS) or data.get("conversion_terms") != list(
                CONVERSION_TERMS):
            raise ValueError(f"calibration of {data.get('device')} is of another model form")
        device = f"{data['device']} {data['driver']}"
        scale = scales(float(data["launch_s"]), float(data["stream_bw"]))  # type: ignore[arg-type]
        for fmt, coef in dict(data["kernel"]).items():  # type: ignore[call-overload]
            shapes.setdefault(fmt, {}).setdefault(device, []).append(np.asarray(coef) / scale)
        for fmt, coef in dict(data["conversion"]).items():  # type: ignore[call-overload]
            conversions.setdefault(fmt, {}).setdefault(device, []).append(np.asarray(coef))
        x_miss.append(data.get("x_miss") or [])
        stream_miss.append(data.get("stream_miss") or [])
    return {
        "kernel": {f: [float(v) for v in _median_by_device(d)] for f, d in shapes.items()},
        "conversion": {f: [float(v) for v in _median_by_device(d)]
                       for f, d in conversions.items()},
        "x_miss": _median_curve(x_miss),  # type: ignore[arg-type]
        "stream_miss": _median_curve(stream_miss),  # type: ignore[arg-type]
    }


def _at_commit(commit: str, path: str) -> dict[str, object]:
    """The JSON of ``path`` at ``commit`` of the checkout this runs in."""
    raw = subprocess.run(["git", "show", f"{commit}:{path}"], check=True, capture_output=True,
                         cwd=Path(__file__).resolve().parents[2]).stdout
    return json.loads(raw)


def main(commit: str) -> None:
    """Write :mod:`clspmv.model.prior_data` from :data:`SOURCES` at ``commit``."""
    priors = {kind: derive(_at_commit(commit, p) for p in paths)
              for kind, paths in SOURCES.items()}
    target = Path(__file__).with_name("prior_data.py")
    lines = ["# ruff: noqa: E501 (generated: one format per line)",
             '"""The quick calibration\'s prior (:mod:`clspmv.model.prior`): generated by',
             f'``python -m clspmv.model.prior {commit}``; do not edit."""', "",
             "PRIORS: dict[str, dict[str, object]] = {"]
    for kind, prior in priors.items():
        lines.append(f"    {kind!r}: {{")
        for part in ("kernel", "conversion"):
            lines.append(f"        {part!r}: {{")
            for fmt, coef in prior[part].items():  # type: ignore[attr-defined]
                lines.append(f"            {fmt!r}: [{', '.join(f'{c:.4g}' for c in coef)}],")
            lines.append("        },")
        for part in ("x_miss", "stream_miss"):
            points = ", ".join(f"[{b:.0f}, {m:.4g}]" for b, m in prior[part])  # type: ignore
            lines.append(f"        {part!r}: [{points}],")
        lines.append("    },")
    lines.append("}")
    target.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "976aa3b")
