"""Baselines measured in the same run, on the same matrix and value type as the formats.

* ``scipy``: ``A @ x`` of a ``scipy.sparse.csr_matrix``. scipy's CSR product is serial C++
  (sparsetools), so it runs on 1 thread whatever the machine; timed on the host.
* ``mkl``: Intel MKL's ``mkl_sparse_?_mv`` through ``sparse_dot_mkl`` (``pip install
  "clspmv[mkl]"``), on the number of threads stated in the record (default: MKL's own, the
  number of cores). The handle is created once and only the products are timed. ``libmkl_rt``
  of the pip ``mkl`` package (``<sys.prefix>/lib/libmkl_rt.so.*``) is found without the user
  setting ``LD_LIBRARY_PATH`` or ``MKL_RT``: :func:`find_mkl_rt` locates it and ``MKL_RT`` is
  set for sparse_dot_mkl before it is imported.
* ``cusparse``: ``cupyx.scipy.sparse.csr_matrix @ x`` (cuSPARSE SpMV) on the first CUDA device,
  timed with CUDA events around each product queued behind a device-to-device copy, so that the
  host's part of cupy's call runs while the GPU is busy: the GPU's work alone, as the OpenCL
  formats' profiling events give it (:func:`_cusparse_times`). Only when ``import cupy`` works
  and a CUDA device exists.

Every baseline also runs the other operations of ``clspmv bench``, with ``transpose=True``
(A^T x) or a 2-D x (A X for several right-hand sides, in x's order):

* scipy: ``A.T @ x``, where ``A.T`` of a CSR matrix is a CSC view of the same arrays (nothing is
  copied; the product scatters into y, serially); ``A @ X`` by scipy's serial ``csr_matvecs``
  (a column-major X is copied to row-major inside the call, and that copy is timed).
* MKL: ``mkl_sparse_?_mv`` with ``SPARSE_OPERATION_TRANSPOSE`` on the same handle;
  ``mkl_sparse_?_mm`` with X's layout (row- or column-major) for several right-hand sides.
* cuSPARSE through cupy: ``csr.T @ x`` is a CSC view whose product cupy runs as cuSPARSE's
  SpMV of the original CSR arrays with ``CUSPARSE_OPERATION_TRANSPOSE`` (``cusparseSpMV``, or
  the legacy ``csrmv`` where cupy still has it): no transposed copy is formed by cupy, cuSPARSE
  chooses internally how to run it. ``csr @ X`` is cuSPARSE SpMM (``cusparseSpMM`` or the
  legacy ``csrmm2``) on column-major X and Y: cupy copies a row-major X to column-major first
  (``cupy.asfortranarray``), inside the timed call (that copy is GPU work and is timed). The
  host's part of each call (descriptor creation, the workspace query and allocation from cupy's
  memory pool) is not timed.
  :func:`cusparse_route` states what the installed cupy does; the record's ``params`` holds it.

A baseline that cannot run returns a result with status ``absent`` and the reason; nothing is
ever estimated in its place.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import availability
from .availability import find_mkl_rt, load_sparse_dot_mkl  # noqa: F401 (find_mkl_rt: re-exported)
from .baseline import Baseline, BaselineResult
from .timing import DEFAULT_MAX_SECONDS, repeats_within, summarize, time_host


def host_cpu() -> str:
    """The host CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _absent(name: str, device: str, device_type: str, reason: str) -> BaselineResult:
    return BaselineResult(name, device, device_type, "absent", reason)


def _is_fortran(x: np.ndarray) -> bool:
    """A column-major 2-D array (one that is not also row-major)."""
    return x.ndim == 2 and bool(x.flags.f_contiguous and not x.flags.c_contiguous)


