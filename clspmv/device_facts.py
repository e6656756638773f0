"""The facts :class:`clspmv.device.Device` holds, read once from a ``pyopencl.Device`` as plain
values: its type, sizes, SIMD width, fp64 and atomics.

A query the driver cannot answer for a fact with a safe value gives that value instead of losing
the device: an OpenCL 1.x device without fp64 may reject the double-precision query (no fp64),
AMD's wavefront query may fail (the work-group multiple of a kernel then).
"""

from __future__ import annotations

import re

import pyopencl as cl

_TYPE_NAMES = (
    (cl.device_type.GPU, "gpu"),
    (cl.device_type.CPU, "cpu"),
    (cl.device_type.ACCELERATOR, "accelerator"),
)


def driver_error(err: BaseException) -> str:
    """The first line of a driver's error (pyopencl puts a build log below it), at most 200
    characters; the exception's type where it has no text."""
    return (str(err).strip().splitlines() or [type(err).__name__])[0][:200]


def read_facts(d: cl.Device) -> dict[str, object]:
    """Every fact of ``d`` that :class:`clspmv.device.Device` holds but its index, platform and
    the ``cl_device`` itself, by field name (cl.Error where the driver fails a query without a
    safe value)."""
    kind = device_type(d)
    ext = d.extensions
    return {
        "name": d.name.strip(),
        "type": kind,
        "compute_units": int(d.max_compute_units),
        "global_memory": int(d.global_mem_size),
        "max_allocation": int(d.max_mem_alloc_size),
        "local_memory": int(d.local_mem_size),
        "max_work_group_size": int(d.max_work_group_size),
        "fp64": _has_fp64(d),
        "int64_atomics": "cl_khr_int64_base_atomics" in ext,
        "float_atomics_std": float_atomics_std(d),
        "simd_width": simd_width(d, kind),
        "driver_version": d.driver_version.strip(),
        "cache_bytes": int(d.global_mem_cache_size),
    }


def device_type(d: cl.Device) -> str:
    """``"gpu"``, ``"cpu"``, ``"accelerator"`` or ``"other"``."""
    for flag, name in _TYPE_NAMES:
        if d.type & flag:
            return name
    return "other"


def _has_fp64(d: cl.Device) -> bool:
    if "cl_khr_fp64" in d.extensions:
        return True
    try:
        return d.double_fp_config != 0
    except cl.Error:  # a driver without fp64 that rejects the query
        return False


def simd_width(d: cl.Device, kind: str) -> int:
    """Warp/wavefront width on GPUs, float vector width on CPUs."""
    ext = d.extensions
    if "cl_nv_device_attribute_query" in ext:
        return int(d.warp_size_nv)
    if "cl_amd_device_attribute_query" in ext:
        try:
            return int(d.wavefront_width_amd)
        except cl.Error:
            pass
    if kind == "cpu":
        return max(1, int(d.preferred_vector_width_float))
    # Other GPUs and accelerators: the preferred work-group size multiple of a trivial kernel.
    ctx = cl.Context([d])
    prg = cl.Program(ctx, "__kernel void probe(__global float *a) { a[0] = 0; }").build()
    return int(
        prg.probe.get_work_group_info(
            cl.kernel_work_group_info.PREFERRED_WORK_GROUP_SIZE_MULTIPLE, d
        )
    )


def opencl_c_versions(d: cl.Device) -> set[tuple[int, int]]:
    """(major, minor) of every OpenCL C version the device compiles."""
    try:  # OpenCL 3.0 devices list them all
        return {(v.version >> 22, (v.version >> 12) & 0x3FF) for v in d.opencl_c_all_versions}
    except (cl.Error, AttributeError):
        found = re.search(r"OpenCL C (\d+)\.(\d+)", d.opencl_c_version)
        return {(int(found.group(1)), int(found.group(2)))} if found else set()


def float_atomics_std(d: cl.Device) -> str | None:
    """The ``-cl-std`` that unlocks ``cl_ext_float_atomics`` (it needs OpenCL C 2.0 atomics)."""
    if "cl_ext_float_atomics" not in d.extensions:
        return None
    versions = opencl_c_versions(d)
    return next((f"CL{major}.0" for major in (3, 2) if (major, 0) in versions), None)
