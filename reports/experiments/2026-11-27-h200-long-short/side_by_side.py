"""The pieces this report's probes share: a matrix's operands in one value type, the error of a
product, the fastest of alternating rounds of several products (clspmv.cover.matrix_ns, as the
bench times kernels) and cuSPARSE's time."""

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyopencl.array as cl_array
import scipy.sparse as sp

import clspmv
from clspmv.bench.baseline_cusparse import cusparse_product
from clspmv.cover import matrix_ns

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "2026-11-27-h200-adaptive-one-kernel"))
from ab import matrix  # noqa: E402  (generated once, kept as .npz)


def device_and_matrices(argv: list[str]) -> tuple[clspmv.Device, Iterator[tuple[str, sp.csr_matrix]]]:
    """The device and (spec, matrix) pairs of a probe's arguments DEVICE CACHE SPEC..."""
    cache = Path(argv[1])
    cache.mkdir(parents=True, exist_ok=True)
    return clspmv.select_device(argv[0]), ((spec, matrix(spec, cache)) for spec in argv[2:])


def operands(dev: clspmv.Device, A: sp.csr_matrix, dtype: str):
    """A in ``dtype``, a host x, the reference A x, and device x and y."""
    Ad = A.astype(dtype)
    xh = np.random.default_rng(1).uniform(-1, 1, A.shape[1]).astype(dtype)
    x = cl_array.to_device(dev.queue, xh)
    y = cl_array.zeros(dev.queue, A.shape[0], dtype)
    return Ad, xh, Ad @ xh, x, y


def error(M: clspmv.DeviceMatrix, xh: np.ndarray, ref: np.ndarray) -> float:
    """Largest error of M @ xh over the largest entry of the reference."""
    return float(np.max(np.abs(M @ xh - ref))) / max(float(np.max(np.abs(ref))), 1e-300)


def fastest_ms(runs: dict[str, tuple[clspmv.DeviceMatrix, Callable[[], None] | None]], x, y,
               rounds: int = 30) -> dict[str, float]:
    """Fastest kernel ms of each labelled product (its matrix, and what to set before it), the
    products taken in turn, ``rounds`` times."""
    best = dict.fromkeys(runs, np.inf)
    for _ in range(rounds):
        for label, (M, before) in runs.items():
            if before is not None:
                before()
            M.matvec(x, y)
            ns, _ = matrix_ns(M, lambda M=M: M.matvec(x, y))
            best[label] = min(best[label], ns / 1e6)
    return best


def cusparse_ms(Ad: sp.csr_matrix, xh: np.ndarray) -> float | None:
    """cuSPARSE's fastest ms for Ad @ xh, None without cupy."""
    cus = cusparse_product(Ad, xh)
    return round(cus.timing.min_ms, 4) if cus.timing else None
