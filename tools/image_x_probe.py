"""Experiment (issue 5): does reading x through an image1d_buffer (the texture path) speed up
the gathers of SpMV on a GPU?

Runs one ELLPACK-R-like kernel (one work-item per row, column-major slots) twice on the same
device arrays, x read from a plain ``__global const restrict`` buffer and from an
``image1d_buffer_t`` made over the same buffer (float32: CL_R/CL_FLOAT, read_imagef; float64:
CL_RG/CL_UNSIGNED_INT32 reinterpreted with as_double), and prints the median kernel times and
their ratio. Usage: ``python tools/image_x_probe.py [DEVICE_SPEC] [MATRIX_SPEC ...]``.

Result on the H200 (NVIDIA OpenCL, 2026-11-22, ``python tools/image_x_probe.py nvidia``), image
time / buffer time: uniform random rows (60 M entries) 1.00 in float32 and 1.04 in float64, 27-point
stencil (122 M) 1.08 and 0.99. The texture path gains nothing over ``const __global restrict``
(which NVIDIA's compiler already sends through the read-only cache), so the kernels keep buffers.
PoCL 3.1 cannot make an image over a buffer (``clCreateImage``: INVALID_OPERATION).
"""

from __future__ import annotations

import sys

import numpy as np
import pyopencl as cl

import clspmv
from clspmv.bench import generators
from clspmv.bench.timing import summarize
from clspmv.device import events_ns
from clspmv.formats.base import row_lengths

SOURCE = r"""
#ifdef DOUBLE
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define REAL double
#define FETCH(img, c) as_double(read_imageui(img, c).xy)
#else
#define REAL float
#define FETCH(img, c) read_imagef(img, c).x
#endif
__kernel void gather_buffer(const int n, const int width, __global const int *restrict len,
                            __global const int *restrict col, __global const REAL *restrict val,
                            __global const REAL *restrict x, __global REAL *restrict y)
{
    const int row = get_global_id(0);
    if (row >= n) return;
    REAL s = 0;
    for (int j = 0; j < len[row]; ++j) {
        const long i = (long)j * n + row;
        s += val[i] * x[col[i]];
    }
    y[row] = s;
}
__kernel void gather_image(const int n, const int width, __global const int *restrict len,
                           __global const int *restrict col, __global const REAL *restrict val,
                           __read_only image1d_buffer_t x, __global REAL *restrict y)
{
    const int row = get_global_id(0);
    if (row >= n) return;
    REAL s = 0;
    for (int j = 0; j < len[row]; ++j) {
        const long i = (long)j * n + row;
        s += val[i] * FETCH(x, col[i]);
    }
    y[row] = s;
}
"""


def run(device: clspmv.Device, spec: str, dtype: np.dtype, repeat: int = 20) -> None:
    A = generators.generate(spec).astype(dtype)
    n = A.shape[0]
    lengths = row_lengths(A)
    width = int(lengths.max())
    pos = np.arange(A.nnz) - np.repeat(A.indptr[:-1], lengths)
    rows = np.repeat(np.arange(n), lengths)
    col = np.zeros(width * n, np.int32)
    val = np.zeros(width * n, dtype)
    col[pos * n + rows] = A.indices
    val[pos * n + rows] = A.data
    x = np.random.default_rng(0).standard_normal(A.shape[1]).astype(dtype)
    ctx, queue = device.context, device.queue
    mf = cl.mem_flags
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            for a in (lengths.astype(np.int32), col, val, x)]
    y = cl.Buffer(ctx, mf.WRITE_ONLY, n * dtype.itemsize)
    fmt = (cl.ImageFormat(cl.channel_order.RG, cl.channel_type.UNSIGNED_INT32)
           if dtype == np.float64 else cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT))
    image = cl.Image(ctx, mf.READ_ONLY, fmt, shape=(x.size,), buffer=bufs[3])
    prg = cl.Program(ctx, SOURCE).build("-DDOUBLE" if dtype == np.float64 else "")
    wg = 128
    total = -(-n // wg) * wg
    times = {}
    for name, xarg in (("buffer", bufs[3]), ("image", image)):
        kern = getattr(prg, f"gather_{name}")
        samples = []
        for i in range(repeat + 2):
            ev = kern(queue, (total,), (wg,), np.int32(n), np.int32(width), bufs[0], bufs[1],
                      bufs[2], xarg, y)
            if i >= 2:
                samples.append(events_ns([ev]))
        out = np.empty(n, dtype)
        cl.enqueue_copy(queue, out, y)
        ref = A @ x
        err = np.abs(out - ref).max() / max(np.abs(ref).max(), 1e-300)
        times[name] = summarize(samples).median_ms
        print(f"{device.name} {dtype} {spec} x from {name}: {times[name]:.3f} ms (max rel. "
              f"error {err:.1e})", flush=True)
    print(f"  image / buffer time: {times['image'] / times['buffer']:.2f}", flush=True)


def main() -> None:
    device = clspmv.select_device(sys.argv[1] if len(sys.argv) > 1 else None)
    specs = sys.argv[2:] or ["gen:random:n=6000000,k=10", "gen:stencil27:k=166"]
    for spec in specs:
        for dtype in (np.dtype(np.float32), np.dtype(np.float64)):
            run(device, spec, dtype)


if __name__ == "__main__":
    main()
