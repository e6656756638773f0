"""Intel's CPU runtime: sell and pjds with the slice height of clspmv.formats.sell.slice_height
(a vector of values: 8 rows in float64) against slices of one row (the SIMD width, 1: before),
beside csr-blocks and csr-merge; kernel times in rounds (clspmv.model.probes.kernel_times)."""
import argparse, dataclasses, json, sys
import numpy as np
import pyopencl.array as cla
from clspmv.bench.sources import resolve_all
from clspmv.bench.suites import suite
from clspmv.canonical import canonical_csr
from clspmv.device import select_device
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve

parser = argparse.ArgumentParser()
parser.add_argument("--device", default="1:0")
parser.add_argument("--suite", action="append", default=[])
parser.add_argument("--repeats", type=int, default=7)
args = parser.parse_args()
dev = select_device(args.device)
prec = resolve(np.float64, np.float64)
specs = [s for name in args.suite for s in suite(name)]
for src in resolve_all(specs, progress=False):
    A = canonical_csr(src.load(), np.dtype("float64"))
    up = {}
    for name in ("csr-blocks", "csr-merge", "sell", "pjds"):
        layout = FORMAT_CLASSES[name].layout_for(dev)
        f = convert(A, name, layout, prec); f.upload(dev); up[name] = f
        if name in ("sell", "pjds"):
            before = dataclasses.replace(layout, vectorises_work_items=False)
            f = convert(A, name, before, prec); f.upload(dev); up[name + "-c1"] = f
    x = cla.to_device(dev.queue, np.ones(A.shape[1])); y = cla.zeros(dev.queue, A.shape[0], np.float64)
    ms = {k: v * 1e3 for k, v in kernel_times(up, x, y, args.repeats).items()}
    print(json.dumps({"matrix": src.name, "nnz": int(A.nnz), "ms": ms,
                      "C": up["sell"].params["slice_height"]}), flush=True)
