"""How the benchmark's numbers are made, written once: :data:`METHOD` (the prose) and
:data:`FORMULAS` (the derived fields of A x records). :func:`clspmv.bench.metadata.run_meta`
copies both, with the formulas of each operation and the description of each baseline that
ran, into every results.json; the report prints them from there
(:func:`clspmv.report.runs.method_section`), so an old results.json keeps its own.
"""

from __future__ import annotations

import re

PAPERS = {
    "ellpack-r": "Vázquez, Fernández, Garzón: “A new approach for sparse matrix vector product "
                 "on NVIDIA GPUs” (CCPE 2011)",
    "spmv-model-autoselect": "Kulkarni, Barde: “SpMV Profiling and Optimization Analysis” "
                             "(after Guo, Wang, Chen, IEEE TPDS 2014)",
    "openmp-vs-cuda": "Ferez: “Sparse Matrix-Vector Product: OpenMP vs CUDA on Hybrid "
                      "Platforms” (2023)",
    "pjds-multigpu": "Kreutzer, Hager, Wellein, Fehske, Basermann, Bishop: “Sparse "
                     "matrix-vector multiplication on GPGPU clusters” (pJDS)",
    "naive-spmv-transpose": "Steinberger, Derler, Zayer, Seidel: “How naive is naive SpMV on "
                            "the GPU?” (HPEC 2016)",
}
"""The papers clspmv is built from, by the short names the code's comments use: authors, title
and venue, as user-visible text cites them."""

_PAPER_FILE = re.compile(r"`?(" + "|".join(map(re.escape, PAPERS)) + r")\.txt`?")


def cite(text: str) -> str:
    """``text`` with every paper file name (``ellpack-r.txt``, as older runs' meta data and
    comments name them) replaced by the paper's authors and title (:data:`PAPERS`)."""
    return _PAPER_FILE.sub(lambda m: PAPERS[m.group(1)], text)


METHOD = [
    "Kernel time: OpenCL profiling events of each product (from the start of its first kernel "
    "to the end of its last, the gaps between its kernels included), each product queued "
    "behind a spin kernel so that the host's enqueueing of its kernels runs while the device "
    "is busy (not on CPU devices, whose kernels share the host's cores), after warm-up "
    "products (--warmup of them, more until they have taken 20 ms: short products reach their "
    "steady speed only after tens of them), with x and y on the device: median of the "
    "repeats (min and max are in results.json). cuSPARSE: CUDA events around each product, "
    "queued behind a device-to-device copy so that the host's part of cupy's call (cuSPARSE's "
    "descriptors, its work buffer) runs while the GPU is busy: both GPU times are the GPU's "
    "work alone (the copy leaves cuSPARSE's products a cold L2 cache, the spin leaves "
    "clspmv's a warm one). scipy and MKL: the host wall clock of the call (x and y are in "
    "host memory anyway).",
    "Wall time: one product from a numpy x to a numpy y, including the host→device copy of x "
    "and the device→host copy of y (the PCIe transfer scenario of the pJDS paper, "
    f"{PAPERS['pjds-multigpu']}, §2.2); on a CPU device x and y are used in place. Median of "
    "up to 5, each taken right after one of the kernel time's products.",
    "Conversion: host layout from canonical CSR (numpy) plus upload; kernel compilation "
    "excluded. Break-even: the single-product scenario of the naive-SpMV paper "
    f"({PAPERS['naive-spmv-transpose']}) generalised to n products against csr-scalar.",
    "Every product is checked against scipy in float64; a format above the error bound is "
    "marked `wrong` and never counted as best.",
    "`cache`: the matrix's minimum bytes fit in the device's last-level cache (reported by the "
    "driver), so its % of DRAM copy bandwidth can exceed 100.",
]
"""The methodology, one Markdown bullet each (results.json: meta["method"])."""

WALL_SPEEDUP = (
    "wall time of baseline X's y = A @ x from a numpy x to a numpy y (scipy, MKL: the host wall "
    "clock of the call) / wall_ms of this format (one product from a numpy x to a numpy y, the "
    "copies of x and y included): what a user of M @ x sees; none for cuSPARSE, whose time is "
    "kernel-only (computed by the report from the records)")
"""The definition of the wall-time speedup (the report prints it beside its tables)."""

FORMULAS = {
    "gflops": "2 * nnz / kernel time",
    "min_bytes": "nnz * (value + 4) + 4 * (rows + 1) + value * (cols + rows)  "
                 "(values + int32 columns, int32 row pointers, x read once, y written once; "
                 "beta = 0)",
    "gbps": "min_bytes / kernel time",
    "pct_copy_bw": "100 * gbps / copy_gbps (device copy bandwidth measured in the same run)",
    "speedups[X]": "kernel time of baseline X / kernel time of this record "
                   "(same matrix, dtype and run): the kernel speedup (scipy's and MKL's "
                   "time is the host wall clock of their whole call)",
    "wall speedup over X": WALL_SPEEDUP,
    "breakeven_products": "smallest n >= 0 with conversion + n * kernel <= "
                          "conversion(csr-scalar) + n * kernel(csr-scalar); None: never",
    "reduction_vs_ell_pct": "100 * (1 - device_bytes / ELLPACK bytes), ELLPACK bytes = "
                            "rows padded to the SIMD width * longest row * (value + 4)",
    "error_ratio": "max over rows of |y - y_ref| / (2 (len + 1) (eps (|A||x|) + tiny))",
    "max_rel_error": "max |y - y_ref| / max |y_ref|, y_ref the float64 product of the stored "
                     "values (mixed and float32: the same float32 values)",
    "mixed": "float32 values, x and y, sums in float64; compared with the float32 baselines "
             "(scipy, MKL, cuSPARSE in float32) of the same matrix and x",
}
"""Formulas of the derived fields of A x records (results.json: meta["formulas"])."""

MIXED = {
    "dtype": "mixed", "baseline_dtype": "float32",
    "note": "`mixed`: float32 values, x and y with every sum in float64 "
            "(`DeviceMatrix.from_scipy(A, dtype=\"mixed\")`). Its baselines are the float32 "
            "ones (scipy, MKL, cuSPARSE in float32, same matrix and x): `× X` is X's float32 "
            "time / the mixed kernel time.",
}
"""How mixed-precision records are named and compared (results.json: meta["definitions"])."""
