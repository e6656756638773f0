"""Named lists of generated matrices (``clspmv bench --suite NAME``).

* ``demo`` (the default of ``clspmv bench``): small matrices, one per generator family, sized
  so that every format in both value types finishes in a few minutes on a 2-core CPU.
* ``cpu``: 1 to 30 million entries, one matrix per generator family, for CPUs (PoCL vs scipy
  vs MKL) and as the small end of GPU comparisons.
* ``stacked`` matrices (in ``demo`` and ``cpu``) join differently structured row blocks: the case
  of the ``strips`` format, whose plan stores each block in its own format.
* ``anchors``: six families at 25 to 125 million entries, for GPUs (larger than any GPU
  cache; the H200's L2 is tens of MB).
* ``irregular``: seven irregular shapes at 10 to 60 million entries, for GPUs (issue 11):
  power-law rows with and without column locality, R-MAT, an arrow matrix, mostly empty rows,
  dense rows on a band and a Chung-Lu web/social graph. ``irregular-small``: the same shapes
  at about a twentieth of the size, for CPUs and quick runs.

Entry counts are those of the generated matrices (``clspmv stats`` / the reports' Table I).
"""

from __future__ import annotations

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
}
"""Suite name -> generator specs, in increasing size."""


def suite(name: str) -> tuple[str, ...]:
    """The specs of suite ``name``; ValueError listing the suites for an unknown one."""
    try:
        return SUITES[name]
    except KeyError:
        raise ValueError(f"unknown suite {name!r}; choose one of {', '.join(SUITES)}") from None
