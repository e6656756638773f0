"""The host baselines, measured in the same run, on the same matrix and value type as the
formats (cuSPARSE, the GPU baseline, is in :mod:`clspmv.bench.baseline_cusparse`).

* ``scipy``: ``A @ x`` of a ``scipy.sparse.csr_matrix``. scipy's CSR product is serial C++
  (sparsetools), so it runs on 1 thread whatever the machine; timed on the host.
* ``mkl``: Intel MKL's ``mkl_sparse_?_mv`` through ``sparse_dot_mkl`` (``pip install
  "clspmv[mkl]"``), on the number of threads stated in the record (default: MKL's own, the
  number of cores). The handle is created once and only the products are timed. ``libmkl_rt``
  of the pip ``mkl`` package (``<sys.prefix>/lib/libmkl_rt.so.*``) is found without the user
  setting ``LD_LIBRARY_PATH`` or ``MKL_RT``: :func:`find_mkl_rt` locates it and ``MKL_RT`` is
  set for sparse_dot_mkl before it is imported. The handle is MKL's plain one: no hint, no
  ``mkl_sparse_optimize`` (sparse_dot_mkl binds neither).
* ``mkl-optimised``: the same routines on the same ``libmkl_rt`` and threads, on a handle given
  ``mkl_sparse_set_mv_hint`` (``_mm_hint`` for several right-hand sides: the operation, a
  general matrix, the products the measurement runs, :func:`expected_products`) and then
  ``mkl_sparse_optimize``: MKL prepared for repeated products, as its users who care about its
  speed call it (:mod:`clspmv.bench.mkl_optimised`). The hint and optimize are not timed.

Every baseline also runs the other operations of ``clspmv bench``, with ``transpose=True``
(A^T x) or a 2-D x (A X for several right-hand sides, in x's order):

* scipy: ``A.T @ x``, where ``A.T`` of a CSR matrix is a CSC view of the same arrays (nothing is
  copied; the product scatters into y, serially); ``A @ X`` by scipy's serial ``csr_matvecs``
  (a column-major X is copied to row-major inside the call, and that copy is timed).
* MKL (both handles): ``mkl_sparse_?_mv`` with ``SPARSE_OPERATION_TRANSPOSE`` on the same
  handle; ``mkl_sparse_?_mm`` with X's layout (row- or column-major) for several right-hand sides.

A baseline that cannot run returns a result with status ``absent`` and the reason; nothing is
ever estimated in its place.
"""

from __future__ import annotations

import platform
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from . import availability, mkl_optimised, openmp
from .availability import find_mkl_rt, load_sparse_dot_mkl  # noqa: F401 (find_mkl_rt: re-exported)
from .baseline import Baseline, BaselineResult, absent
from .mkl_optimised import (
    SPARSE_LAYOUT_COLUMN_MAJOR,
    SPARSE_LAYOUT_ROW_MAJOR,
    SPARSE_OPERATION_NON_TRANSPOSE,
    SPARSE_OPERATION_TRANSPOSE,
    is_fortran,
)
from .timing import DEFAULT_MAX_SECONDS, MAX_WARMUP, time_host


