"""The ``meta`` block of results.json: devices, host, versions, git commit, command, settings,
and the definitions the report reads (methodology, formulas, baselines, mixed precision,
defaults), so that a report is a function of its results.json alone."""

from __future__ import annotations

import os
import platform
import socket
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__
from ..device import Device
from ..matrix import FORMATS
from ..precision import Precision
from . import methodology
from .baselines import host_cpu, mkl_threads_set
from .plan import Plan
from .records import device_label
from .registry import BASELINES


def _git(folder: Path, *args: str) -> str | None:
    """``git -C folder args`` 's output, None when git fails or is missing."""
    try:
        done = subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True,
                              timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _checkout(folder: Path) -> Path | None:
    """The top of the git checkout of clspmv's sources holding ``folder`` (None: none)."""
    top = _git(folder, "rev-parse", "--show-toplevel")
    if top is None or not (Path(top) / "clspmv" / "__init__.py").is_file():
        return None
    return Path(top)


def git_info(cwd: Path | None = None) -> dict[str, Any] | None:
    """The commit of the checkout clspmv runs from and whether clspmv/ or kernels_cl/ have
    local changes. When clspmv runs from an installed package (not from a checkout) but the
    current folder (``cwd``) is a checkout of clspmv, its commit, with ``installed: True``
    (the package may differ from it). None: neither, or no git."""
    package = Path(__file__).resolve().parents[1]
    root = _checkout(package.parent)
    installed = root is None or root != package.parent
    if installed:
        root = _checkout(Path.cwd() if cwd is None else cwd)
    if root is None:
        return None
    commit = _git(root, "rev-parse", "HEAD")
    if commit is None:
        return None
    dirty = _git(root, "status", "--porcelain", "--", "clspmv", "kernels_cl")
    out: dict[str, Any] = {"commit": commit, "modified": bool(dirty)}
    if installed:
        out.update(installed=True, checkout=str(root))
    return out


def versions() -> dict[str, str]:
    """Versions of clspmv, Python, the libraries loaded and each baseline's library."""
    import pyopencl
    import scipy

    out = {"clspmv": __version__, "python": platform.python_version(), "numpy": np.__version__,
           "scipy": scipy.__version__, "pyopencl": pyopencl.VERSION_TEXT}
    for module in ("tqdm", "tabulate", "matplotlib"):
        mod = sys.modules.get(module)
        if mod is not None:
            out[module] = str(getattr(mod, "__version__", "?"))
    for baseline in BASELINES.values():
        out.update(baseline.versions())
    return out


THREAD_POOL_FIELDS = ("user_api", "internal_api", "prefix", "version", "num_threads",
                      "threading_layer", "filepath")
"""What :func:`thread_pools` keeps of each of threadpoolctl's pools, where the value is JSON text,
a number, true/false or null (a pool's controller may hold something else there: scipy's for
fast_matrix_market gives its version getter, a function, as ``version``)."""


def thread_pools(mkl_threads: int | None = None, *, load_mkl: bool = False
                 ) -> list[dict[str, Any]] | str:
    """The native thread pools loaded in this process (MKL, OpenBLAS, OpenMP) and their thread
    counts, as threadpoolctl finds them; or why there are none (threadpoolctl not installed).
    With ``load_mkl``, MKL is loaded first and set to ``mkl_threads`` as the MKL baselines set
    it, so that its pool is the one they run on (nothing when MKL cannot be loaded: the
    baselines say why)."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return "threadpoolctl is not installed (pip install threadpoolctl): thread counts unknown"
    if load_mkl:
        try:
            mkl_threads_set(mkl_threads)
        except ImportError:
            pass
    return [{k: pool[k] for k in THREAD_POOL_FIELDS
             if k in pool and isinstance(pool[k], (str, int, float, bool, type(None)))}
            for pool in threadpool_info()]


def device_meta(device: Device) -> dict[str, Any]:
    """The facts of a device that results.json keeps."""
    return {
        "label": device_label(device), "name": device.name, "platform": device.platform,
        "type": device.type, "driver_version": device.driver_version,
        "opencl_version": device.cl_device.version.strip(),
        "compute_units": device.compute_units, "global_memory": device.global_memory,
        "max_allocation": device.max_allocation, "cache_bytes": device.cache_bytes,
        "simd_width": device.simd_width, "fp64": device.fp64,
    }


def run_meta(plan: Plan, command: str) -> dict[str, Any]:
    """The ``meta`` block of results.json for ``plan`` run as ``command``."""
    ops = plan.active
    settings: dict[str, Any] = {
        "suite": plan.suite, "matrices": [s.name for s in plan.sources],
        "formats": plan.formats, "dtypes": [Precision.of(d).name for d in plan.dtypes],
        "baselines": plan.baselines, "repeat": plan.repeat, "warmup": plan.warmup,
        "mkl_threads": plan.mkl_threads, "max_seconds": plan.max_seconds, "seed": plan.seed,
        "beta": 0.0, "alpha": 1.0,
    }
    if ops:
        settings["operations"] = [op.name for op in ops]
        for op in ops:
            settings.update(op.settings(plan))
    # first: MKL is loaded for its pool, and then its version is among the versions
    pools = thread_pools(plan.mkl_threads, load_mkl=any(BASELINES[name].threaded
                                                        for name in plan.baselines))
    return {
        "tool": "clspmv bench",
        "command": command,
        "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "finished": None,
        "interrupted": False,
        "host": {"name": socket.gethostname(), "cpu": host_cpu(),
                 "cores": os.cpu_count(), "os": platform.platform()},
        "thread_pools": pools,
        "versions": versions(),
        "git": git_info(),
        "devices": [device_meta(d) for d in plan.devices],
        "settings": settings,
        "method": list(methodology.METHOD),
        "formulas": {**methodology.FORMULAS,
                     **{f"{op.name}: {name}": text for op in ops
                        for name, text in {**op.fields, **op.formulas}.items()}},
        "definitions": {"baselines": {name: b.description for name, b in BASELINES.items()},
                        "formats": list(FORMATS), "mixed": dict(methodology.MIXED)},
        "not_run": [],
    }
