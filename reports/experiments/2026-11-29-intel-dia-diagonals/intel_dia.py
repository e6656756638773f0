"""Intel's runtime: dia's kernels (default / diagonal_runs / row_chunks) against csr-blocks, kernel ms in rounds."""
import sys
import numpy as np, pyopencl.array as cl_array
from clspmv.device import select_device
from clspmv.precision import resolve
from clspmv.canonical import canonical_csr
from clspmv.formats import FORMAT_CLASSES, convert
from clspmv.model.probes import kernel_times
from clspmv.bench.sources import resolve as source
dev = select_device(sys.argv[1]); prec = resolve(np.float64, np.float64)
print(dev.name, dev.simd_width)
specs = sys.argv[2:]
for spec in specs:
    csr = canonical_csr(source(spec).load(), np.float64)
    lay = FORMAT_CLASSES["dia"].layout_for(dev)
    fm = {"dia": convert(csr, "dia", lay, prec), "dia-runs": convert(csr, "dia", lay, prec, diagonal_runs=True),
          "dia-chunks": convert(csr, "dia", lay, prec, row_chunks=True),
          "csr-blocks": convert(csr, "csr-blocks", FORMAT_CLASSES["csr-blocks"].layout_for(dev), prec),
          "ellr": convert(csr, "ellr", FORMAT_CLASSES["ellr"].layout_for(dev), prec)}
    for f in fm.values(): f.upload(dev)
    x = cl_array.to_device(dev.queue, np.random.default_rng(0).random(csr.shape[1]))
    y = cl_array.zeros(dev.queue, csr.shape[0], np.float64)
    import clspmv
    xh = x.get()
    M = clspmv.DeviceMatrix.from_scipy(csr, format="dia", diagonal_runs=True, device=dev)
    err = np.max(np.abs(M @ xh - csr @ xh)) / np.max(np.abs(csr @ xh))
    t = kernel_times(fm, x, y, 15)
    print(f"{spec:45s} err {err:.1e} nnz {csr.nnz/1e6:5.2f}M diags {fm['dia'].params['n_diags']:4d} " + " ".join(f"{k} {v*1e3:7.3f}" for k, v in t.items()), flush=True)