def host_cpu() -> str:
    """The host CPU's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


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
        if y is None or y.shape != shape or is_fortran(y) != fortran:
            y = self._y = np.zeros(shape, self._A.dtype, order="F" if fortran else "C")
        return y

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if x.ndim == 1:
            y = self._out((self._rows,), False)
            status = self._mv(self._op, self._one, self._handle, self._descr, x, self._zero, y)
        else:
            k, fortran = x.shape[1], is_fortran(x)
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


def mkl_threads_set(threads: int | None) -> tuple[object, int, str]:
    """sparse_dot_mkl loaded, MKL set to ``threads`` threads (None: MKL's own number), the
    number it uses and the device label; ImportError with what to install."""
    mkl = load_sparse_dot_mkl()
    if threads:
        mkl.mkl_set_num_threads(int(threads))
    used = int(mkl.mkl_get_max_threads())
    return mkl, used, f"{host_cpu()} (MKL, {used} thread{'s' if used > 1 else ''})"


def mkl_product(A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False,
                threads: int | None = None, warmup: int = 2, repeat: int = 10,
                max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """MKL's CSR product (A x, A^T x with ``transpose``, A X for a 2-D x) through
    sparse_dot_mkl on ``threads`` threads (default: MKL's)."""
    try:
        mkl, used, device = mkl_threads_set(threads)
    except ImportError as err:
        return absent("mkl", f"{host_cpu()} (MKL)", "cpu", str(err))
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
        openmp.settle(lambda: product(x))
    finally:
        product.close()
    return BaselineResult("mkl", device, "cpu", "ok", timing=timing, threads=used, y=y,
                          params=params)


def mkl_optimised_product(A: sp.csr_matrix, x: np.ndarray, *, transpose: bool = False,
                          threads: int | None = None, warmup: int = 2, repeat: int = 10,
                          max_seconds: float = DEFAULT_MAX_SECONDS,
                          expected_calls: int | None = None) -> BaselineResult:
    """MKL's CSR product on a handle hinted for the products to come and optimised
    (:class:`~clspmv.bench.mkl_optimised.OptimisedMkl`): A x, A^T x with ``transpose``
    (``mkl_sparse_set_mv_hint``), A X for a 2-D x (``mkl_sparse_set_mm_hint``), on ``threads``
    threads (default: MKL's). ``expected_calls`` (the hint; default
    :func:`expected_products`) is stated in the result's params."""
    try:
        _, used, device = mkl_threads_set(threads)
        calls = expected_products(warmup, repeat) if expected_calls is None else expected_calls
        fortran = is_fortran(x)
        handle = mkl_optimised.OptimisedMkl(
            A, expected_calls=calls, transpose=transpose,
            columns=x.shape[1] if x.ndim == 2 else None, fortran=fortran)
    except ImportError as err:
        return absent("mkl-optimised", f"{host_cpu()} (MKL)", "cpu", str(err))
    operation = "SPARSE_OPERATION_TRANSPOSE" if transpose else "SPARSE_OPERATION_NON_TRANSPOSE"
    hint = (f"mkl_sparse_set_mm_hint({operation}, general, "
            f"{'column' if fortran else 'row'}-major, {x.shape[1]} columns, "
            if x.ndim == 2 else f"mkl_sparse_set_mv_hint({operation}, general, ")
    params = (f"{hint}expected_calls={calls}) + mkl_sparse_optimize; "
              f"mkl_sparse_?_{'mm' if x.ndim == 2 else 'mv'}")
    with handle:
        y = np.array(handle.matvec(x))
        out = np.empty_like(y)
        timing = time_host(lambda: handle.matvec(x, out), warmup=warmup, repeat=repeat,
                           max_seconds=max_seconds)
        openmp.settle(lambda: handle.matvec(x, out))
    return BaselineResult("mkl-optimised", device, "cpu", "ok", timing=timing, threads=used, y=y,
                          params=params)


def expected_products(warmup: int, repeat: int) -> int:
    """The most products one baseline measurement runs (:func:`time_host`): one checked, the
    warm-up (at least ``warmup``, at most :data:`~clspmv.bench.timing.MAX_WARMUP`), ``repeat``
    and one that lets MKL's threads sleep (:func:`clspmv.bench.openmp.settle`): the
    ``expected_calls`` of the optimised MKL's hint."""
    return 2 + max(warmup, MAX_WARMUP) + repeat


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


SCIPY = Baseline(
    "scipy", "cpu", "scipy.sparse CSR A @ x (serial C++ sparsetools, 1 thread), host wall "
    "clock; A.T @ x on the CSC view; A @ X by csr_matvecs; cg: scipy.sparse.linalg.cg",
    scipy_product, solvers={"cg": scipy_solver}, availability=availability.scipy)
MKL = Baseline(
    "mkl", "cpu", "Intel MKL's plain handle: mkl_sparse_?_mv / _mm through sparse_dot_mkl, no "
    "mkl_sparse_set_mv_hint and no mkl_sparse_optimize (sparse_dot_mkl binds neither), on "
    "--mkl-threads threads (default: MKL's), handle created once, host wall clock", mkl_product,
    threaded=True, library_versions=mkl_versions, availability=availability.mkl)
MKL_OPTIMISED = Baseline(
    "mkl-optimised", "cpu", "Intel MKL's hinted and optimised handle: mkl_sparse_?_mv / _mm "
    "on a handle given "
    "mkl_sparse_set_mv_hint / _mm_hint (the operation, a general matrix, the products the "
    "measurement runs) and mkl_sparse_optimize, through ctypes on sparse_dot_mkl's libmkl_rt, "
    "on --mkl-threads threads (default: MKL's), handle created and optimised once, host wall "
    "clock", mkl_optimised_product, threaded=True, library_versions=mkl_versions,
    availability=availability.mkl)
