"""Registers and spills of csr_adaptive_spmv on the NVIDIA OpenCL device (-cl-nv-verbose), with
and without ALIGN, float64 and float32 as clspmv builds them (python regs.py)."""

import pyopencl as cl

import clspmv
from clspmv import build

dev = clspmv.select_device("nvidia")
for dtype, cap, extra in (("float64", 1024, {"STREAM_HINT": 1}), ("float32", 2048, {})):
    for align in (1, 32):
        opts = build.options_for(dtype, WG=128, CAP=cap, ALIGN=align, WARP_SHUFFLE=1, **extra)
        prg = cl.Program(dev.context, build.source("csr_adaptive.cl")).build(
            options=[*opts, "-cl-nv-verbose"])
        log = prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)
        lines = [ln.strip() for ln in log.splitlines() if "registers" in ln or "spill" in ln
                 or "Function properties" in ln or "Compiling entry" in ln]
        print(dtype, "ALIGN", align, *lines, sep="\n  ", flush=True)