# -- scipy ------------------------------------------------------------------------------------
def scipy_product(A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False, warmup: int = 2,
                  repeat: int = 10, max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """scipy's serial CSR product ``A @ x`` (x a vector or an n x k array), or ``A.T @ x``,
    timed on the host."""
    if transpose:
        def product():
            return A.T @ x
        params = "A.T @ x (A.T: a CSC view of the CSR arrays, no copy)"
    else:
        def product():
            return A @ x
        params = "A @ X (csr_matvecs)" if x.ndim == 2 else ""
    y = product()
    timing = time_host(product, warmup=warmup, repeat=repeat, max_seconds=max_seconds)
    return BaselineResult("scipy", f"{host_cpu()} (scipy, 1 thread)", "cpu", "ok",
                          timing=timing, threads=1, y=y, params=params)


def scipy_solver(A: sp.csr_matrix, b: np.ndarray, solver: str = "cg", iterations: int = 100,
                 *, warmup: int = 2, repeat: int = 10,
                 max_seconds: float = DEFAULT_MAX_SECONDS, **_: object) -> BaselineResult:
    """``scipy.sparse.linalg.cg`` on the host running exactly ``iterations`` iterations
    (``rtol = atol = 0``), timed as a whole; ``y`` is the last iterate."""
    import inspect

    import scipy.sparse.linalg as sla

    if solver != "cg":
        raise ValueError(f"no scipy baseline for solver {solver!r}")
    # scipy < 1.12 calls the relative tolerance ``tol``
    rtol = "rtol" if "rtol" in inspect.signature(sla.cg).parameters else "tol"
    count = [0]
    last: list[np.ndarray] = []

    def callback(_xk: np.ndarray) -> None:
        count[0] += 1

    def solve() -> None:
        count[0] = 0
        last[:] = [sla.cg(A, b, **{rtol: 0.0}, atol=0.0, maxiter=iterations,
                          callback=callback)[0]]

    timing = time_host(solve, warmup=warmup, repeat=repeat, max_seconds=max_seconds)
    x, done = last[0], count[0]
    return BaselineResult("scipy", f"{host_cpu()} (scipy cg: serial CSR products, numpy "
                          "vector operations)", "cpu", "ok", timing=timing, y=x, iterations=done,
                          params=f"scipy.sparse.linalg.cg, {rtol}=0, atol=0, "
                                 f"maxiter={iterations}")


# -- MKL --------------------------------------------------------------------------------------
SPARSE_OPERATION_NON_TRANSPOSE, SPARSE_OPERATION_TRANSPOSE = 10, 11
SPARSE_LAYOUT_ROW_MAJOR, SPARSE_LAYOUT_COLUMN_MAJOR = 101, 102
"""MKL's sparse_operation_t and sparse_layout_t values (mkl_spblas.h)."""


class _MklProduct:
    """An MKL handle of one matrix, created once; each call runs mkl_sparse_?_mv (a vector x)
    or mkl_sparse_?_mm (an n x k x in either layout) with A or, with ``transpose``, A^T."""

    def __init__(self, mkl, A: sp.csr_matrix, transpose: bool = False) -> None:
        import ctypes

        from sparse_dot_mkl._mkl_interface import (
            MKL,
            _create_mkl_sparse,
            _destroy_mkl_handle,
            _mkl_scalar,
            matrix_descr,
        )

        self._A = A  # the handle points into A's arrays
        self._handle, double, complex_ = _create_mkl_sparse(A)
        self._destroy = _destroy_mkl_handle
        self._mv = MKL._mkl_sparse_d_mv if double else MKL._mkl_sparse_s_mv
        self._mm = MKL._mkl_sparse_d_mm if double else MKL._mkl_sparse_s_mm
        self._pointer = ctypes.POINTER(ctypes.c_double if double else ctypes.c_float)
        self._descr = matrix_descr()
        self._one = _mkl_scalar(1.0, complex_, double)
        self._zero = _mkl_scalar(0.0, complex_, double)
        self._op = SPARSE_OPERATION_TRANSPOSE if transpose else SPARSE_OPERATION_NON_TRANSPOSE
        self._rows = A.shape[1] if transpose else A.shape[0]
        self._y: np.ndarray | None = None

    def _out(self, shape: tuple[int, ...], fortran: bool) -> np.ndarray:
        y = self._y
        if y is None or y.shape != shape or _is_fortran(y) != fortran:
            y = self._y = np.zeros(shape, self._A.dtype, order="F" if fortran else "C")
        return y

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if x.ndim == 1:
            y = self._out((self._rows,), False)
            status = self._mv(self._op, self._one, self._handle, self._descr, x, self._zero, y)
        else:
            k, fortran = x.shape[1], _is_fortran(x)
            y = self._out((self._rows, k), fortran)
            layout = SPARSE_LAYOUT_COLUMN_MAJOR if fortran else SPARSE_LAYOUT_ROW_MAJOR
            ldx, ldy = (x.shape[0], self._rows) if fortran else (k, k)
            status = self._mm(self._op, self._one, self._handle, self._descr, layout, x, k, ldx,
                              self._zero, y.ctypes.data_as(self._pointer), ldy)
        if status != 0:
            raise RuntimeError(f"mkl_sparse_{'mv' if x.ndim == 1 else 'mm'} returned status "
                               f"{status}")
        return y

    def close(self) -> None:
        self._destroy(self._handle)


def mkl_product(A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False,
                threads: int | None = None, warmup: int = 2, repeat: int = 10,
                max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """MKL's CSR product (A x, A^T x with ``transpose``, A X for a 2-D x) through
    sparse_dot_mkl on ``threads`` threads (default: MKL's)."""
    device = f"{host_cpu()} (MKL)"
    try:
        mkl = load_sparse_dot_mkl()
    except ImportError as err:
        return _absent("mkl", device, "cpu", str(err))
    if threads:
        mkl.mkl_set_num_threads(int(threads))
    used = int(mkl.mkl_get_max_threads())
    device = f"{host_cpu()} (MKL, {used} thread{'s' if used > 1 else ''})"
    routine = f"mkl_sparse_?_{'mm' if x.ndim == 2 else 'mv'}"
    params = f"{routine}, SPARSE_OPERATION_TRANSPOSE" if transpose else (
        routine if x.ndim == 2 else "")
    try:
        product = _MklProduct(mkl, A, transpose)
    except (ImportError, AttributeError) as err:  # private API moved: time the public call
        def product(v, A=A.T if transpose else A):
            return mkl.dot_product_mkl(A, v)
        product.close = lambda: None  # type: ignore[attr-defined]
        device += f" (dot_product_mkl per call: {err})"
    try:
        y = np.array(product(x))
        timing = time_host(lambda: product(x), warmup=warmup, repeat=repeat,
                           max_seconds=max_seconds)
    finally:
        product.close()
    return BaselineResult("mkl", device, "cpu", "ok", timing=timing, threads=used, y=y,
                          params=params)


# -- cuSPARSE ---------------------------------------------------------------------------------
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
        return _absent("cusparse", device, "gpu",
                       f"cupy cannot be imported ({type(err).__name__}: {err}); it needs an "
                       "NVIDIA GPU and pip install cupy-cuda12x")
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as err:  # cupy raises its CUDARuntimeError without a driver
        return _absent("cusparse", device, "gpu", f"cupy finds no CUDA device: {err}")
    if count < 1:
        return _absent("cusparse", device, "gpu", "cupy finds no CUDA device")
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
        return _absent("cusparse", device, "gpu", f"out of GPU memory: {err}")
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


def mkl_versions() -> dict[str, str]:
    """sparse_dot_mkl's and MKL's versions, when sparse_dot_mkl has been imported."""
    mkl = sys.modules.get("sparse_dot_mkl")
    if mkl is None:
        return {}
    out = {"sparse_dot_mkl": str(getattr(mkl, "__version__", "?"))}
    try:
        out["mkl"] = mkl.mkl_get_version_string()
    except Exception:  # an old sparse_dot_mkl: the version is not essential
        pass
    return out


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


SCIPY = Baseline(
    "scipy", "cpu", "scipy.sparse CSR A @ x (serial C++ sparsetools, 1 thread), host wall "
    "clock; A.T @ x on the CSC view; A @ X by csr_matvecs; cg: scipy.sparse.linalg.cg",
    scipy_product, solvers={"cg": scipy_solver}, availability=availability.scipy)
MKL = Baseline(
    "mkl", "cpu", "Intel MKL mkl_sparse_?_mv / _mm through sparse_dot_mkl on --mkl-threads "
    "threads (default: MKL's), handle created once, host wall clock", mkl_product,
    threaded=True, library_versions=mkl_versions, availability=availability.mkl)
CUSPARSE = Baseline(
    "cusparse", "gpu", "cuSPARSE SpMV / SpMM through cupy on CUDA device 0, CUDA events "
    "around each call", cusparse_product, library_versions=cupy_versions,
    availability=availability.cusparse)

PRODUCTS = {b.name: b.product for b in (SCIPY, MKL, CUSPARSE)}
"""Baseline name -> its product function (:data:`clspmv.bench.registry.BASELINES` holds the
registered :class:`~clspmv.bench.baseline.Baseline` s)."""
