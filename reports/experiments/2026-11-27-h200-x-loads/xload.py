"""(Needs experiment.patch applied to kernels_cl/ of c821c89: the X_LOAD, STREAM_OP, STREAM_OFF and
STREAM_F32 switches it measured.)

csr-adaptive and csr-merge with x gathered through PTX cache operators, and (float32) the matrix
streamed with ld.global.cs, against the plain loads; cuSPARSE beside. One conversion per format,
the variants' kernels rebuilt on its buffers and timed in alternating rounds (fastest of 40).

    [XL_FORMATS=F1,F2] [XL_DTYPES=float32] [XL_VARIANTS=none,cs] python xload.py DEVICE CACHE SPEC ...

Variants: see VARIANTS (run 1, xload-run1.jsonl: -DX_LOAD=k, common.h's experiment: 1 nc,
2 L1::evict_last, 3 nc+L1::evict_last, 4 ca, 5 L1::no_allocate, and in float32 -DSTREAM_HINT=1
-DSTREAM_F32=1; run 2: the matrix stream's PTX, STREAM_OP). Also prints the ld.global forms of
the default builds' PTX.
"""

import collections
import os
import json
import re
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

import clspmv
from clspmv import build
from clspmv.bench.baseline_cusparse import cusparse_product
from clspmv.cover import matrix_ns
from clspmv.errors import UnsuitableFormatError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-h200-adaptive-one-kernel"))
from ab import matrix  # noqa: E402  (generated once, kept as .npz)

EXTRA: dict[str, object] = {}
FORMATS = os.environ.get("XL_FORMATS", "csr-adaptive,csr-merge").split(",")
DTYPES = [np.dtype(d) for d in os.environ.get("XL_DTYPES", "float64,float32").split(",")]
KEEP = [v for v in os.environ.get("XL_VARIANTS", "").split(",") if v]
_options_for = build.options_for


def options_for(dtype, cl_std=None, accumulate=None, **defines):
    return _options_for(dtype, cl_std, accumulate, **{**defines, **EXTRA})


build.options_for = options_for

SH = {"STREAM_HINT": 1, "STREAM_F32": 1}
STREAM = {"none": {"STREAM_OFF": 1}, "cs": SH, "cg": {**SH, "STREAM_OP": 2},
          "noalloc": {**SH, "STREAM_OP": 3}, "evfirst": {**SH, "STREAM_OP": 4},
          "nc-noalloc": {**SH, "STREAM_OP": 5}}
VARIANTS = {"float64": STREAM, "float32": STREAM}
"""The matrix stream's loads (common.h STREAM_OP; x plain): none, cs (float64's default), cg,
L1::no_allocate, L1::evict_first, nc.L1::no_allocate."""


def ptx_loads() -> None:
    for (_, file, opts), prg in build._cache.items():
        if file in ("csr_adaptive.cl", "csr_merge.cl") and not any("X_LOAD" in o or "STREAM_F32" in o
                                                                   for o in opts):
            ptx = prg.binaries[0].decode(errors="replace")
            forms = collections.Counter(re.findall(r"\b(ld\.global[\w.:]*)", ptx))
            print("#", file, " ".join(o for o in opts if "VALUE_T" in o or "STREAM" in o),
                  dict(forms), flush=True)


def main() -> None:
    device, cache, specs = sys.argv[1], Path(sys.argv[2]), sys.argv[3:]
    cache.mkdir(parents=True, exist_ok=True)
    dev = clspmv.select_device(device)
    shown = False
    for spec in specs:
        A = matrix(spec, cache)
        for dtype in DTYPES:
            name = np.dtype(dtype).name
            Ad = A.astype(dtype)
            xh = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
            ref = Ad @ xh
            x = cl_array.to_device(dev.queue, xh)
            y = cl_array.zeros(dev.queue, A.shape[0], dtype)
            rec = {"spec": spec, "dtype": name, "nnz": int(A.nnz)}
            for fmt_name in FORMATS:
                EXTRA.clear()
                try:
                    M = clspmv.DeviceMatrix.from_scipy(Ad, format=fmt_name, device=dev,
                                                       dtype=dtype)
                except UnsuitableFormatError:
                    continue
                fmt = M._fmt
                kernels, err = {}, {}
                for label, defines in VARIANTS[name].items():
                    if KEEP and label not in KEEP:
                        continue
                    EXTRA.clear()
                    EXTRA.update(defines)
                    fmt.prepare_kernels()
                    kernels[label] = {k: v for k, v in vars(fmt).items()
                                      if isinstance(v, cl.Kernel)}
                    err[label] = float(np.max(np.abs(M @ xh - ref)) / np.max(np.abs(ref)))
                EXTRA.clear()
                if not shown:
                    ptx_loads()
                best = {label: np.inf for label in kernels}
                for _ in range(40):
                    for label, ks in kernels.items():
                        vars(fmt).update(ks)
                        M.matvec(x, y)
                        ns, _ = matrix_ns(M, lambda: M.matvec(x, y))
                        best[label] = min(best[label], ns / 1e6)
                rec[fmt_name] = {k: round(v, 4) for k, v in best.items()}
                rec[fmt_name + "_err"] = max(err.values())
                del M
            shown = True
            cus = cusparse_product(Ad, xh)
            rec["cusparse_ms"] = cus.timing.min_ms if cus.timing else None
            print(json.dumps(rec), flush=True)


if __name__ == "__main__":
    main()
