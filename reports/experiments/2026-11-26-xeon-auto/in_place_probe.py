"""python in_place_probe.py DEVICE SPEC FORMATS: matrix arrays uploaded with COPY_HOST_PTR (as Format.upload) against USE_HOST_PTR (the arrays used in place):
upload ms and kernel ms side by side, on a CPU device."""
import sys, time, numpy as np, pyopencl as cl, pyopencl.array as cl_array
from clspmv.bench.sources import resolve_all
from clspmv.canonical import canonical_csr
from clspmv.device import select_device
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.precision import resolve
dev = select_device(sys.argv[1]); prec = resolve(np.float64, np.float64)
A = canonical_csr(resolve_all([sys.argv[2]])[0].load(), np.float64)
import clspmv.formats.base as base_mod
class UseBuffer:
    """cl.Buffer with COPY_HOST_PTR turned into USE_HOST_PTR."""
    def __call__(self, ctx, flags, size=0, hostbuf=None):
        if hostbuf is not None and flags & cl.mem_flags.COPY_HOST_PTR:
            flags = (flags & ~cl.mem_flags.COPY_HOST_PTR) | cl.mem_flags.USE_HOST_PTR
        return cl.Buffer(ctx, flags, size, hostbuf) if hostbuf is not None else cl.Buffer(ctx, flags, size)
class ClShim:
    def __getattr__(self, name):
        return UseBuffer() if name == "Buffer" else getattr(cl, name)
def aligned_copy(a, align=128):
    raw = np.empty(a.nbytes + align, np.uint8)
    start = (-raw.ctypes.data) % align
    out = raw[start:start + a.nbytes].view(a.dtype)
    out[...] = a
    return out
def upload_use(f, align=False):
    if align:
        f.host = {k: aligned_copy(a) if a.size else a for k, a in f.host.items()}
    real = base_mod.cl
    base_mod.cl = ClShim()
    try:
        f.upload(dev)
    finally:
        base_mod.cl = real
x = cl_array.to_device(dev.queue, np.random.default_rng(0).random(A.shape[1])); y = cl_array.zeros(dev.queue, A.shape[0], np.float64)
for fmt in sys.argv[3].split(","):
    layout = FORMAT_CLASSES[fmt].layout_for(dev)
    fc, fu, fa = convert(A, fmt, layout, prec), convert(A, fmt, layout, prec), convert(A, fmt, layout, prec)
    misaligned = {k: a.ctypes.data % 64 for k, a in fu.host.items() if a.size and a.ctypes.data % 64}
    t0 = time.perf_counter(); fc.upload(dev); dev.queue.finish(); tc = time.perf_counter() - t0
    t0 = time.perf_counter(); upload_use(fu); dev.queue.finish(); tu = time.perf_counter() - t0
    t0 = time.perf_counter(); upload_use(fa, True); dev.queue.finish(); ta = time.perf_counter() - t0
    yc = cl_array.zeros_like(y); yu = cl_array.zeros_like(y)
    fc.launch(dev.queue, x.data, yc.data, np.float64(1), np.float64(0)); fu.launch(dev.queue, x.data, yu.data, np.float64(1), np.float64(0))
    same = np.array_equal(yc.get(), yu.get())
    ks = [kernel_times({"copy": fc, "use": fu, "aligned": fa}, x, y, 5) for _ in range(3)]
    print(f"{sys.argv[2][:34]:34s} {fmt:12s} upload copy {tc*1e3:6.1f} ms use {tu*1e3:5.1f} ms aligned-use {ta*1e3:5.1f} ms | kernel use/copy " + "/".join(f"{k['use']/k['copy']:.2f}" for k in ks) + " aligned/copy " + "/".join(f"{k['aligned']/k['copy']:.2f}" for k in ks) + f" (copy {ks[0]['copy']*1e3:.3f} ms) same={same} misaligned64={misaligned}", flush=True)
