"""Named lists of generated matrices (``clspmv bench --suite NAME``), each in increasing size.

``demo`` (the default: every format in minutes on a 2-core CPU) and ``cpu`` for CPUs, both with a
``stacked`` matrix of differently structured row blocks (the case of the ``strips`` format);
``anchors`` and ``irregular`` for GPUs (``irregular-small``: the irregular shapes for CPUs); and
the evaluation-only ``offsuite``, ``heldout`` and ``real`` (the Matrix Market files of the shared
matrix folder, resolved when asked for), on which no default was tuned. The model's calibration
measures matrices of its own (:func:`clspmv.model.benchmarks.benchmark_matrices`), never a
suite's. Sizes and purposes: docs/benchmarks.md, "Suites".
"""

from __future__ import annotations

import os
from pathlib import Path

SUITES: dict[str, tuple[str, ...]] = {
    "demo": (
        "gen:poisson2d:k=300",                       # 0.45 M entries
        "gen:stencil27:k=30",                        # 0.68 M
        "gen:block:k=16,b=4",                        # 0.43 M
        "gen:random:n=60000,k=8",                    # 0.48 M
        "gen:rmat:scale=15,edges=16",                # 0.47 M
        "gen:denserows:n=60000,w=3,count=8,long=5000",  # 0.46 M
        "gen:banded:n=60000,diags=7,spread=200",     # 0.42 M
        "gen:constrows:n=12000,k=39,spread=500",     # 0.47 M
        "gen:stacked:k=22,scale=13,edges=16",        # 0.39 M: stencil rows above power-law rows
    ),
    "cpu": (
        "gen:poisson2d:k=450",                       # 1.0 M entries
        "gen:banded:n=400000,diags=5,spread=1000",   # 2.0 M
        "gen:random:n=400000,k=10",                  # 4.0 M
        "gen:rmat:scale=19,edges=16",                # 8.0 M
        "gen:constrows:n=300000,k=39,spread=2000",   # 11.7 M
        "gen:stacked:k=60,scale=20,count=16,long=100000",  # 15 M: stencil above band + long rows
        "gen:denserows:n=1500000,w=4,count=16,long=100000",  # 15 M
        "gen:block:k=48,b=5",                        # 19 M
        "gen:stencil27:k=104",                       # 30 M
    ),
    "anchors": (
        "gen:rmat:scale=21,edges=16",                # 32 M entries, power law
        "gen:denserows:n=4000000,w=4,count=16,long=400000",  # 42 M, a few very long rows
        "gen:random:n=6000000,k=10",                 # 60 M, uniform columns
        "gen:constrows:n=2000000,k=39,spread=20000",  # 78 M, equal row lengths (QCD-like)
        "gen:block:k=83,b=5",                        # 99 M, dense 5x5 blocks (DLR2-like)
        "gen:stencil27:k=166",                       # 122 M, 3-D 27-point stencil
    ),
    "irregular": (
        "gen:arrow:n=4000000",                       # 12 M entries: full row, full column
        "gen:denserows:n=4000000,w=3,count=64,long=200000",  # 41 M: 64 rows of 200 k on a band
        "gen:rmat:scale=22,edges=8",                 # 33 M, R-MAT, 61 % of the rows empty
        "gen:emptyrows:n=6000000,k=30,empty=0.8,seed=3",  # 36 M, 80 % of the rows empty
        "gen:chunglu:n=4000000,k=10,seed=4",         # 39 M, web/social graph, hot columns
        "gen:powerlaw:n=2000000,k=21,local=0.7,seed=1",  # 39 M, Zipf rows, 70 % near the diagonal
        "gen:powerlaw:n=2000000,k=21,local=0.0,seed=2",  # 40 M, Zipf rows, uniform columns
    ),
    "irregular-small": (
        "gen:arrow:n=200000",
        "gen:denserows:n=200000,w=3,count=16,long=40000",
        "gen:rmat:scale=18,edges=8",
        "gen:emptyrows:n=300000,k=30,empty=0.8,seed=3",
        "gen:chunglu:n=200000,k=10,seed=4",
        "gen:powerlaw:n=100000,k=21,local=0.7,seed=1",
        "gen:powerlaw:n=100000,k=21,local=0.0,seed=2",
    ),
    "offsuite": (  # evaluation only (see above): parameters used by no other suite
        "gen:chunglu:n=600000,k=8,seed=6",           # ~4 M entries, hot columns
        "gen:banded:n=1500000,diags=3,spread=50000,seed=2",  # 4.5 M, far diagonals
        "gen:poisson2d:k=1000",                      # 5.0 M
        "gen:random:n=1000000,k=6,seed=7",           # 6.0 M
        "gen:powerlaw:n=500000,k=12,local=0.3,seed=11",  # ~6 M, Zipf rows, mostly far columns
        "gen:stacked:k=50,scale=18,edges=8,seed=1",  # ~5 M: stencil rows above R-MAT rows
        "gen:rmat:scale=18,edges=24,seed=3",         # ~6 M
        "gen:block:k=40,b=4,seed=5",                 # ~7 M, dense 4x4 blocks
        "gen:emptyrows:n=1000000,k=16,empty=0.5,seed=8",  # ~8 M, half the rows empty
        "gen:stencil27:k=70",                        # 9.0 M
        "gen:denserows:n=800000,w=6,count=40,long=20000,seed=2",  # ~11 M
        "gen:constrows:n=200000,k=60,spread=500,seed=9",  # 12 M
    ),
    "heldout": (  # evaluation only, added 2026-11-23 before any run measured it (see above)
        "gen:poisson2d:k=150",                       # 0.11 M entries
        "gen:chunglu:n=50000,k=6,seed=21",           # ~0.3 M
        "gen:banded:n=120000,diags=11,spread=3000,seed=22",  # 1.3 M
        "gen:constrows:n=40000,k=27,spread=4000,seed=23",  # 1.1 M
        "gen:stencil27:k=45",                        # 2.4 M
        "gen:powerlaw:n=300000,k=9,local=0.9,seed=24",  # 2.6 M
        "gen:block:k=60,b=3,seed=25",                # 13 M, dense 3x3 blocks
        "gen:emptyrows:n=2000000,k=8,empty=0.3,seed=26",  # 11 M
        "gen:rmat:scale=20,edges=12,seed=27",        # ~12 M
        "gen:arrow:n=1500000",                       # 4.5 M
        "gen:denserows:n=2500000,w=5,count=8,long=300000,seed=28",  # 30 M
        "gen:random:n=3000000,k=7,seed=29",          # 21 M
    ),
    "real": (  # evaluation only: file names in the shared matrix folder (see above)
        "1138_bus.mtx.gz", "bcsstk24.mtx.gz", "cage4.mtx.gz", "can_24.mtx.gz",
        "dw2048.mtx.gz", "memplus.mtx.gz", "olm1000.mtx.gz", "qh1484.mtx.gz",
    ),
}
"""Suite name -> generator specs (``real``: file names in :func:`shared_matrices`), in
increasing size."""

FILE_SUITES = ("real",)
"""Suites of file names in the shared matrix folder rather than generator specs."""


def shared_matrices() -> Path:
    """The shared matrix folder: ``$CLSPMV_MATRICES``, else ``../shared/matrices`` beside the
    checkout this package lives in."""
    env = os.environ.get("CLSPMV_MATRICES")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "shared" / "matrices"


def suite(name: str) -> tuple[str, ...]:
    """The specs of suite ``name``; ValueError listing the suites for an unknown one."""
    try:
        specs = SUITES[name]
    except KeyError:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}") from None
    if name not in FILE_SUITES:
        return specs
    folder = shared_matrices()
    missing = [f for f in specs if not (folder / f).is_file()]
    if missing:
        raise ValueError(f"suite {name!r} reads Matrix Market files from {folder}, which lacks "
                         f"{', '.join(missing)}; set CLSPMV_MATRICES to the folder that holds "
                         "them (the project's ../shared/matrices)")
    return tuple(str(folder / f) for f in specs)
