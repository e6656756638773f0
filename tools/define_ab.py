"""A kernel's build switch side by side: each format converted twice, once as the library builds
it and once with one more ``-D`` definition in its kernels' build options (a switch a kernel file
reads, such as ``NO_UNALIGNED_INDICES`` in ``kernels_cl/vectors.h``), plus a control format
converted twice unchanged, whose ratio to itself shows the noise; kernel microseconds, medians of
side-by-side rounds (:func:`clspmv.bench.timing.time_side_by_side`), one line per matrix and value
type with each format's ``with/without`` ratio and the largest error against scipy relative to
max |y|.

A format is ``NAME`` or ``NAME:key=value:key=value`` with integer conversion options
(``sell:slice_items=1``, ``csr-blocks:unroll=8``).

    python tools/define_ab.py --device 1:0 --define NO_UNALIGNED_INDICES \\
        --formats csr-blocks:unroll=4,csr-blocks:unroll=8 --control csr-blocks:unroll=1 \\
        --dtypes float64,float32 gen:random:n=1000000,k=6,seed=7 gen:rmat:scale=18,edges=24
"""

from __future__ import annotations

import argparse

import numpy as np

import clspmv
from clspmv.bench.sources import resolve
from clspmv.bench.timing import time_side_by_side


def parse_format(text: str) -> tuple[str, dict[str, int]]:
    """``NAME:key=value:...`` as the format's name and its integer conversion options."""
    name, *pairs = text.split(":")
    options = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        options[key] = int(value)
    return name, options


def convert(A, device: clspmv.Device, fmt: str, define: str | None) -> clspmv.DeviceMatrix:
    """``A`` in ``fmt`` (with its options) on ``device``; with ``define`` its kernels are built
    again with ``-D<define>=1`` added to the definitions the format asks for."""
    name, options = parse_format(fmt)
    M = clspmv.DeviceMatrix.from_scipy(A, format=name, device=device, **options)
    if define is not None:  # every kernel the format builds gets it (Format.kernel)
        build_kernel = M._fmt.kernel
        M._fmt.kernel = lambda *args, **defines: build_kernel(*args, **{**defines, define: 1})
        M._fmt.prepare_kernels()
    return M


def compare(A, device: clspmv.Device, formats: list[str], control: str, define: str,
            repeat: int) -> str:
    """The line of one matrix in one value type (see the module docstring)."""
    x = np.random.default_rng(0).uniform(-1, 1, A.shape[1]).astype(A.dtype)
    ref = A.astype(np.float64) @ x.astype(np.float64)
    matrices = {}
    for fmt in formats:
        matrices[f"{fmt} with"] = convert(A, device, fmt, define)
        matrices[f"{fmt} without"] = convert(A, device, fmt, None)
    matrices["control a"] = convert(A, device, control, None)
    matrices["control b"] = convert(A, device, control, None)
    scale = float(np.abs(ref).max()) or 1.0
    err = max(float(np.abs(M @ x - ref).max()) / scale for M in matrices.values())
    us = {name: t.median_ms * 1e3
          for name, t in time_side_by_side(matrices, x, warmup=3, repeat=repeat).items()}
    times = " ".join(f"{name.replace(' ', '-')}={t:.0f}" for name, t in us.items())
    ratios = " ".join(f"{fmt} with/without={us[f'{fmt} with'] / us[f'{fmt} without']:.3f}"
                      for fmt in formats)
    return f"{times} {ratios} control a/b={us['control a'] / us['control b']:.3f} err={err:.0e}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", required=True)
    parser.add_argument("--define", required=True, help="the -D name added (set to 1)")
    parser.add_argument("--formats", required=True, help="comma-separated, NAME[:key=value...]")
    parser.add_argument("--control", default="csr-blocks:unroll=1")
    parser.add_argument("--dtypes", default="float64")
    parser.add_argument("--repeat", type=int, default=11)
    parser.add_argument("matrices", nargs="+", help="matrix specs (gen:..., .mtx files)")
    args = parser.parse_args()
    device = clspmv.select_device(args.device)
    print("#", device.name, "--define", args.define, flush=True)
    for spec in args.matrices:
        base = resolve(spec).load().tocsr()
        for dtype in args.dtypes.split(","):
            line = compare(base.astype(dtype), device, args.formats.split(","), args.control,
                           args.define, args.repeat)
            print(spec, dtype, f"nnz={base.nnz}", line, flush=True)


if __name__ == "__main__":
    main()
