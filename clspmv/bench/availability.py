"""Whether each baseline can run here, without running it: what ``clspmv doctor`` reports
(:attr:`clspmv.bench.baseline.Baseline.availability`). Each check returns an
:class:`Availability`: fine or not, what was found, and the one-line fix when it is not."""

from __future__ import annotations

import glob
import importlib.util
import os
import site
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Availability:
    """Whether a baseline can run, what was found (versions, library paths), and the fix."""

    ok: bool
    detail: str
    fix: str = ""


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


def scipy() -> Availability:
    """scipy is a dependency: its version, and its serial CSR product."""
    import scipy as sp

    return Availability(True, f"scipy {sp.__version__} (serial sparsetools CSR product)")


def mkl() -> Availability:
    """sparse_dot_mkl importable and ``libmkl_rt`` found (its path)."""
    path = find_mkl_rt()
    if importlib.util.find_spec("sparse_dot_mkl") is None:
        return Availability(False, "sparse_dot_mkl is not installed"
                            + (f" (libmkl_rt: {path})" if path else ""),
                            'pip install "clspmv[mkl]" (sparse_dot_mkl and the mkl package)')
    if path is None:
        return Availability(False, "sparse_dot_mkl is installed but no libmkl_rt was found in "
                            "this environment", "pip install mkl, or set MKL_RT to the path of "
                            "libmkl_rt")
    try:
        module = load_sparse_dot_mkl()
        version = module.mkl_get_version_string()
    except Exception as err:  # a library that fails to load: say which
        return Availability(False, f"sparse_dot_mkl does not load libmkl_rt ({path}): "
                            f"{str(err).splitlines()[0] if str(err) else type(err).__name__}",
                            "pip install --force-reinstall mkl, or set MKL_RT to a working "
                            "libmkl_rt")
    return Availability(True, f"{version}; libmkl_rt: {path}")


def cusparse() -> Availability:
    """cupy importable and a CUDA device present."""
    if importlib.util.find_spec("cupy") is None:
        return Availability(False, "cupy is not installed (cuSPARSE is reached through it)",
                            "on a machine with an NVIDIA GPU: pip install cupy-cuda12x "
                            "(the wheel matching its CUDA)")
    try:
        import cupy

        count = cupy.cuda.runtime.getDeviceCount()
        runtime = cupy.cuda.runtime.runtimeGetVersion()
    except Exception as err:  # no driver, no device
        return Availability(False, f"cupy {getattr(cupy, '__version__', '?')} finds no CUDA "
                            f"device ({str(err).splitlines()[0] if str(err) else err!r})",
                            "install the NVIDIA driver, or uninstall cupy on a machine "
                            "without an NVIDIA GPU")
    if count < 1:
        return Availability(False, "cupy finds no CUDA device", "install the NVIDIA driver")
    return Availability(True, f"cupy {cupy.__version__}, CUDA runtime {runtime}, {count} "
                        "device(s)")
