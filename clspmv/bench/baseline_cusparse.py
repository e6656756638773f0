"""The ``cusparse`` baseline: cuSPARSE through cupy on the first CUDA device, measured in the
same run, on the same matrix and value type as the formats (the host baselines are in
:mod:`clspmv.bench.baselines`).

``cupyx.scipy.sparse.csr_matrix @ x`` (cuSPARSE SpMV) is timed with CUDA events around each
product queued behind a device-to-device copy, so that the host's part of cupy's call runs while
the GPU is busy: the GPU's work alone, as the OpenCL formats' profiling events give it
(:func:`_cusparse_times`). It runs only when ``import cupy`` works and a CUDA device exists;
otherwise its result has status ``absent`` and the reason.

The other operations of ``clspmv bench``: ``csr.T @ x`` is a CSC view whose product cupy runs as
cuSPARSE's SpMV of the original CSR arrays with ``CUSPARSE_OPERATION_TRANSPOSE``
(``cusparseSpMV``, or the legacy ``csrmv`` where cupy still has it): no transposed copy is formed
by cupy, cuSPARSE chooses internally how to run it. ``csr @ X`` is cuSPARSE SpMM
(``cusparseSpMM`` or the legacy ``csrmm2``) on column-major X and Y: cupy copies a row-major X to
column-major first (``cupy.asfortranarray``), inside the timed call (that copy is GPU work and is
timed). The host's part of each call (descriptor creation, the workspace query and allocation
from cupy's memory pool) is not timed. :func:`cusparse_route` states what the installed cupy
does; the record's ``params`` holds it.
"""

from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

from . import availability
from .baseline import Baseline, BaselineResult, absent
from .timing import DEFAULT_MAX_SECONDS, repeats_within, summarize


def cusparse_route(transpose: bool = False, columns: bool = False,
                   fortran: bool = False) -> str:
    """What cupy calls for ``csr @ x`` (``csr.T @ x`` with ``transpose``; ``csr @ X`` with
    ``columns``), as the installed cupy decides (``cusparse.check_availability``)."""
    try:
        from cupyx import cusparse
    except Exception:
        try:
            from cupy import cusparse  # older cupy
        except Exception:
            cusparse = None
    check = getattr(cusparse, "check_availability", None)

    def have(name: str) -> bool:
        try:
            return bool(check(name)) if check is not None else False
        except Exception:
            return False

    if check is None:
        routine = "cuSPARSE (routine not determined: cupy has no cusparse.check_availability)"
    elif columns:
        routine = "csrmm2 (legacy)" if have("csrmm2") else "cusparseSpMM"
    elif transpose:
        routine = "csrmv (legacy)" if have("csrmv") else "cusparseSpMV"
    elif have("csrmvEx"):
        routine = "csrmvEx (legacy)"
    else:
        routine = "csrmv (legacy)" if have("csrmv") else "cusparseSpMV"
    if transpose:
        return (f"csr.T @ x: {routine} of the CSR arrays with CUSPARSE_OPERATION_TRANSPOSE "
                "(csr.T is a CSC view, no copy)")
    if columns:
        return (f"csr @ X: {routine}, column-major X and Y" +
                ("" if fortran else "; the row-major X is copied to column-major first "
                 "(cupy.asfortranarray, timed)"))
    return f"csr @ x: {routine}"


