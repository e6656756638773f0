"""Prototype: row blocks of R rows, each block's entries sorted by (column panel of W, row,
col), one work-item per block accumulating into its own rows of y (in cache). Against pjds and
MKL optimised, rounds."""
import sys, time
import numpy as np
import scipy.sparse as sp
import pyopencl as cl
import pyopencl.array as cla
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "tools"))
import clspmv
from clspmv.device import select_device
from clspmv.bench.sources import resolve
from clspmv.bench.mkl_optimised import OptimisedMkl
from clspmv.bench import openmp
from cpu_vs_mkl import side_by_side, MKL_BLOCKTIME_ROUNDS_MS

SRC = r"""
__kernel void tiles_local(const int n_rows, const int n_cols, const int R, const int W, const int P,
                    __global const int *tile_ptr,
                    __global const uint *row, __global const int *col,
                    __global const double *val, __global const double *x, __global double *y,
                    __local double *xs)
{
    const int b = get_global_id(0);
    const int r0 = b * R;
    if (r0 >= n_rows) return;
    const int r1 = min(r0 + R, n_rows);
    __global double *yb = y + r0;
    for (int r = 0; r < r1 - r0; ++r) yb[r] = 0;
    for (int p = 0; p < P; ++p) {
        const int c0 = p * W, c1 = min(c0 + W, n_cols);
        for (int c = c0; c < c1; ++c) xs[c - c0] = x[c];
        const int end = tile_ptr[b * P + p + 1];
        for (int i = tile_ptr[b * P + p]; i < end; ++i)
            yb[row[i]] += val[i] * xs[col[i]];
    }
}
__kernel void tiles_u(const int n_rows, const int R, __global const int *block_ptr,
                    __global const uint *row, __global const int *col,
                    __global const double *val, __global const double *x, __global double *y)
{
    const int b = get_global_id(0);
    const int r0 = b * R;
    if (r0 >= n_rows) return;
    const int r1 = min(r0 + R, n_rows);
    __global double *yb = y + r0;
    for (int r = 0; r < r1 - r0; ++r) yb[r] = 0;
    const int end = block_ptr[b + 1];
    for (int i = block_ptr[b]; i < end; ++i)
        yb[row[i]] += val[i] * x[col[i]];
}
"""

def build_tiles(A, R, W, local=False):
    A = A.tocoo()
    blk = A.row // R
    panel = A.col // W
    order = np.lexsort((A.col, A.row, panel, blk))
    rows = (A.row[order] - blk[order] * R).astype(np.uint32)
    cols = A.col[order].astype(np.int32)
    if local:
        cols = cols - (panel[order] * W).astype(np.int32)
    vals = A.data[order].astype(np.float64)
    nb = (A.shape[0] + R - 1) // R
    P = (A.shape[1] + W - 1) // W
    tile = blk.astype(np.int64) * P + panel if local else blk
    n = nb * P if local else nb
    ptr = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(tile, minlength=n), out=ptr[1:])
    return nb, P, ptr, rows, cols, vals

dev = select_device(sys.argv[1])
A = resolve(sys.argv[2], progress=False).load().tocsr().astype(np.float64)
ctx, q = dev.context, dev.queue
prg = cl.Program(ctx, SRC).build()
x = np.random.default_rng(1).uniform(-1, 1, A.shape[1])
xd = cla.to_device(q, x)
yd = cla.empty(q, A.shape[0], np.float64)
ref = A @ x
calls = {}
for f in sys.argv[3].split(","):
    M = clspmv.DeviceMatrix.from_scipy(A, format=f, device=dev)
    calls[f] = (lambda M: lambda: M.matvec(x))(M)
for spec in sys.argv[4].split(","):
    local = spec.startswith("L")
    R, W = (int(v) for v in spec.lstrip("L").split("x"))
    nb, P, ptr, rows, cols, vals = build_tiles(A, R, W, local)
    bufs = [cla.to_device(q, a) for a in (ptr, rows, cols, vals)]
    def run(nb=nb, bufs=bufs, R=R, W=W, P=P, local=local):
        xd.set(x)
        if local:
            prg.tiles_local(q, (nb,), (1,), np.int32(A.shape[0]), np.int32(A.shape[1]), np.int32(R),
                            np.int32(W), np.int32(P), *[b.data for b in bufs], xd.data, yd.data,
                            cl.LocalMemory(8 * W))
        else:
            prg.tiles_u(q, (nb,), (1,), np.int32(A.shape[0]), np.int32(R), *[b.data for b in bufs], xd.data, yd.data)
        return yd.get()
    y = run()
    err = np.abs(y - ref).max()
    assert err < 1e-9 * max(1, np.abs(ref).max()), err
    calls[f"{spec}"] = run
opt = OptimisedMkl(A, expected_calls=100)
out = np.empty(A.shape[0])
calls["mkl-opt"] = lambda: opt.matvec(x, out)
with openmp.blocktime(MKL_BLOCKTIME_ROUNDS_MS):
    s = side_by_side(calls, int(sys.argv[5]) if len(sys.argv) > 5 else 9)
med = {k: float(np.median(v)) for k, v in s.items()}
print(sys.argv[2], " ".join(f"{k}={v:.3f}" for k, v in med.items()), flush=True)
opt.close()
