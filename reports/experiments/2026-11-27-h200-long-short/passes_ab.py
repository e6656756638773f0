"""csr-adaptive kernel variants (-D build options) on the same buffers: greedy blocks, split_rows
tiles, and in float32 also blocks of 1024 entries (CONFIGS=... picks some). cuSPARSE beside.
Fastest of 30 alternating rounds.

    [CONFIGS=adaptive,split] [VARIANTS='{"label": {"DEFINE": value}, ...}'] python passes_ab.py DEVICE CACHE SPEC ...

VARIANTS of the three runs, each against a kernel not kept (summary.txt): passes1.jsonl
{"new": {}, "old": {"OLD_PASSES": 1}} and passes2.jsonl {"old": {"OLD_PASSES": 1}, "p2":
{"PRELOAD": 2}, "p4": {"PRELOAD": 4}, "all": {}} with preload.patch applied to 6432295;
align.jsonl the default below, with the first form of ALIGN (one more load per work-item, the
entries before a block masked); passes3.jsonl {"old": {"OLD_PASSES": 1}, "p1": {"PRELOAD": 1},
"p4": {}, "p8": {"PRELOAD": 8}} on 2d227e4's kernel with passes3.patch (adds a2edc30's as
-DOLD_PASSES).
"""

import json
import os
import sys

import pyopencl as cl

import clspmv
from clspmv import build

from side_by_side import cusparse_ms, device_and_matrices, error, fastest_ms, operands

EXTRA: dict[str, object] = {}
_options_for = build.options_for


def options_for(dtype, cl_std=None, accumulate=None, **defines):
    merged = {**defines, **EXTRA}
    # NV_MAXRREG in a variant: NVIDIA's register limit (-cl-nv-maxrregcount), not a define
    limit = merged.pop("NV_MAXRREG", None)
    extra = (f"-cl-nv-maxrregcount={limit}",) if limit else ()
    return _options_for(dtype, cl_std, accumulate, **merged) + extra


build.options_for = options_for
VARIANTS = json.loads(os.environ.get("VARIANTS", '{"old": {}, "a16": {"ALIGN": 16}, "a32": {"ALIGN": 32}}'))
CONFIGS = {k: v for k, v in {"adaptive": {}, "split": {"split_rows": True}, "cap1024": {"block_entries": 1024}}.items() if k in os.environ.get("CONFIGS", "adaptive,split,cap1024").split(",")}


def main() -> None:
    dev, matrices = device_and_matrices(sys.argv[1:])
    for spec, A in matrices:
        for dtype in ("float64", "float32"):
            Ad, xh, ref, x, y = operands(dev, A, dtype)
            rec = {"spec": spec, "dtype": dtype, "nnz": int(A.nnz)}
            for cname, params in CONFIGS.items():
                if cname == "cap1024" and dtype == "float64":
                    continue
                M = clspmv.DeviceMatrix.from_scipy(Ad, format="csr-adaptive", device=dev,
                                                   dtype=dtype, **params)
                fmt = M._fmt
                kernels = {}
                for label, defines in VARIANTS.items():  # each variant's kernels, built once
                    EXTRA.clear()
                    EXTRA.update(defines)
                    fmt.prepare_kernels()
                    kernels[label] = {k: v for k, v in vars(fmt).items()
                                      if isinstance(v, cl.Kernel)}
                    rec[f"{cname}_{label}_err"] = error(M, xh, ref)
                EXTRA.clear()
                best = fastest_ms({label: (M, lambda ks=ks: vars(fmt).update(ks))
                                   for label, ks in kernels.items()}, x, y)
                rec.update({f"{cname}_{label}": round(v, 4) for label, v in best.items()})
                del M
            rec["cusparse"] = cusparse_ms(Ad, xh)
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
