"""Whether a CPU OpenCL implementation runs a work-group's work-items side by side in vector
lanes, read from the device's own answers (issue 44): the layouts that suit one way suit the
other badly.

PoCL runs a work-group's work-items one after another (a loop per stretch between barriers) and
vectorises loops within a work-item; it reports a preferred float vector width equal to its
native one (16 and 16 with AVX-512). Intel's CPU runtime vectorises across work-items, 8 or 16 of
them in the lanes of one vector, and asks for scalar code: preferred width 1, native 16. So a
preferred width below the native one says the compiler makes the vectors across work-items.

Measured on a 2-core Xeon (AVX-512), float64, matrices of 2-3.2 M entries
(``reports/2026-11-28-cpu-2core-xeon-layouts``): ``dia`` with a work-item per row (its kernel
without ``row_chunks``) took 1.12-1.29x less kernel time than a work-item per run of rows walking
each diagonal over 64 of them under Intel's runtime, and 1.7-1.9x more under Debian's PoCL 3.1
(since the row chunks keep their sums in vectors they are faster under Intel's runtime too:
:mod:`clspmv.formats.dia`).
"""

from __future__ import annotations

import re

SLICE_GATHERS_FROM = (3, 0)
"""The first PoCL version whose compiler makes ``sell``'s work-item per slice beat a work-item
per row (:func:`gathers_slices`); earlier ones are not measured."""


def pocl_version(platform_version: str) -> tuple[int, int] | None:
    """PoCL's version (major, minor) read from its platform's ``CL_PLATFORM_VERSION`` ("OpenCL
    3.0 PoCL 3.1+debian Linux, ..."); None for another implementation."""
    found = re.search(r"PoCL (\d+)\.(\d+)", platform_version)
    return (int(found[1]), int(found[2])) if found else None


def vectorises_work_items(device_type: str, preferred_float: int, native_float: int) -> bool:
    """True for a CPU device whose preferred float vector width (``CL_DEVICE_PREFERRED_VECTOR_
    WIDTH_FLOAT``) is below its native one (``CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT``): an
    implementation that asks for scalar kernels and vectorises across work-items (Intel's CPU
    runtime). False for GPUs (their lockstep is the warp, :data:`clspmv.formats.layout.
    LOCKSTEP_SIMD`) and for CPUs that prefer their native width (PoCL)."""
    return device_type == "cpu" and 0 < preferred_float < native_float


def gathers_slices(device_type: str, platform_version: str) -> bool:
    """True for a CPU implementation that compiles ``sell``'s and ``pjds``'s work-item per slice
    (vectors of a slice's C rows, one gather of x per column: ``slice_items``) into code faster
    than a work-item per row: PoCL from :data:`SLICE_GATHERS_FROM` on (:func:`pocl_version` of
    ``platform_version``). Measured, float64, the row kernel's time over the slice kernel's in
    geometric mean over 12-33 matrices (``reports/experiments/2026-11-29-sell-slice-items``):
    PoCL 3.1 (LLVM 15) 1.18-1.45, PoCL 5.0 1.24-1.28; PoCL 3.0-rc2 from PyPI (LLVM 14) 0.82-0.83
    while the slice was built of OpenCL vectors, which LLVM 14 compiles without gathers, 1.33
    (0.89-2.2) over six irregular matrices of no suite since it is a loop over lanes
    (``reports/experiments/2026-11-30-slice-lane-loop``). Other implementations are not
    measured: the row kernel (Intel's runtime vectorises work-items itself)."""
    version = pocl_version(platform_version)
    return device_type == "cpu" and version is not None and version >= SLICE_GATHERS_FROM


TARGETS_WITHOUT_AVX512 = ("znver1", "znver2", "znver3", "x86-64", "x86-64-v2", "x86-64-v3",
                          "haswell", "broadwell", "skylake", "alderlake")
"""LLVM CPU names whose LLVM model has no AVX-512 (:func:`narrow_vectors`)."""


def target_cpu(device_version: str) -> str | None:
    """The LLVM CPU a PoCL device compiles for, the last field of the ``HSTR`` in its
    ``CL_DEVICE_VERSION`` ("OpenCL 3.0 PoCL HSTR: pthread-x86_64-unknown-linux-gnu-znver3");
    None where there is none (another implementation)."""
    found = re.search(r"HSTR: \S*?-linux-gnu-(\S+)", device_version)
    return found[1] if found else None


def narrow_vectors(device_version: str, native_double: int) -> bool:
    """True for a device whose compiler is told the CPU has AVX-512 (a native double vector
    width of 8) while it compiles for an LLVM CPU modelled without it (:func:`target_cpu` in
    :data:`TARGETS_WITHOUT_AVX512`; read from the compiler's target, whatever type the device
    is said to be): kernels then use OpenCL vectors of 32 bytes at most
    (``NARROW_VECTORS``, ``kernels_cl/dia.cl``'s row chunks). Seen: PyPI's PoCL 3.0-rc2 (LLVM
    14.0.6) on a 2-core Zen 4 (AMD family 25, model 17) compiles for ``znver3`` with AVX-512
    features, and LLVM aborted the process while compiling ``dia``'s row chunks of 8 doubles or 16
    floats ("LLVM ERROR: Cannot emit physreg copy instruction"; without the select of their
    zeros a segmentation fault, or "Do not know how to scalarize this operator's operand" in
    float32); at 4 doubles or 8 floats it compiled and ran right, as did every other format.
    Where the CPU is named for what it has the 64-byte vectors stay: the same PoCL 3.0 on a
    16-core Xeon ran the half width 1.11-1.68x slower, PoCL 5.0 there 1.01-1.17x, and on the
    Zen 4 Debian's PoCL 3.1 (``skylake-avx512``) and Intel's runtime ran it as fast
    (0.95-1.08x; ``reports/experiments/2026-11-30-dia-vector-store``)."""
    return native_double >= 8 and target_cpu(device_version) in TARGETS_WITHOUT_AVX512
