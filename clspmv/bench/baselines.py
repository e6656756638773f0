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
  timed with CUDA events around each product: kernel time, as for the OpenCL formats. Only when
  ``import cupy`` works and a CUDA device exists.

A baseline that cannot run returns a result with status ``absent`` and the reason; nothing is
ever estimated in its place.
"""

from __future__ import annotations

import glob
import os
import platform
import site
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .timing import DEFAULT_MAX_SECONDS, Timing, repeats_within, summarize, time_host


@dataclass(frozen=True)
class BaselineResult:
    """A baseline's product time on one matrix and value type, or why there is none."""

    name: str
    device: str
    device_type: str
    status: str  # "ok" or "absent"
    reason: str = ""
    timing: Timing | None = None
    threads: int | None = None
    y: np.ndarray | None = None
    """One product's result, for the error check."""


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


# -- scipy ------------------------------------------------------------------------------------
def scipy_product(A: sp.csr_matrix, x: np.ndarray, *, warmup: int = 2, repeat: int = 10,
                  max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """scipy's serial CSR product, timed on the host."""
    y = A @ x
    timing = time_host(lambda: A @ x, warmup=warmup, repeat=repeat, max_seconds=max_seconds)
    return BaselineResult("scipy", f"{host_cpu()} (scipy, 1 thread)", "cpu", "ok",
                          timing=timing, threads=1, y=y)


# -- MKL --------------------------------------------------------------------------------------
def find_mkl_rt() -> str | None:
    """Path of a ``libmkl_rt`` shipped by the pip ``mkl`` package (in ``<prefix>/lib``), or
    None. ``$MKL_RT`` wins when it is set."""
    if os.environ.get("MKL_RT"):
        return os.environ["MKL_RT"]
    prefixes = dict.fromkeys([sys.prefix, sys.base_prefix, site.getuserbase(),
                              os.environ.get("CONDA_PREFIX", "")])
    for prefix in filter(None, prefixes):
        for pattern in ("libmkl_rt.so*", "libmkl_rt*.dylib", "mkl_rt*.dll"):
            for folder in ("lib", "Library/bin"):
                found = sorted(glob.glob(os.path.join(prefix, folder, pattern)))
                if found:
                    return found[-1]
    return None


def load_sparse_dot_mkl():
    """Import ``sparse_dot_mkl`` with ``libmkl_rt`` found as :func:`find_mkl_rt` says.

    Raises ImportError with what to install when either is missing.
    """
    path = find_mkl_rt()
    if path and not os.environ.get("MKL_RT"):
        os.environ["MKL_RT"] = path
    try:
        import sparse_dot_mkl
    except ImportError as err:
        raise ImportError(
            f"sparse_dot_mkl cannot be imported ({err}); pip install \"clspmv[mkl]\" installs "
            "it and the mkl package") from err
    return sparse_dot_mkl


class _MklProduct:
    """An MKL handle of one matrix, created once; each call runs mkl_sparse_?_mv."""

    def __init__(self, mkl, A: sp.csr_matrix) -> None:
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
        self._descr = matrix_descr()
        self._one = _mkl_scalar(1.0, complex_, double)
        self._zero = _mkl_scalar(0.0, complex_, double)
        self._y = np.zeros(A.shape[0], A.dtype)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        status = self._mv(10, self._one, self._handle, self._descr, x, self._zero, self._y)
        if status != 0:
            raise RuntimeError(f"mkl_sparse_mv returned status {status}")
        return self._y

    def close(self) -> None:
        self._destroy(self._handle)


def mkl_product(A: sp.csr_matrix, x: np.ndarray, *, threads: int | None = None,
                warmup: int = 2, repeat: int = 10,
                max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """MKL's CSR product through sparse_dot_mkl on ``threads`` threads (default: MKL's)."""
    device = f"{host_cpu()} (MKL)"
    try:
        mkl = load_sparse_dot_mkl()
    except ImportError as err:
        return _absent("mkl", device, "cpu", str(err))
    if threads:
        mkl.mkl_set_num_threads(int(threads))
    used = int(mkl.mkl_get_max_threads())
    device = f"{host_cpu()} (MKL, {used} thread{'s' if used > 1 else ''})"
    try:
        product = _MklProduct(mkl, A)
    except (ImportError, AttributeError) as err:  # private API moved: time the public call
        def product(v, A=A):
            return mkl.dot_product_mkl(A, v)
        product.close = lambda: None  # type: ignore[attr-defined]
        device += f" (dot_product_mkl per call: {err})"
    try:
        y = np.array(product(x))
        timing = time_host(lambda: product(x), warmup=warmup, repeat=repeat,
                           max_seconds=max_seconds)
    finally:
        product.close()
    return BaselineResult("mkl", device, "cpu", "ok", timing=timing, threads=used, y=y)


# -- cuSPARSE ---------------------------------------------------------------------------------
def cusparse_product(A: sp.csr_matrix, x: np.ndarray, *, warmup: int = 2, repeat: int = 10,
                     max_seconds: float = DEFAULT_MAX_SECONDS) -> BaselineResult:
    """cuSPARSE SpMV through cupy on CUDA device 0, kernel time from CUDA events."""
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
    try:
        with cupy.cuda.Device(0):
            y, samples = _cusparse_times(cupy, cusp.csr_matrix(A), cupy.asarray(x), warmup,
                                         repeat, max_seconds)
    except cupy.cuda.memory.OutOfMemoryError as err:
        return _absent("cusparse", device, "gpu", f"out of GPU memory: {err}")
    finally:
        cupy.get_default_memory_pool().free_all_blocks()
    return BaselineResult("cusparse", device, "gpu", "ok", timing=summarize(samples), y=y)


def _cusparse_times(cupy, A_gpu, x_gpu, warmup: int, repeat: int,
                    max_seconds: float) -> tuple[np.ndarray, list[float]]:
    """One checked product, then CUDA-event times (ns) of warm-up and repeated products."""
    y = cupy.asnumpy(A_gpu @ x_gpu)
    start, end = cupy.cuda.Event(), cupy.cuda.Event()

    def timed() -> float:
        start.record()
        A_gpu @ x_gpu
        end.record()
        end.synchronize()
        return cupy.cuda.get_elapsed_time(start, end) * 1e6  # ms -> ns

    first = max(timed() for _ in range(max(warmup, 1))) / 1e9
    return y, [timed() for _ in range(repeats_within(first, repeat, max_seconds))]


PRODUCTS = {"scipy": scipy_product, "mkl": mkl_product, "cusparse": cusparse_product}
"""Baseline name -> function(A, x, warmup=, repeat=, max_seconds=) -> BaselineResult."""
