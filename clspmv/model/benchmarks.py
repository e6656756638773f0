"""The calibration's benchmark matrices (:func:`benchmark_matrices`), generated from the device's
facts (:mod:`.calibrate` times every format on them).

The large ones hold about :data:`CACHE_MULTIPLE` times the device's cache in CSR bytes (so they
stream from memory), bounded by :data:`MAX_ENTRIES` for the time budget; their rows are a
multiple of the SIMD width times the compute units. They vary what the models' terms measure:
row-length distribution (constant, power law, a few very long rows, 60 % empty rows), column
locality (banded vs uniformly random columns), rows of 16 and 32 slots beyond the cache (what
the padded column-major layouts pay per slot of a row), size (one row per lane for the launch
overhead, a tiny one, a small one and medium ones in the cache, and a few thousand rows of
48-600 entries: too few rows to fill a GPU, what the small real matrices look like) and, where
the x cache was probed, random columns over a float64 x of the probe's
:attr:`~clspmv.model.probes.XCacheProbe.far_x_bytes` (the model's far gathers).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import scipy.sparse as sp

from ..device import Device

CACHE_MULTIPLE = 3
LANE_ENTRIES = 2048
"""Entries per lane (SIMD width x compute units) of the large benchmark matrices at least: the
cache a driver reports can be far below the real one (NVIDIA's OpenCL reports 4 MiB of global
memory cache on the H200, whose L2 holds 60 MB), and matrices sized from it alone were
measured in the cache; 2048 per lane are 8.6 M entries (about 100 MB in CSR) on the H200."""
MIN_ENTRIES = 200_000
MAX_ENTRIES = {"gpu": 10_000_000, "cpu": 8_000_000}
"""Entries of the large benchmark matrices at most (host conversion time bounds the budget:
60 s on the H200, 3 minutes on a 2-core CPU; 8 M entries, 96 MB in CSR, reach about 3 times
the 32 MiB cache of a 2-core CPU: 4 M ran largely in its cache)."""
FEW_ROWS = 4096
"""Rows of the ``few-*`` benchmark matrices at least (a unit of SIMD width x compute units where
more): far from filling a GPU (the H200 holds about 270 k work-items at once), so the time of
a kernel walking one row per work-item is its longest chain of dependent loads."""

def _from_lengths(lengths: np.ndarray, cols: int, spread: int | None, rng: np.random.Generator
                  ) -> sp.csr_matrix:
    """Rows of the given lengths; columns near the diagonal within ``spread`` (sorted, distinct
    positions of a window), or uniformly random when ``spread`` is None. Built as CSR directly
    (per-row terms repeated over the entries), then duplicates summed: the columns clipped at the
    matrix's edges, or drawn twice at random, count twice."""
    m = lengths.size
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    if spread is None:
        idx = rng.integers(0, cols, indptr[-1])
    else:
        width = np.maximum(lengths, spread)
        step = width // np.maximum(lengths, 1)
        first = np.arange(m, dtype=np.int64) * cols // max(m, 1) - width // 2
        idx = np.repeat(first - indptr[:-1] * step, lengths)  # first + (e - indptr) * step
        idx += np.arange(indptr[-1], dtype=np.int64) * np.repeat(step, lengths)
        np.clip(idx, 0, cols - 1, out=idx)
    return _csr(np.ones(idx.size), idx, indptr, (m, cols))


def _csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int]
         ) -> sp.csr_matrix:
    """CSR of 32-bit indices from arrays in row order, indices sorted and duplicates summed."""
    A = sp.csr_matrix((data, indices.astype(np.int32), indptr.astype(np.int32)), shape=shape)
    A.sum_duplicates()
    return A


def _from_offsets(m: int, offsets: np.ndarray) -> sp.csr_matrix:
    """Row r holds columns r + offsets inside [0, m) (a stencil or block pattern)."""
    cols = (np.arange(m, dtype=np.int64)[:, None] + offsets[None, :]).ravel()
    keep = (cols >= 0) & (cols < m)
    indptr = np.zeros(m + 1, np.int64)
    np.cumsum(keep.reshape(m, offsets.size).sum(axis=1), out=indptr[1:])
    return _csr(np.ones(int(indptr[-1])), cols[keep], indptr, (m, m))


