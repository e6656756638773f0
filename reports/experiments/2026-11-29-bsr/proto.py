"""BSR prototype on PoCL: kernel time vs clspmv's formats, device-resident vectors."""
import sys, time
import numpy as np, scipy.sparse as sp, pyopencl as cl, pyopencl.array as cla
import clspmv
from clspmv.bench.sources import resolve

SRC = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel __attribute__((reqd_work_group_size(1,1,1)))
void bsr(const int nw, __global const int *restrict split, __global const int *restrict bptr,
         __global const int *restrict bcol, __global const double *restrict val,
         __global const double *restrict x, __global double *restrict y)
{
    const int w = get_global_id(0);
    if (w >= nw) return;
    for (int br = split[w]; br < split[w + 1]; ++br) {
        double acc[B];
        for (int r = 0; r < B; ++r) acc[r] = 0;
        for (int j = bptr[br]; j < bptr[br + 1]; ++j) {
            __global const double *v = val + (size_t)j * (B * B);
            __global const double *xb = x + (size_t)bcol[j] * B;
#if ROWMAJOR
            for (int r = 0; r < B; ++r) { double s = 0; for (int c = 0; c < B; ++c) s += v[r * B + c] * xb[c]; acc[r] += s; }
#else
            for (int c = 0; c < B; ++c) { const double xc = xb[c]; for (int r = 0; r < B; ++r) acc[r] += v[c * B + r] * xc; }
#endif
        }
        for (int r = 0; r < B; ++r) y[(size_t)br * B + r] = acc[r];
    }
}
"""

def bench(fn, q, n=30):
    fn(); q.finish()
    ts = []
    for _ in range(n):
        t = time.perf_counter(); fn(); q.finish(); ts.append(time.perf_counter() - t)
    return float(np.median(ts))

def main(spec, b, rowmajor, parts):
    A = resolve(spec).load().tocsr()

    M0 = clspmv.DeviceMatrix.from_scipy(A, format="csr-blocks", device="1:0")
    ctx, q = M0.device.context, M0.device.queue
    n = A.shape[0]
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
    xd = cla.to_device(q, x); yd = cla.zeros(q, n, np.float64)
    ref = A @ x
    out = {}
    for fmt in ("csr-blocks", "sell", "pjds"):
        M = clspmv.DeviceMatrix.from_scipy(A, format=fmt, device="1:0")
        M.matvec(xd, yd); q.finish()
        assert np.allclose(yd.get(), ref)
        out[fmt] = bench(lambda: M.matvec(xd, yd), q)
        del M
    Bm = sp.bsr_matrix(A, blocksize=(b, b)); Bm.sort_indices()
    fill = A.nnz / Bm.data.size
    vals = Bm.data if rowmajor else np.ascontiguousarray(Bm.data.transpose(0, 2, 1))
    nbr = Bm.shape[0] // b
    nw = min(nbr, parts)
    # split block rows balanced by blocks
    targets = np.arange(nw + 1) * (Bm.indptr[-1] / nw)
    split = np.searchsorted(Bm.indptr, targets, "left").astype(np.int32); split[0] = 0; split[-1] = nbr
    prg = cl.Program(ctx, SRC).build(options=[f"-DB={b}", f"-DROWMAJOR={int(rowmajor)}"])
    k = prg.bsr
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in
            (split, Bm.indptr.astype(np.int32), Bm.indices.astype(np.int32), vals.ravel())]
    def go():
        k(q, (nw,), (1,), np.int32(nw), *bufs, xd.data, yd.data)
    go(); q.finish()
    err = np.abs(yd.get() - ref).max()
    out["bsr"] = bench(go, q)
    print(spec, f"b={b} rowmajor={rowmajor} parts={nw} fill={fill:.3f} err={err:.1e}",
          " ".join(f"{f}={t*1e3:.3f}ms" for f, t in out.items()),
          f"bsr/best={min(v for f, v in out.items() if f!='bsr')/out['bsr']:.2f}x")

if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4]))
