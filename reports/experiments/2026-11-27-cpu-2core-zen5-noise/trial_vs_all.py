import sys, time, numpy as np, pyopencl.array as cl_array
import clspmv
from clspmv.bench.sources import resolve_all
from clspmv.formats import FORMAT_CLASSES, SINGLE_FORMATS, convert
from clspmv.matrix import canonical_csr
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve
spec = sys.argv[1]; names_trial = sys.argv[2].split(",")
dev = clspmv.select_device("1:0"); prec = resolve("float64", np.float64)
src = resolve_all([spec], progress=False)[0]
csr = canonical_csr(src.load(), prec.value)
def up(names):
    out = {}
    for n in names:
        try:
            f = convert(csr, n, FORMAT_CLASSES[n].layout_for(dev), prec, owned=False)
        except Exception: continue
        f.upload(dev); out[n] = f
    return out
x = cl_array.to_device(dev.queue, np.ones(csr.shape[1], prec.value))
y = cl_array.zeros(dev.queue, csr.shape[0], prec.value)
for it in range(3):
    for label, names, rep in (("all", SINGLE_FORMATS, 9), ("trial", names_trial, 5)):
        t0=time.time(); u = up(names); t1=time.time()
        s = kernel_times(u, x, y, rep)
        print(it, label, f"conv {t1-t0:.2f}s", " ".join(f"{n}={v*1e3:.2f}" for n, v in sorted(s.items(), key=lambda kv: kv[1])[:7]), flush=True)
        del u
