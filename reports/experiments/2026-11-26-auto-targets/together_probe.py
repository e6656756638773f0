"""Do formats time alike uploaded together (the trial's rounds) and one at a time (model_eval
--separately)? python together_probe.py DEVICE SPEC FORMAT ...: kernel ms, least of the rounds."""
import sys
import numpy as np
import pyopencl.array as cl_array
import clspmv
from clspmv.bench.generators import generate
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve

dev = clspmv.select_device(sys.argv[1])
csr = canonical_csr(generate(sys.argv[2]), np.float64)
names = sys.argv[3:]
prec = resolve(np.float64, np.float64)
x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)


def up(name):
    f = convert(csr, name, FORMAT_CLASSES[name].layout_for(dev), prec, owned=True)
    f.upload(dev)
    return f


for rep in range(2):
    both = {n: up(n) for n in names}
    t = kernel_times(both, x, y, 9)
    print("together  ", {n: round(v * 1e3, 3) for n, v in t.items()}, flush=True)
    del both
    alone = {}
    for n in names:
        f = up(n)
        alone[n] = round(kernel_times({n: f}, x, y, 9)[n] * 1e3, 3)
        del f
    print("separately", alone, flush=True)
