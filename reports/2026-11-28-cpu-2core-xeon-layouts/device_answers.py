"""What each OpenCL device answers about vector widths and work-groups (issue 44, H44): the
preferred and native float/double vector widths, the work-group limits, local memory, and the
PREFERRED_WORK_GROUP_SIZE_MULTIPLE of a trivial float kernel and of a float64 axpy::

    python device_answers.py
"""

from __future__ import annotations

import pyopencl as cl

QUERIES = ("preferred_vector_width_float", "preferred_vector_width_double",
           "native_vector_width_float", "native_vector_width_double", "max_work_group_size",
           "max_compute_units", "local_mem_size", "local_mem_type", "mem_base_addr_align",
           "global_mem_cache_size")
SOURCE = """__kernel void probe(__global float *a) { a[0] = 0; }
__kernel void axpy(__global const double *x, __global double *y, int n)
{ int i = get_global_id(0); if (i < n) y[i] += 2.0 * x[i]; }"""

for p in cl.get_platforms():
    for d in p.get_devices():
        print(f"{p.name} | {d.name} | {d.version} | {d.driver_version}")
        for name in QUERIES:
            print(f"  {name} {getattr(d, name)}")
        ctx = cl.Context([d])  # kept alive while the kernels are queried
        prg = cl.Program(ctx, SOURCE).build()
        for k in (prg.probe, prg.axpy):
            multiple = k.get_work_group_info(
                cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, d)
            print(f"  kernel {k.function_name}: PREFERRED_WORK_GROUP_SIZE_MULTIPLE {multiple}")
