"""A stand-in for cupy and cupyx on the CPU, for the cuSPARSE baseline's code paths, and whether
the real one can run here."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest
import scipy.sparse as sp


class FakeCupy:
    """What cusparse_product uses of cupy and cupyx, on the CPU: every product's kernels take
    0.25 ms of GPU time.

    ``routines``: the names ``cupyx.cusparse.check_availability`` accepts (None: cupyx has no
    ``cusparse`` module, as with an old cupy). ``host_ms``: the host's part of a call, before
    its kernels are queued; the device-to-device copy queued before the start event (1 GiB per
    ms) hides it when it lasts longer. ``copies``: the sizes of those copies."""

    def __init__(self, devices: int = 1, oom: bool = False,
                 routines: set[str] | None = None, host_ms: float = 0.05) -> None:
        self.clock = 0.0
        self.freed = 0
        self.routines = routines
        self.copies: list[int] = []
        copy_ms: list[float] = []  # the copy queued before the next start event
        kernels_at = [0.0]
        fake = self

        class OutOfMemoryError(Exception):
            pass

        class Event:
            """A start event runs when the copy before it ends, and has run when the call
            returns if the copy ended first; the product's kernels start once both the copy
            and the host's part are done; an end event runs when they end."""

            def record(self) -> None:
                if copy_ms:  # a start event
                    ms = copy_ms.pop()
                    self.t = fake.clock + ms
                    self.done = ms <= host_ms
                    kernels_at[0] = fake.clock + max(ms, host_ms)
                else:
                    self.t = fake.clock = kernels_at[0] + 0.25

            def synchronize(self) -> None:
                pass

        class Pointer:
            def copy_from_device_async(self, src: Pointer, size: int) -> None:
                fake.copies.append(size)
                copy_ms.append(size / 2**30)

        def empty(size: int, dtype: object) -> types.SimpleNamespace:
            return types.SimpleNamespace(data=Pointer())

        class Device:
            def __init__(self, index: int) -> None:
                assert index == 0

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                pass

        class Pool:
            def free_all_blocks(self) -> None:
                fake.freed += 1

        def csr_matrix(A):
            if oom:
                raise OutOfMemoryError("out of memory allocating 1 GB")
            return sp.csr_matrix(A)

        def get_device_count() -> int:
            if devices < 0:
                raise RuntimeError("cudaErrorNoDevice: no CUDA-capable device is detected")
            return devices

        self.cupy = types.ModuleType("cupy")
        # scipy >= 1.18 asks sys.modules["cupy"].ndarray whether an input is a cupy array
        self.cupy.ndarray = type("ndarray", (), {})
        self.cupy.cuda = types.SimpleNamespace(
            runtime=types.SimpleNamespace(
                getDeviceCount=get_device_count,
                getDeviceProperties=lambda i: {"name": b"Fake GPU"}),
            Device=Device, Event=Event,
            get_elapsed_time=lambda a, b: b.t - a.t,
            memory=types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError))
        self.cupy.asarray = np.asarray
        self.cupy.empty = empty
        self.cupy.uint8 = np.uint8
        self.cupy.asnumpy = np.asarray
        self.cupy.get_default_memory_pool = Pool
        self.sparse = types.ModuleType("cupyx.scipy.sparse")
        self.sparse.csr_matrix = csr_matrix

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        cupyx, scipy_ = types.ModuleType("cupyx"), types.ModuleType("cupyx.scipy")
        cupyx.scipy, scipy_.sparse = scipy_, self.sparse
        modules = [("cupy", self.cupy), ("cupyx", cupyx), ("cupyx.scipy", scipy_),
                   ("cupyx.scipy.sparse", self.sparse)]
        if self.routines is not None:
            cusparse = types.ModuleType("cupyx.cusparse")
            cusparse.check_availability = lambda name: name in self.routines
            cupyx.cusparse = cusparse
            modules.append(("cupyx.cusparse", cusparse))
        for name, module in modules:
            monkeypatch.setitem(sys.modules, name, module)


def cuda_device_count() -> int:
    """CUDA devices the real cupy sees (0 without cupy or a driver)."""
    try:
        import cupy

        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0
