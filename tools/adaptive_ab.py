"""Measurement (issue 11): csr-adaptive's row-block fill (:data:`ALONE_SHARE`) and work-group
size side by side, with cuSPARSE in the same process where cupy finds a GPU.

For each matrix and value type, uploads csr-adaptive once per configuration
(``ALONE_SHARE`` x work-group size) and times their forward products alternately on the same
device vectors (kernel time from profiling events, median of the repeats); then cuSPARSE's
kernel time (:func:`clspmv.bench.baselines.cusparse_product`). Usage::

    python tools/adaptive_ab.py DEVICE_SPEC [--shares 2,4,8] [--groups 128,256]
        [--dtype float64,float32] [--repeat 25] MATRIX_SPEC ...
"""

from __future__ import annotations

import argparse

import numpy as np
import pyopencl.array as cl_array

import clspmv
from clspmv.bench.baselines import cusparse_product
from clspmv.bench.sources import resolve
from clspmv.bench.timing import summarize
from clspmv.device import events_ns
from clspmv.formats import csr_adaptive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("device")
    parser.add_argument("matrices", nargs="+")
    parser.add_argument("--shares", default="2,4,8")
    parser.add_argument("--groups", default="128")
    parser.add_argument("--dtype", default="float64,float32")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args()
    dev = clspmv.select_device(args.device)
    configs = [(int(s), int(g)) for s in args.shares.split(",") for g in args.groups.split(",")]
    print(f"{dev.name}: kernel ms, median of {args.repeat}; columns share/work-group")
    for spec in args.matrices:
        A64 = resolve(spec).load().tocsr()
        for name in args.dtype.split(","):
            dtype = np.dtype(name)
            A = A64.astype(dtype)
            x_host = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(dtype)
            x = cl_array.to_device(dev.queue, x_host)
            y = cl_array.zeros(dev.queue, A.shape[0], dtype)
            one, zero = dtype.type(1), dtype.type(0)
            fmts = {}
            for share, wg in configs:
                csr_adaptive.ALONE_SHARE = share
                fmts[share, wg] = clspmv.DeviceMatrix.from_scipy(
                    A, format="csr-adaptive", device=dev, work_group_size=wg)._fmt
            samples: dict[tuple[int, int], list[int]] = {c: [] for c in fmts}
            for i in range(args.repeat + 2):  # two warm-up rounds
                for c, f in fmts.items():
                    ns = events_ns(f.launch(dev.queue, x.data, y.data, one, zero))
                    if i >= 2:
                        samples[c].append(ns)
            ref = A @ x_host
            err = float(np.max(np.abs(y.get() - ref)) / max(1e-30, np.max(np.abs(ref))))
            times = {c: summarize(s).median_ms for c, s in samples.items()}
            cus = cusparse_product(A, x_host)
            cus_ms = cus.timing.median_ms if cus.timing else float("nan")
            cells = "  ".join(f"{s}/{g} {t:.4f}" for (s, g), t in times.items())
            print(f"{spec} {name} nnz={A.nnz}: {cells}  cusparse {cus_ms:.4f}  "
                  f"best x cusparse {cus_ms / min(times.values()):.3f}  (max rel err {err:.1e})",
                  flush=True)


if __name__ == "__main__":
    main()
