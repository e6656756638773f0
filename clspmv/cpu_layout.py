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
each diagonal over 64 of them under Intel's runtime, and 1.7-1.9x more under Debian's PoCL 3.1.
"""

from __future__ import annotations


def vectorises_work_items(device_type: str, preferred_float: int, native_float: int) -> bool:
    """True for a CPU device whose preferred float vector width (``CL_DEVICE_PREFERRED_VECTOR_
    WIDTH_FLOAT``) is below its native one (``CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT``): an
    implementation that asks for scalar kernels and vectorises across work-items (Intel's CPU
    runtime). False for GPUs (their lockstep is the warp, :data:`clspmv.formats.layout.
    LOCKSTEP_SIMD`) and for CPUs that prefer their native width (PoCL)."""
    return device_type == "cpu" and 0 < preferred_float < native_float
