"""csr-blocks (and ellr) kernel time per upload, with the buffers' addresses (mapped: PoCL's CPU storage)."""
import sys
import numpy as np, pyopencl as cl, pyopencl.array as cla
import clspmv
from clspmv.bench.sources import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.precision import resolve as prec_resolve
from clspmv.model.probes import kernel_times
dev = clspmv.select_device(sys.argv[1]); q = dev.queue
A = canonical_csr(resolve(sys.argv[2]).load(), np.float64)
names = sys.argv[3].split(",")
prec = prec_resolve(np.float64, np.float64)
def addr(buf):
    m, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ, 0, (buf.size,), np.uint8, is_blocking=True)
    a = m.ctypes.data; m.base.release(q); q.finish(); return a
for rep in range(int(sys.argv[4]) if len(sys.argv) > 4 else 8):
    up = {n: convert(A, n, FORMAT_CLASSES[n].layout_for(dev), prec) for n in names}
    for f in up.values(): f.upload(dev)
    x = cla.to_device(q, np.ones(A.shape[1])); y = cla.zeros(q, A.shape[0], np.float64)
    t = kernel_times(up, x, y, 9)
    f = up[names[0]]
    addrs = {k: addr(b) for k, b in f.buffers.items()}
    addrs["x"] = addr(x.data); addrs["y"] = addr(y.data)
    print("  ".join(f"{n} {t[n]*1e3:.3f}" for n in names), " | ", " ".join(f"{k}:{v % 4096:4d}/{(v >> 12) % 512:3d}" for k, v in addrs.items()))
    del up, x, y
