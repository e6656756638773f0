"""csr-blocks on small matrices: its default block count against at least one block per compute
unit (and 4, 8 per unit), csr-scalar beside; kernel us, median of side-by-side rounds
(clspmv.bench.timing.time_side_by_side). Usage: python blocks_ab.py DEVICE SPEC ..."""

from __future__ import annotations

import argparse

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    units = dev.compute_units
    print(f"# {dev.name} ({units} compute units): kernel us, median of {args.repeat} rounds")
    for spec in args.specs:
        A = resolve(spec, progress=False).load().tocsr().astype(np.float64)
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
        ref = A @ x
        mats = {"scalar": clspmv.DeviceMatrix.from_scipy(A, format="csr-scalar", device=dev),
                "blocks": clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device=dev)}
        for k in (1, 2, 4):
            b = min(A.shape[0], k * units)
            mats[f"blocks={b}"] = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks",
                                                                 device=dev, blocks=b)
        err = max(float(np.abs(M @ x - ref).max()) for M in mats.values())
        times = time_side_by_side(mats, x, warmup=5, repeat=args.repeat)
        default = mats["blocks"].params.get("blocks")
        cells = " ".join(f"{k}={v.median_ms * 1e3:.1f}" for k, v in times.items())
        print(f"{spec[-40:]:40s} nnz={A.nnz:8d} default_blocks={default} {cells} maxerr={err:.1e}",
              flush=True)


if __name__ == "__main__":
    main()
