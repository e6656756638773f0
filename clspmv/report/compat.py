"""Reading the meta data of older results.json files: what they did not record yet, as it was
when they were made, so that an old run renders the same tables today.

Runs before this reader recorded no ``definitions`` (the baselines, mixed precision), no
``method`` and no sweep defaults, and runs before the ``mkl-optimised`` baseline did not say which
MKL handle ``mkl`` was; :func:`upgrade_meta` fills them in. The values below are
frozen history, not today's defaults: do not change them when the library's defaults change.
(Old records' ``speedup_vs_<name>`` fields are read by :func:`clspmv.bench.records.upgrade`.)
"""

from __future__ import annotations

from typing import Any

from ..bench import methodology

LEGACY_BASELINES = ("scipy", "mkl", "cusparse")
"""The baselines every run knew before they were registered (the columns of its tables)."""

PLAIN_MKL = ("MKL's plain handle: no mkl_sparse_set_mv_hint, no mkl_sparse_optimize "
             "(sparse_dot_mkl binds neither; the only MKL path before the mkl-optimised "
             "baseline)")
"""What the ``mkl`` baseline of runs before the ``mkl-optimised`` one was: their meta did not say
which MKL handle it was, as there was one only."""

LEGACY_FORMATS = ("coo", "csr-scalar", "csr-vector", "csr-aligned", "csr-adaptive", "csr-blocks",
                  "ell", "ellr", "ellr-t", "pjds", "sell", "hyb", "dia")
"""The order of the formats (the columns of the tables) before runs recorded it."""

LEGACY_MIXED = {
    "dtype": "mixed", "baseline_dtype": "float32",
    "note": "`mixed`: float32 values, x and y with every sum in float64 "
            "(`DeviceMatrix.from_scipy(A, dtype=\"mixed\")`). Its baselines are the float32 "
            "ones (scipy, MKL, cuSPARSE in float32, same matrix and x): `× X` is X's float32 "
            "time / the mixed kernel time.",
}
"""How mixed precision was named and compared before runs recorded it."""

LEGACY_SWEEP_DEFAULTS = {
    "work_group": {f: {"cpu": 256, "gpu": 256} for f in (
        "csr-scalar", "csr-vector", "ellr", "ellr-t")} | {
        "csr-adaptive": {"cpu": 256, "gpu": 128}},
    "unroll": 1, "adaptive_block": "max",
}
"""The defaults of the sweep's runs before runs recorded them (those of
``reports/2026-11-22-h200-perf``; csr-scalar's GPU work-group changed after it)."""


LEGACY_WALL = (
    "Wall time: one product from a numpy x to a numpy y, including the host→device copy of x "
    "and the device→host copy of y (the PCIe transfer scenario of the pJDS paper, "
    f"{methodology.PAPERS['pjds-multigpu']}, §2.2).")
"""The wall-time bullet of :data:`clspmv.bench.methodology.METHOD` before the wall products
were taken in the kernel time's rounds."""

LEGACY_KERNEL = (
    "Kernel time: OpenCL profiling events of each product (start to end of every kernel of the "
    "product, summed), after warm-up products, with x and y on the device: median of the "
    "repeats (min and max are in results.json). cuSPARSE: CUDA events around each product, so "
    "both GPU times are kernel-only. scipy and MKL: the host wall clock of the call (x and y "
    "are in host memory anyway).")
"""The kernel-time bullet before cuSPARSE's products were queued behind a copy and a product's
kernels were timed from the first one's start to the last one's end: those runs' cuSPARSE times
include the host's part of cupy's call, and their times of products of several kernels leave
out the gaps between the kernels (docs/methodology.md, "How timing changed over time")."""
LEGACY_BULLETS = {"Wall time": LEGACY_WALL, "Kernel time": LEGACY_KERNEL}
"""The bullets of runs that did not record their methodology, by their first words; the others
have not changed since runs began recording them."""


def upgrade_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with what older runs did not record filled in (a new dict; today's meta comes
    back unchanged)."""
    out = dict(meta)
    definitions = dict(out.get("definitions") or {})
    baselines = dict(definitions.get("baselines") or {name: "" for name in LEGACY_BASELINES})
    if "mkl" in baselines and "mkl-optimised" not in baselines:
        baselines["mkl"] = "; ".join(text for text in (baselines["mkl"], PLAIN_MKL) if text)
    definitions["baselines"] = baselines
    definitions.setdefault("formats", list(LEGACY_FORMATS))
    definitions.setdefault("mixed", dict(LEGACY_MIXED))
    out["definitions"] = definitions
    if "method" not in out:  # the prose of the runs before it was recorded
        out["method"] = [LEGACY_BULLETS.get(bullet.split(":")[0], bullet)
                         for bullet in methodology.METHOD]
    sweep = (out.get("settings") or {}).get("sweep")
    if isinstance(sweep, dict) and "defaults" not in sweep:
        out["settings"] = {**out["settings"], "sweep": {**sweep,
                                                        "defaults": LEGACY_SWEEP_DEFAULTS}}
    return out