def _blocks(blocks: int, size: int) -> sp.csr_matrix:
    """``blocks`` dense blocks of ``size`` x ``size`` ones on the diagonal."""
    m = blocks * size
    cols = np.repeat(np.arange(m, dtype=np.int64) // size * size, size)
    cols += np.tile(np.arange(size, dtype=np.int64), m)
    return _csr(np.ones(m * size), cols, np.arange(0, m * size + 1, size), (m, m))


def benchmark_matrices(device: Device | SimpleNamespace) -> dict[str, sp.csr_matrix]:
    """The calibration's matrices for ``device`` (deterministic: fixed seeds; only its facts
    ``type``, ``simd_width``, ``compute_units``, ``cache_bytes`` and, where present, the probe's
    ``far_x_bytes`` are read)."""
    rng = np.random.default_rng(10)
    kind = device.type if device.type in MAX_ENTRIES else "cpu"
    unit = device.simd_width * device.compute_units
    entries = int(np.clip(max(CACHE_MULTIPLE * device.cache_bytes / 12, LANE_ENTRIES * unit),
                          MIN_ENTRIES, MAX_ENTRIES[kind]))
    m = max(unit, entries // 8 // unit * unit)
    powerlaw = np.minimum(rng.zipf(2.0, m) * 3, 512).astype(np.int64)
    long = np.full(m, 4, np.int64)
    long[rng.choice(m, 8, replace=False)] = max(entries // 40, 64)
    empty = np.where(rng.random(m) < 0.6, 0, 16).astype(np.int64)
    small = max(unit, 4096 // unit * unit)
    few = max(unit, FEW_ROWS)
    side = max(4, round((m // 3) ** (1 / 3)))
    mside = max(4, round((m // 24) ** (1 / 3)))
    band_long = np.full(m // 2, 7, np.int64)
    band_long[rng.choice(m // 2, 8, replace=False)] = max(entries // 32, 64)
    mats = {
        "launch": _from_lengths(np.full(unit, 4, np.int64), unit, 8, rng),
        "tiny": _from_lengths(np.full(small, 4, np.int64), small, 8, rng),
        "medium-banded": _from_lengths(np.full(m // 8, 8, np.int64), m // 8, 16, rng),
        "medium-random": _from_lengths(np.full(m // 8, 8, np.int64), m // 8, None, rng),
        "medium-wide": _from_lengths(np.full(m // 16, 32, np.int64), m // 8, 1000, rng),
        "medium-powerlaw": _from_lengths(powerlaw[: m // 8], m // 8, 64, rng),
        "banded": _from_lengths(np.full(m, 8, np.int64), m, 16, rng),
        "random": _from_lengths(np.full(m, 8, np.int64), m, None, rng),
        "powerlaw": _from_lengths(powerlaw, m, 64, rng),
        "long-rows": _from_lengths(long, m, 256, rng),
        "empty-rows": _from_lengths(empty, m, 32, rng),
        "wide": _from_lengths(np.full(m // 5, 40, np.int64), m, 2000, rng),
        "short-rows": _from_lengths(np.full(2 * m, 3, np.int64), 2 * m, 4, rng),
        "random-long": _from_lengths(np.full(m // 3, 24, np.int64), m, None, rng),
        "powerlaw-random": _from_lengths(powerlaw // 2 + 1, m, None, rng),
        "stencil": _from_offsets(m // 3, np.array([(i * side + j) * side + k for i in (-1, 0, 1)
                                                   for j in (-1, 0, 1) for k in (-1, 0, 1)])),
        "blocks": _blocks(m // 5, 5),
        # padded layouts beyond the cache with wide rows (half the entries of the large ones)
        "wide-16": _from_lengths(np.full(m // 4, 16, np.int64), m // 4, 48, rng),
        "wide-32": _from_lengths(np.full(m // 8, 32, np.int64), m // 8, 96, rng),
        "band-long": _from_lengths(band_long, m // 2, 16, rng),
        "medium-stencil": _from_offsets(m // 24, np.array([(i * mside + j) * mside + k
                                                            for i in (-1, 0, 1)
                                                            for j in (-1, 0, 1)
                                                            for k in (-1, 0, 1)])),
        "small-banded": _from_lengths(np.full(m // 64, 8, np.int64), m // 64, 16, rng),
        # few rows, long chains per row (in the cache): what a row-per-work-item kernel pays
        # in latency when the rows do not fill the device
        "few-long": _from_lengths(np.full(few, 48, np.int64), few, 96, rng),
        "few-longer": _from_lengths(np.full(few // 4, 192, np.int64), few, 384, rng),
        "few-uneven": _from_lengths(np.minimum(rng.zipf(1.8, few) * 2, 600).astype(np.int64),
                                    few, 64, rng),
    }
    far_x = int(getattr(device, "far_x_bytes", 0) or 0)
    if far_x:  # a generator of its own: the matrices above stay those of earlier versions
        cols = max(m, far_x // 8)
        mats["random-far"] = _from_lengths(np.full(m // 2, 8, np.int64), cols, None,
                                           np.random.default_rng(12))
    return mats


def large_matrices(simd_width: int, compute_units: int, rows: int) -> dict[str, sp.csr_matrix]:
    """The quick calibration's large probe matrices (:mod:`clspmv.model.quick`, fixed seeds):
    about ``rows`` rows (a multiple of the lanes) of power-law lengths and of 8 entries, both on
    uniformly random columns: the irregular rows of a few million entries whose products the
    probes in the cache misjudge; and a band of 8 diagonals (the small probes' ``banded`` at
    this size), for the formats of diagonals."""
    rng = np.random.default_rng(17)
    unit = simd_width * compute_units
    m = max(unit, rows // unit * unit)
    powerlaw = np.minimum(rng.zipf(2.0, m) * 3, 512).astype(np.int64)
    return {
        "large-powerlaw": _from_lengths(powerlaw // 2 + 1, m, None, rng),
        "large-random": _from_lengths(np.full(m, 8, np.int64), m, None, rng),
        "large-banded": _from_lengths(np.full(m, 8, np.int64), m, 16, rng),
    }


def small_matrices(simd_width: int, compute_units: int, rows: int) -> dict[str, sp.csr_matrix]:
    """Small matrices (fixed seeds) of the quick calibration's probes
    (:mod:`clspmv.model.quick`) and the full calibration's reference product: one row of 4
    entries per lane (SIMD width x compute units), and about ``rows`` rows (a multiple of the
    lanes) of a band of 8, of 8 random columns and of power-law lengths."""
    rng = np.random.default_rng(13)
    unit = simd_width * compute_units
    m = max(unit, rows // unit * unit)
    powerlaw = np.minimum(rng.zipf(2.0, m) * 3, 512).astype(np.int64)
    return {
        "launch": _from_lengths(np.full(unit, 4, np.int64), unit, 8, rng),
        "banded": _from_lengths(np.full(m, 8, np.int64), m, 16, rng),
        "random": _from_lengths(np.full(m, 8, np.int64), m, None, rng),
        "powerlaw": _from_lengths(powerlaw // 2 + 1, m, 64, rng),
    }


def block_probe_matrix(nodes_per_side: int, size: int) -> sp.csr_matrix:
    """Dense ``size`` x ``size`` blocks of ones on the 7-point stencil of a cubic grid of
    ``nodes_per_side`` nodes a side (the block matrices of finite elements with ``size``
    unknowns per node): the quick calibration's probe of the block formats
    (:func:`clspmv.model.quick.block_probe_matrices`)."""
    k = nodes_per_side
    nodes = k ** 3
    offsets = np.array([0, -1, 1, -k, k, -k * k, k * k], np.int64)
    node = np.arange(nodes, dtype=np.int64)
    coords = np.stack([node % k, node // k % k, node // (k * k)], axis=1)
    neighbours = node[:, None] + offsets[None, :]
    inside = np.ones(neighbours.shape, bool)
    for axis, step in ((0, 1), (1, k), (2, k * k)):  # the neighbours off the grid's faces
        inside[:, offsets == -step] &= coords[:, axis:axis + 1] > 0
        inside[:, offsets == step] &= coords[:, axis:axis + 1] < k - 1
    rows = np.repeat(node, inside.sum(axis=1))
    pattern = sp.csr_matrix((np.ones(rows.size), (rows, neighbours[inside])), shape=(nodes, nodes))
    return sp.kron(pattern, np.ones((size, size)), format="csr")
