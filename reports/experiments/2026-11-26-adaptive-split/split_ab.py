"""csr-adaptive with and without ``split_rows`` (tiles of CAP entries whatever the rows against
greedy blocks of whole rows), side by side (clspmv.bench.timing.time_side_by_side: kernel us,
median of the rounds), cuSPARSE beside (cupy, where present); the largest error against scipy,
forward, relative to max |y|; how full the greedy blocks are (their entries over blocks x CAP)
and the mean row length. Usage: python split_ab.py DEVICE [--dtype float64,float32] SPEC ...
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import clspmv
from clspmv.bench import baseline_cusparse
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side
from clspmv.formats.csr_adaptive import partition


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("device")
    parser.add_argument("specs", nargs="+")
    parser.add_argument("--dtype", default="float64,float32")
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    print(f"# {dev.name}: kernel us, median of {args.repeat} side-by-side rounds")
    for spec in args.specs:
        base = resolve(spec).load().tocsr()
        for dtype in args.dtype.split(","):
            t0 = time.time()
            A = base.astype(dtype)
            x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = A @ x
            matrices = {name: clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive",
                                                              device=dev, split_rows=split)
                        for name, split in (("whole", False), ("split", True))}
            err = max(float(np.abs(M @ x - ref).max() / np.abs(ref).max())
                      for M in matrices.values())
            times = time_side_by_side(matrices, x, warmup=3, repeat=args.repeat)
            cus = baseline_cusparse.cusparse_product(A, x, warmup=3, repeat=args.repeat)
            c_us = cus.timing.median_ms * 1e3 if cus.timing else float("nan")
            w, s = (times[k].median_ms * 1e3 for k in ("whole", "split"))
            p = matrices["split"].params
            q = matrices["whole"].params
            cap = q["block_entries"]
            blocks = partition(A.indptr, cap, 128)["blocks"].reshape(-1, 4)
            fill = float((blocks[:, 3] - blocks[:, 2]).sum()) / max(1, blocks.shape[0] * cap)
            print(f"{dtype} {spec} nnz={A.nnz} whole={w:.1f} split={s:.1f} whole/split={w / s:.3f} "
                  f"cusparse={c_us:.1f} x_cusparse whole={c_us / w:.3f} split={c_us / s:.3f} "
                  f"tiles={p['blocks']}+{p['chunks']} split_rows={p['split']}+{p['long_rows']} "
                  f"greedy_fill={fill:.2f} mean_row={A.nnz / max(1, A.shape[0]):.1f} "
                  f"maxerr={err:.1e} [{time.time() - t0:.0f}s]", flush=True)


if __name__ == "__main__":
    main()
