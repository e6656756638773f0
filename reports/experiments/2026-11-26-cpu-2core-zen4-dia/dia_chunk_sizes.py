"""DIA's row_chunks kernel on a CPU with chunks of 64, 128, 256 and 512 rows
(clspmv.formats.dia.ROW_CHUNK set before each conversion), side by side with ellr; kernel us,
median of the rounds.
Usage: python dia_chunk_sizes.py DEVICE SPEC ..."""

from __future__ import annotations

import sys

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.formats import dia

SIZES = (64, 128, 256, 512)


def main() -> None:
    dev = clspmv.select_device(sys.argv[1])
    print(f"# {dev.name}: kernel us, median of 9 side-by-side rounds, float64")
    for spec in sys.argv[2:]:
        A = resolve(spec).load().tocsr()
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
        matrices = {}
        for size in SIZES:
            dia.ROW_CHUNK = size
            matrices[f"chunk{size}"] = clspmv.DeviceMatrix.from_scipy(A, format="dia",
                                                                      device=dev)
        matrices["ellr"] = clspmv.DeviceMatrix.from_scipy(A, format="ellr", device=dev)
        err = max(float(np.abs(M @ x - A @ x).max()) for M in matrices.values())
        times = time_side_by_side(matrices, x, warmup=3, repeat=9)
        cells = " ".join(f"{k}={v.median_ms * 1e3:.0f}" for k, v in times.items())
        print(f"{spec} {cells} maxerr={err:.1e}", flush=True)


if __name__ == "__main__":
    main()
