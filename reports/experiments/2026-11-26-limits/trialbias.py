"""Trial timings vs side-by-side timings of the same formats, in one process, alternating."""
import sys, time
import numpy as np, pyopencl.array as cla
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.precision import resolve as prec_resolve
from clspmv.model.probes import kernel_times
from clspmv.model import trial as trial_mod
dev = clspmv.select_device(sys.argv[1])
A = canonical_csr(resolve(sys.argv[2]).load(), np.float64)
names = sys.argv[3].split(",")
prec = prec_resolve(np.float64, np.float64)
def side():
    up = {n: convert(A, n, FORMAT_CLASSES[n].layout_for(dev), prec) for n in names}
    for f in up.values(): f.upload(dev)
    x = cla.to_device(dev.queue, np.ones(A.shape[1])); y = cla.zeros(dev.queue, A.shape[0], np.float64)
    t = kernel_times(up, x, y, 9); del up
    return {n: t[n] * 1e3 for n in names}
for rep in range(3):
    s = side()
    t0 = time.perf_counter(); tr = trial_mod.run(A, dev, prec, names); dt = time.perf_counter() - t0
    print("side ", "  ".join(f"{n} {s[n]:.3f}" for n in names))
    print("trial", "  ".join(f"{n} {tr.kernel_ms[n]:.3f}" for n in names), f"({dt:.2f} s)")
