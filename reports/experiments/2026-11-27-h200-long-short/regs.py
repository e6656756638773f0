"""Registers and spills of csr_adaptive_spmv on the NVIDIA OpenCL device (-cl-nv-verbose) as
clspmv builds it on GPUs, float64 and float32, for each VARIANTS entry of extra -D options (as in
passes_ab.py; default: the kernel alone).

    [VARIANTS='{"label": {"DEFINE": value}, ...}'] python regs.py"""

import json
import os

import pyopencl as cl

import clspmv
from clspmv import build

VARIANTS = json.loads(os.environ.get("VARIANTS", '{"kernel": {}}'))
dev = clspmv.select_device("nvidia")
for dtype, cap in (("float64", 1024), ("float32", 2048)):
    for label, extra in VARIANTS.items():
        defines = {"WG": 128, "CAP": cap, "ALIGN": 32, "PRELOAD": 4, "WARP_SHUFFLE": 1, **extra}
        opts = build.options_for(dtype, **defines)
        prg = cl.Program(dev.context, build.source("csr_adaptive.cl")).build(
            options=[*opts, "-cl-nv-verbose"])
        log = prg.get_build_info(dev.cl_device, cl.program_build_info.LOG)
        lines = [ln.strip() for ln in log.splitlines() if "registers" in ln or "spill" in ln
                 or "Compiling entry" in ln]
        print(dtype, label, *lines, sep="\n  ", flush=True)