def cusparse_product(A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False,
                     warmup: int = 2, repeat: int = 10,
                     max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """cuSPARSE through cupy on CUDA device 0 (A x, A^T x with ``transpose``, A X for a 2-D x
    in its order): the GPU time of each call from CUDA events, the host's part of the call
    hidden behind a copy (:func:`_cusparse_times`)."""
    device = "cuSPARSE"
    try:
        import cupy
        import cupyx.scipy.sparse as cusp
    except Exception as err:  # ImportError, or a CUDA library that fails to load
        return absent("cusparse", device, "gpu",
                      f"cupy cannot be imported ({type(err).__name__}: {err}); it needs an "
                      "NVIDIA GPU and pip install cupy-cuda12x")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as err:  # cupy raises its CUDARuntimeError without a driver
        return absent("cusparse", device, "gpu", f"cupy finds no CUDA device: {err}")
    if count < 1:
        return absent("cusparse", device, "gpu", "cupy finds no CUDA device")
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
    device = f"{name.decode() if isinstance(name, bytes) else name} (cuSPARSE)"
    fortran = x.ndim == 2 and bool(x.flags.f_contiguous)  # a single column is both orders
    try:
        with cupy.cuda.Device(0):
            A_gpu = cusp.csr_matrix(A)
            x_gpu = cupy.asarray(x, order="F" if fortran else "C")
            if transpose:
                def product():
                    return A_gpu.T @ x_gpu
            else:
                def product():
                    return A_gpu @ x_gpu
            y, samples, uncovered = _cusparse_times(cupy, product, warmup, repeat,
                                                    max_seconds)
    except cupy.cuda.memory.OutOfMemoryError as err:
        return absent("cusparse", device, "gpu", f"out of GPU memory: {err}")
    finally:
        cupy.get_default_memory_pool().free_all_blocks()
    params = cusparse_route(transpose, x.ndim == 2, fortran) if (
        transpose or x.ndim == 2) else ""
    if uncovered:  # said, never hidden: these samples count the host's part of the call
        note = (f"host time included in {uncovered} of {len(samples)} samples (not covered by "
                f"a {COVER_LIMIT >> 20} MiB copy)")
        params = f"{params}; {note}" if params else note
    return BaselineResult("cusparse", device, "gpu", "ok", timing=summarize(samples), y=y,
                          params=params)


COVER_BYTES = 256 << 20
"""Bytes of the device-to-device copy each timed cuSPARSE product is queued behind at first (about
0.2 ms on an H100), doubled while it does not outlast the host's part of the call."""
COVER_LIMIT = 2 << 30
"""The largest such copy (about 1.4 ms on an H100)."""


def _cusparse_times(cupy, product, warmup: int, repeat: int,
                    max_seconds: float) -> tuple[np.ndarray, list[float], int]:
    """One checked product, then CUDA-event times (ns) of warm-up and repeated products, and how
    many of the repeats still include host time.

    Every call of cupy's product also runs host code before the GPU has work: it creates
    cuSPARSE's descriptors and queries and allocates the work buffer (cupy's memory pool). Events
    around a call on an idle GPU count that host time as GPU time (42 us for a product of 49
    entries on an H100, whose kernel takes a few). So each timed product is queued behind a
    device-to-device copy that keeps the GPU busy meanwhile: the start event runs when the copy
    ends, the product's kernels right after it, and the events give the GPU's work alone, as the
    OpenCL formats' profiling events do. The start event must still be pending when the call
    returns (``Event.done``); otherwise the copy doubles, up to :data:`COVER_LIMIT`, and the
    product is timed again (a sample that still fails at the limit is kept, and counted)."""
    y = cupy.asnumpy(product())
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    size = COVER_BYTES
    src, dst = cupy.empty(size, cupy.uint8), cupy.empty(size, cupy.uint8)
    uncovered = 0

    def timed() -> float:
        nonlocal size, src, dst, uncovered
        while True:
            dst.data.copy_from_device_async(src.data, size)
            start.record()
            product()
            covered = not start.done
            end.record()
            end.synchronize()
            if covered or size >= COVER_LIMIT:
                uncovered += not covered
                return cupy.cuda.get_elapsed_time(start, end) * 1e6  # ms -> ns
            size *= 2
            src = dst = None  # freed before the larger pair is allocated
            src, dst = cupy.empty(size, cupy.uint8), cupy.empty(size, cupy.uint8)

    first = max(timed() for _ in range(max(warmup, 1))) / 1e9
    uncovered = 0  # of the repeats only
    samples = [timed() for _ in range(repeats_within(first, repeat, max_seconds))]
    return y, samples, uncovered


def cupy_versions() -> dict[str, str]:
    """cupy's and the CUDA runtime's and driver's versions, when cupy has been imported."""
    cupy = sys.modules.get("cupy")
    if cupy is None:
        return {}
    out = {"cupy": str(getattr(cupy, "__version__", "?"))}
    try:
        out["cuda_runtime"] = str(cupy.cuda.runtime.runtimeGetVersion())
        out["cuda_driver"] = str(cupy.cuda.runtime.driverGetVersion())
    except Exception:
        pass
    return out


CUSPARSE = Baseline(
    "cusparse", "gpu", "cuSPARSE SpMV / SpMM through cupy on CUDA device 0, CUDA events "
    "around each call", cusparse_product, library_versions=cupy_versions,
    availability=availability.cusparse)
