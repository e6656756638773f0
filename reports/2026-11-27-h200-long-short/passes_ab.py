"""csr-adaptive kernel variants (-D build options) on the same buffers: greedy blocks, split_rows
tiles, and in float32 also blocks of 1024 entries (CONFIGS=... picks some). cuSPARSE beside.
Fastest of 30 alternating rounds.

    [CONFIGS=adaptive,split] python passes_ab.py DEVICE CACHE SPEC ...

VARIANTS of the three runs, each against a kernel not kept (summary.txt): passes1.jsonl
{"new": {}, "old": {"OLD_PASSES": 1}} and passes2.jsonl {"old": {"OLD_PASSES": 1}, "p2":
{"PRELOAD": 2}, "p4": {"PRELOAD": 4}, "all": {}} with preload.patch applied to 6432295;
align.jsonl as below, with the first form of ALIGN (one more load per work-item, the entries
before a block masked).
"""

import json
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clspmv
from clspmv import build
from clspmv.bench.baselines import cusparse_product
from clspmv.cover import matrix_ns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-h200-adaptive-one-kernel"))
from ab import matrix  # noqa: E402  (generated once, kept as .npz)

EXTRA: dict[str, object] = {}
_options_for = build.options_for


def options_for(dtype, cl_std=None, accumulate=None, **defines):
    return _options_for(dtype, cl_std, accumulate, **{**defines, **EXTRA})


build.options_for = options_for
import os
VARIANTS = {"old": {}, "a16": {"ALIGN": 16}, "a32": {"ALIGN": 32}}
CONFIGS = {k: v for k, v in {"adaptive": {}, "split": {"split_rows": True}, "cap1024": {"block_entries": 1024}}.items() if k in os.environ.get("CONFIGS", "adaptive,split,cap1024").split(",")}


def main() -> None:
    device, cache, specs = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    cache.mkdir(parents=True, exist_ok=True)
    dev = clspmv.select_device(device)
    for spec in specs:
        A = matrix(spec, cache)
        for dtype in ("float64", "float32"):
            Ad = A.astype(dtype)
            xh = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = Ad @ xh
            x = cl_array.to_device(dev.queue, xh)
            y = cl_array.zeros(dev.queue, A.shape[0], dtype)
            rec = {"spec": spec, "dtype": dtype, "nnz": int(A.nnz)}
            for cname, params in CONFIGS.items():
                if cname == "cap1024" and dtype == "float64":
                    continue
                M = clspmv.DeviceMatrix.from_scipy(Ad, format="csr-adaptive", device=dev,
                                                   dtype=dtype, **params)
                fmt = M._fmt
                kernels = {}
                for label, defines in VARIANTS.items():
                    EXTRA.clear()
                    EXTRA.update(defines)
                    fmt.prepare_kernels()
                    kernels[label] = {k: v for k, v in vars(fmt).items()
                                      if isinstance(v, cl.Kernel)}
                    err = float(np.max(np.abs(M @ xh - ref)) / np.max(np.abs(ref)))
                    rec[f"{cname}_{label}_err"] = err
                EXTRA.clear()
                best = {label: np.inf for label in kernels}
                for _ in range(30):
                    for label, ks in kernels.items():
                        vars(fmt).update(ks)
                        M.matvec(x, y)
                        ns, _ = matrix_ns(M, lambda: M.matvec(x, y))
                        best[label] = min(best[label], ns / 1e6)
                for label, v in best.items():
                    rec[f"{cname}_{label}"] = round(v, 4)
                del M
            cus = cusparse_product(Ad, xh)
            rec["cusparse"] = round(cus.timing.min_ms, 4) if cus.timing else None
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
