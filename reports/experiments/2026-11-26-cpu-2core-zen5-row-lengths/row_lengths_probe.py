"""csr-blocks, csr-scalar, ellr and sell on in-cache and larger matrices of constant, Poisson, alternating and uniform row lengths, banded or random columns: measured side by side (kernel_times) and predicted by a stored calibration (argv[2]; refitted in this checkout's form). python row_lengths_probe.py 1:0 CALIBRATION.json"""
import sys, numpy as np, scipy.sparse as sp, pyopencl.array as cl_array
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.canonical import canonical_csr
from clspmv.precision import resolve
from clspmv.device import select_device
from clspmv.model.benchmarks import _from_lengths
dev = select_device(sys.argv[1]); prec = resolve("float64", np.float64)
import json
from clspmv.model.timemodel import Calibration
from clspmv.model.predict import predict
from clspmv.formats import SINGLE_FORMATS
import importlib
from clspmv.model.timemodel import TERMS
data = json.load(open(sys.argv[2]))
data["terms"] = list(TERMS); data["kernel"] = {k: [0.0] * len(TERMS) for k in data["kernel"]}
data = {k: v for k, v in data.items() if k in Calibration.__dataclass_fields__ or k in ("terms", "conversion_terms")}
cal = importlib.import_module("clspmv.model.calibrate").refit(Calibration.from_json(data, SINGLE_FORMATS))
rng = np.random.default_rng(1)
for n in (2000, 20000, 100000):
    for lname, lengths in (("const9", np.full(n, 9)), ("poisson9", rng.poisson(8, n) + 1),
                           ("alt6-12", np.tile([6, 12], n // 2)), ("uniform1-17", rng.integers(1, 18, n))):
        for spread in (32, None):
            A = _from_lengths(lengths.astype(np.int64), n, spread, rng)
            csr = canonical_csr(A, prec.value)
            fm = {}
            for fmt in ("csr-blocks", "csr-scalar", "ellr", "sell"):
                try:
                    f = convert(csr, fmt, FORMAT_CLASSES[fmt].layout_for(dev), prec)
                except Exception:
                    continue
                f.upload(dev); fm[fmt] = f
            x = cl_array.to_device(dev.queue, np.ones(n, prec.value)); y = cl_array.zeros(dev.queue, n, prec.value)
            t = kernel_times(fm, x, y, 15)
            p = predict(A, dev, np.float64, cal)
            print("   predicted " + " ".join(f"{k} {p[k].kernel_s*1e6:.1f}" for k in fm))
            print(f"n {n:6d} {lname:12s} {'rand' if spread is None else 'band':4s} nnz {csr.nnz:7d} | " +
                  " ".join(f"{k} {v*1e6:.1f}" for k, v in t.items()) + f" | blocks/scalar {t['csr-blocks']/t['csr-scalar']:.2f}", flush=True)
