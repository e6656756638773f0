"""Intel OpenMP's blocktime around MKL's calls: after a parallel region MKL's threads spin for
the blocktime (200 ms by default, ``KMP_BLOCKTIME``) before they sleep, on the cores whatever runs
next needs. PoCL's threads do not spin, so a CPU device's product timed within 200 ms of an MKL
call pays for it: 2-7x on a 16-core Xeon under PoCL 5.0
(``reports/experiments/2026-11-28-node-cpu-pocl50``)."""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Iterator

DEFAULT_BLOCKTIME_MS = 200
"""Intel OpenMP's default blocktime."""


def _libiomp() -> ctypes.CDLL | None:
    """The Intel OpenMP runtime loaded in this process (found by threadpoolctl), or None where
    there is none (MKL on another threading layer, or not loaded) or threadpoolctl is absent."""
    try:
        import threadpoolctl
    except ImportError:
        return None
    path = next((i["filepath"] for i in threadpoolctl.threadpool_info()
                 if i.get("prefix") == "libiomp"), None)
    return ctypes.CDLL(path) if path else None


@contextlib.contextmanager
def blocktime(ms: int) -> Iterator[None]:
    """Intel OpenMP's blocktime set to ``ms`` for the MKL calls made inside (``kmp_set_blocktime``:
    the calling thread's teams), set back after; nothing where Intel OpenMP is not loaded."""
    omp = _libiomp()
    if omp is None:
        yield
        return
    before = omp.kmp_get_blocktime()
    omp.kmp_set_blocktime(ms)
    try:
        yield
    finally:
        omp.kmp_set_blocktime(before)


def settle(call: Callable[[], object]) -> None:
    """One more, untimed ``call`` (an MKL product) with blocktime 0: its threads then sleep as
    soon as it ends instead of spinning into what is timed next."""
    with blocktime(0):
        call()
