"""csr-adaptive with each row block and chunk loaded from a multiple of 32 entries (aligned, the
partition of this commit on a GPU) against the unaligned greedy partition (align 1, the layout
of 6432295), two conversions of each matrix timed in alternating rounds (fastest of 30), and
cuSPARSE beside.

    python align_ab.py DEVICE CACHE SPEC ...   (SPEC: gen:... or a path to a .mtx under CACHE)
"""

import json
import sys

import clspmv
from clspmv.bench.sources import resolve
from clspmv.formats import csr_adaptive
from side_by_side import cusparse_ms, error, fastest_ms, operands

ALIGNED = csr_adaptive.align_of


def convert(A, dev, dtype, aligned: bool):
    csr_adaptive.align_of = ALIGNED if aligned else (lambda layout, cap: 1)
    try:
        return clspmv.DeviceMatrix.from_scipy(A, format="csr-adaptive", device=dev, dtype=dtype)
    finally:
        csr_adaptive.align_of = ALIGNED


def main() -> None:
    device, specs = sys.argv[1], sys.argv[2:]
    dev = clspmv.select_device(device)
    for spec in specs:
        A = resolve(spec, progress=False).load().tocsr()
        for dtype in ("float64", "float32"):
            Ad, xh, ref, x, y = operands(dev, A, dtype)
            mats = {"aligned": convert(Ad, dev, dtype, True),
                    "plain": convert(Ad, dev, dtype, False)}
            rec = {"spec": spec, "dtype": dtype, "nnz": int(A.nnz),
                   "align": [M.params["align"] for M in mats.values()]}
            rec.update({k + "_err": error(M, xh, ref) for k, M in mats.items()})
            best = fastest_ms({k: (M, None) for k, M in mats.items()}, x, y)
            rec.update({k: round(v, 4) for k, v in best.items()})
            rec["ratio"] = round(best["aligned"] / best["plain"], 4)
            rec["cusparse"] = cusparse_ms(Ad, xh)
            print(json.dumps(rec), flush=True)
            del mats


if __name__ == "__main__":
    main()
