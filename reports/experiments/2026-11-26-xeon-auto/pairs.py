"""Per format alone: row-major / column-major on the probe matrices (pairs timed in rounds, as the probe)."""
import sys
import numpy as np, pyopencl.array as cl_array
from clspmv.canonical import canonical_csr
from clspmv.device import select_device
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.order_probe import probe_matrix
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve
dev = select_device(sys.argv[1]); prec = resolve(np.float64, np.float64)
for width in [int(w) for w in sys.argv[2].split(",")]:
    csr = canonical_csr(probe_matrix(width), np.float64)
    x = cl_array.to_device(dev.queue, np.ones(csr.shape[1])); y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
    line = []
    for name in sys.argv[3].split(","):
        pair = {o: convert(csr, name, FORMAT_CLASSES[name].layout_for(dev), prec, row_major=(o == "row")) for o in ("col", "row")}
        for f in pair.values(): f.upload(dev)
        r = [kernel_times(pair, x, y, 5) for _ in range(3)]
        line.append(f"{name} " + "/".join(f"{s['row'] / s['col']:.2f}" for s in r) + f" (col {r[0]['col'] * 1e3:.3f} ms)")
    print(width, " | ".join(line), flush=True)
