"""Every forward kernel with and without one of the inline-PTX features of NVIDIA's OpenCL, side
by side: ``--feature stream-hint`` (``STREAM_HINT`` in ``kernels_cl/common.h``, float64 only: see
``clspmv.build.kernel``) or ``--feature warp-shuffle`` (``WARP_SHUFFLE``).

For each generator spec it converts the matrix to each format twice, once with the feature and
once with its variable (``CLSPMV_STREAM_HINT``, ``CLSPMV_WARP_SHUFFLE``) set to 0, times all of
them in interleaved rounds
(``clspmv.bench.timing.time_side_by_side``) and cuSPARSE beside them, and prints one line per
matrix: ``format=with/without`` medians in microseconds, the best format with the feature
against cuSPARSE, and the largest error against scipy relative to max |y|. Formats that refuse
a matrix are named and skipped. Matrices under 8 M entries get the formats that compete on
small ones.

    python tools/ptx_ab.py nvidia gen:poisson2d:k=1000 gen:rmat:scale=22,edges=8
    python tools/ptx_ab.py --feature warp-shuffle --dtype float32 nvidia gen:arrow:n=4000000
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import clspmv
from clspmv.bench import baseline_cusparse
from clspmv.bench.generators import generate
from clspmv.bench.timing import time_side_by_side

FEATURES = {"stream-hint": ("CLSPMV_STREAM_HINT", "stream_hint"),
            "warp-shuffle": ("CLSPMV_WARP_SHUFFLE", "warp_shuffle")}
"""--feature: its environment variable and its Device property."""
SMALL = ["csr-adaptive", "csr-merge", "ell", "dia", "coo", "hyb", "sell", "csr-vector"]
LARGE = ["csr-adaptive", "csr-merge", "coo", "hyb", "ell", "sell", "pjds", "csr-vector"]


def compare(device: clspmv.Device, spec: str, repeat: int, variable: str, dtype: str) -> str:
    """One matrix's line (see the module docstring)."""
    t0 = time.time()
    A = generate(spec.removeprefix("gen:")).tocsr().astype(dtype)
    x = np.random.default_rng(0).random(A.shape[1]).astype(dtype)
    ref = A @ x
    matrices: dict[tuple[str, str], clspmv.DeviceMatrix] = {}
    err, refused = 0.0, []
    before = os.environ.get(variable)
    for fmt in SMALL if A.nnz < 8_000_000 else LARGE:
        pair = {}
        for on in ("1", "0"):
            # kernels are built on first use: the product below builds this one's while the
            # variable still says which way
            os.environ[variable] = on
            try:
                M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device=device)
            except ValueError:
                refused.append(fmt)
                break
            err = max(err, float(np.abs(M @ x - ref).max() / np.abs(ref).max()))
            pair[(fmt, on)] = M
        if len(pair) == 2:
            matrices.update(pair)
    if before is None:
        os.environ.pop(variable)
    else:
        os.environ[variable] = before
    times = time_side_by_side(matrices, x, warmup=3, repeat=repeat)
    cusparse = baseline_cusparse.cusparse_product(A, x, warmup=3, repeat=repeat)
    formats = dict.fromkeys(f for f, _ in matrices)
    pairs = " ".join(f"{f}={times[(f, '1')].median_ms * 1e3:.1f}/"
                     f"{times[(f, '0')].median_ms * 1e3:.1f}" for f in formats)
    best = min(times[(f, "1")].median_ms for f in formats)
    versus = (f"cusparse={cusparse.timing.median_ms * 1e3:.1f}us "
              f"best(with)={cusparse.timing.median_ms / best:.3f}x" if cusparse.timing
              else f"cusparse {cusparse.status}")
    skipped = f" refused: {', '.join(refused)}" if refused else ""
    return (f"{spec} nnz={A.nnz} {versus} with/without: {pairs} maxerr={err:.1e}{skipped} "
            f"[{time.time() - t0:.0f}s]")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("device", help="a clspmv.select_device spec (an NVIDIA GPU)")
    parser.add_argument("specs", nargs="+", help="generator specs, e.g. gen:poisson2d:k=300")
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--feature", choices=sorted(FEATURES), default="stream-hint")
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    variable, prop = FEATURES[args.feature]
    if not getattr(device, prop):
        parser.error(f"{device} has no {args.feature} (NVIDIA's OpenCL only)")
    for spec in args.specs:
        print(args.dtype, compare(device, spec, args.repeat, variable, args.dtype), flush=True)


if __name__ == "__main__":
    main()
